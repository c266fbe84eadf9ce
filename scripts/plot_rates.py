#!/usr/bin/env python3
"""Turn a DCQCN rate trace into an SVG picture: the current rate Rc of each QP (flow) over time,
its target rate Rt dashed with --rt, and alpha in a second panel. With a bottleneck rate (from
--bottleneck or a `# bottleneck_gbps=N` comment in the trace) the picture also draws that rate
and the fair share, the bottleneck divided by the flows sending at each moment: the figure of the
DCQCN paper, flows joining and settling at their share. The time axis ends with the data. QPs
beyond ten colours repeat them dashed. Standard library only.

Input (docs/dcqcn.md "Rate trace CSV"): lines `t_us,qp,rc_gbps,rt_gbps,alpha`, an optional
header line with those names, blank lines and `#` comments ignored (but `# key=value` ones are
read: bottleneck_gbps, ymax_gbps, title, and label, the word before each series' number). The output of dcqcn-trace (`t_us,event,rc_gbps,rt_gbps,alpha`) is
accepted too and drawn as one QP.

  plot_rates.py trace.csv rates.svg
  plot_rates.py --rt --bottleneck 2 trace.csv rates.svg
  dcqcn-trace < events.txt | plot_rates.py --rt - rates.svg
"""

import argparse
import math
import sys
from xml.sax.saxutils import escape

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]
DASHES = ["", "6,3", "2,2", "8,3,2,3"]
LEGEND_ROWS = 24


class TraceError(Exception):
    pass


def read_trace(lines, meta=None, label_word="flow"):
    """Returns {qp_label: [(t_us, rc, rt, alpha), ...]} in input order; `# key=value` comments
    go into `meta` when given."""
    series = {}
    single = None  # True once we know the input is dcqcn-trace output
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("#") and "=" in line and meta is not None:
            key, _, value = line[1:].partition("=")
            meta[key.strip()] = value.strip()
            if key.strip() == "label":
                label_word = value.strip()
            continue
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 5:
            raise TraceError("line {}: expected 5 comma-separated fields, got {}".format(number, len(fields)))
        try:
            t = float(fields[0])
        except ValueError:
            if fields[0] == "t_us":  # header
                single = fields[1] == "event"
                continue
            raise TraceError("line {}: time {!r} is not a number".format(number, fields[0]))
        if single is None:
            single = not fields[1].isdigit()
        try:
            values = tuple(float(f) for f in fields[2:])
        except ValueError:
            raise TraceError("line {}: rc_gbps, rt_gbps and alpha must be numbers".format(number))
        if not all(math.isfinite(v) for v in (t,) + values):
            raise TraceError("line {}: non-finite number".format(number))
        label = "QP" if single else "{} {}".format(label_word, fields[1])
        series.setdefault(label, []).append((t,) + values)
    if not series:
        raise TraceError("no data lines")
    return series


def nice_ticks(lo, hi, count=6):
    """Tick positions at 1, 2 or 5 times a power of ten covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) if lo else 1.0)
    raw = (hi - lo) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks = [round(first, 12)]
    while ticks[-1] < hi - step * 1e-9:
        ticks.append(round(first + len(ticks) * step, 12))
    return ticks, step


def tick_label(v, step):
    digits = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    return "{:.{}f}".format(v, digits)


def step_points(samples, index):
    """A rate holds its value until the next sample: draw steps."""
    pts = []
    for i, s in enumerate(samples):
        if i > 0:
            pts.append((s[0], samples[i - 1][index]))
        pts.append((s[0], s[index]))
    return pts


def thin(points, to_x, max_points=6000):
    """Keeps first/min/max/last per pixel column when a series has more points than pixels."""
    if len(points) <= max_points:
        return points
    out = []
    column = None
    bucket = []

    def flush():
        if not bucket:
            return
        lo = min(bucket, key=lambda p: p[1])
        hi = max(bucket, key=lambda p: p[1])
        keep = [bucket[0]] + sorted({lo, hi}, key=bucket.index) + [bucket[-1]]
        for p in keep:
            if not out or out[-1] != p:
                out.append(p)

    for p in points:
        c = int(to_x(p[0]))
        if c != column:
            flush()
            bucket = []
            column = c
        bucket.append(p)
    flush()
    return out


class Panel:
    def __init__(self, x, y, w, h, t_range, v_range):
        self.x, self.y, self.w, self.h = x, y, w, h
        self.t0, self.t1 = t_range
        self.v0, self.v1 = v_range

    def px(self, t):
        return self.x + (t - self.t0) / (self.t1 - self.t0) * self.w

    def py(self, v):
        return self.y + self.h - (v - self.v0) / (self.v1 - self.v0) * self.h


def axes(out, panel, x_ticks, x_step, x_scale, y_ticks, y_step, y_label, x_label):
    out.append('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#333"/>'.format(
        panel.x, panel.y, panel.w, panel.h))
    for v in y_ticks:
        y = panel.py(v)
        out.append('<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#ddd"/>'.format(
            panel.x, y, panel.x + panel.w, y))
        out.append('<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#333"/>'.format(
            panel.x - 5, y, panel.x, y))
        out.append('<text x="{:.1f}" y="{:.1f}" text-anchor="end" dominant-baseline="middle">{}</text>'.format(
            panel.x - 8, y, tick_label(v, y_step)))
    for t in x_ticks:
        x = panel.px(t)
        out.append('<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#333"/>'.format(
            x, panel.y + panel.h, x, panel.y + panel.h + 5))
        if x_label:
            out.append('<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>'.format(
                x, panel.y + panel.h + 20, tick_label(t / x_scale, x_step / x_scale)))
    cy = panel.y + panel.h / 2
    out.append('<text x="{:.1f}" y="{:.1f}" text-anchor="middle" transform="rotate(-90 {:.1f} {:.1f})">{}</text>'
               .format(panel.x - 55, cy, panel.x - 55, cy, escape(y_label)))
    if x_label:
        out.append('<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>'.format(
            panel.x + panel.w / 2, panel.y + panel.h + 42, escape(x_label)))


def polyline(out, panel, points, colour, dash, width, opacity=1.0):
    pts = " ".join("{:.2f},{:.2f}".format(panel.px(t), panel.py(v)) for t, v in points)
    dash_attr = ' stroke-dasharray="{}"'.format(dash) if dash else ""
    opacity_attr = ' stroke-opacity="{}"'.format(opacity) if opacity < 1 else ""
    out.append('<polyline fill="none" stroke="{}" stroke-width="{}"{}{} points="{}"/>'.format(
        colour, width, dash_attr, opacity_attr, pts))


def fair_share_steps(series, bottleneck):
    """The bottleneck divided by the flows that have started, over time: [(t, share), ...]."""
    starts = sorted(samples[0][0] for samples in series.values())
    t_end = max(s[0] for samples in series.values() for s in samples)
    pts = []
    for k, t in enumerate(starts):
        share = bottleneck / (k + 1)
        if pts:
            pts.append((t, pts[-1][1]))
        pts.append((t, share))
    pts.append((t_end, pts[-1][1]))
    return pts


def render(series, title, show_rt, width, height, bottleneck=None, ymax=None):
    t_min = min(s[0] for samples in series.values() for s in samples)
    t_max = max(s[0] for samples in series.values() for s in samples)
    if t_max <= t_min:
        t_max = t_min + 1
    rate_max = max(max(s[1], s[2] if show_rt else 0) for samples in series.values() for s in samples)
    if bottleneck:
        rate_max = max(rate_max, bottleneck)
    clipped_above = None
    if ymax and ymax < rate_max:
        clipped_above, rate_max = rate_max, ymax
    x_scale, x_unit = (1000.0, "ms") if t_max - t_min >= 10000 else (1.0, "\u00b5s")
    # The axis ends with the data: ticks only inside [t_min, t_max].
    x_ticks, x_step = nice_ticks(t_min, t_max)
    x_ticks = [t for t in x_ticks if t_min - x_step * 1e-9 <= t <= t_max + x_step * 1e-9]
    r_ticks, r_step = nice_ticks(0, rate_max if rate_max > 0 else 1)
    a_ticks, a_step = nice_ticks(0, 1, 3)

    left, right, top = 80, 190, 50
    plot_w = width - left - right
    rate_h = (height - top - 70) * 0.68
    alpha_h = (height - top - 70) * 0.22
    gap = (height - top - 70) * 0.10
    t_range = (t_min, t_max)
    rates = Panel(left, top, plot_w, rate_h, t_range, (r_ticks[0], r_ticks[-1]))
    alphas = Panel(left, top + rate_h + gap, plot_w, alpha_h, t_range, (a_ticks[0], a_ticks[-1]))

    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" '
           'font-family="sans-serif" font-size="12">'.format(width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="{:.1f}" y="28" text-anchor="middle" font-size="16">{}</text>'.format(
               left + plot_w / 2, escape(title))]
    axes(out, rates, x_ticks, x_step, x_scale, r_ticks, r_step, "rate (Gb/s)", None)
    axes(out, alphas, x_ticks, x_step, x_scale, a_ticks, a_step, "alpha", "time ({})".format(x_unit))

    rate_lines, alpha_lines, legend_lines = [], [], []
    legend_x = left + plot_w + 20

    def legend(colour, dash, width_px, text, opacity=1.0):
        y = top + 10 + 18 * (len(legend_lines) // 2)
        attrs = ' stroke-dasharray="{}"'.format(dash) if dash else ""
        attrs += ' stroke-opacity="{}"'.format(opacity) if opacity < 1 else ""
        legend_lines.append('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"{}/>'.format(
            legend_x, y, legend_x + 24, y, colour, width_px, attrs))
        legend_lines.append('<text x="{}" y="{}" dominant-baseline="middle">{}</text>'.format(
            legend_x + 30, y, escape(text)))

    if bottleneck:
        y = rates.py(bottleneck)
        rate_lines.append('<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#222" stroke-width="1.5" '
                          'stroke-dasharray="8,4"/>'.format(rates.x, y, rates.x + rates.w, y))
        polyline(rate_lines, rates, fair_share_steps(series, bottleneck), "#222", "2,3", 1.5)
        legend("#222", "8,4", 1.5, "bottleneck {:g} Gb/s".format(bottleneck))
        legend("#222", "2,3", 1.5, "fair share")
    for i, (label, samples) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        dash = DASHES[(i // len(PALETTE)) % len(DASHES)]
        polyline(rate_lines, rates, thin(step_points(samples, 1), rates.px), colour, dash, 1.6)
        if show_rt:
            polyline(rate_lines, rates, thin(step_points(samples, 2), rates.px), colour, "5,3", 1, 0.7)
        polyline(alpha_lines, alphas, thin(step_points(samples, 3), alphas.px), colour, dash, 1.2)
        if i < LEGEND_ROWS:
            legend(colour, dash, 2, label + ": Rc")
    if show_rt:
        legend("#555", "5,3", 1, "Rt (target), dashed", 0.7)
    # Rates above the scale (--ymax) are cut at its top.
    out.append('<clipPath id="rates"><rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/></clipPath>'.format(
        rates.x, rates.y, rates.w, rates.h))
    out.append('<g clip-path="url(#rates)">')
    out.extend(rate_lines)
    out.append("</g>")
    out.extend(alpha_lines)
    out.extend(legend_lines)
    notes = []
    if len(series) > LEGEND_ROWS:
        notes.append("and {} more".format(len(series) - LEGEND_ROWS))
    if clipped_above:
        notes.append("cut at {:g} Gb/s (peak {:g})".format(rate_max, clipped_above))
    notes += ["Rc: current rate", "Rt: target rate", "alpha: congestion estimate"]
    rows = len(legend_lines) // 2
    for k, note in enumerate(notes):
        out.append('<text x="{}" y="{}" fill="#555">{}</text>'.format(legend_x, top + 10 + 18 * (rows + k) + 8, escape(note)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def gbps_option(given, meta, key, option):
    """A rate in Gb/s from the command line, else from the trace's `# key=value`; None if neither."""
    value = given
    if value is None and key in meta:
        try:
            value = float(meta[key])
        except ValueError:
            raise ValueError("{}={!r} is not a number".format(key, meta[key]))
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise ValueError("{} must be a positive number of Gb/s".format(option))
    return value


def main(argv):
    parser = argparse.ArgumentParser(description="Plot a DCQCN rate trace CSV (t_us,qp,rc_gbps,rt_gbps,alpha) as SVG.")
    parser.add_argument("input", help="trace CSV, or - for standard input")
    parser.add_argument("output", help="SVG file to write, or - for standard output")
    parser.add_argument("--title", help="picture title (default: the trace's `# title=` comment, else 'DCQCN rates')")
    parser.add_argument("--rt", action="store_true", help="also draw the target rate Rt (dashed)")
    parser.add_argument("--ymax", type=float, help="top of the rate scale in Gb/s; rates above it are cut "
                        "(default: the trace's `# ymax_gbps=N` comment, else the highest rate)")
    parser.add_argument("--bottleneck", type=float, help="bottleneck rate in Gb/s: drawn with the fair share "
                        "(default: the trace's `# bottleneck_gbps=N` comment, if any)")
    parser.add_argument("--width", type=int, default=960)
    parser.add_argument("--height", type=int, default=600)
    args = parser.parse_args(argv)
    meta = {}
    try:
        if args.input == "-":
            series = read_trace(sys.stdin, meta)
        else:
            with open(args.input, encoding="utf-8") as f:
                series = read_trace(f, meta)
    except (OSError, TraceError) as e:
        sys.stderr.write("plot_rates: {}: {}\n".format(args.input, e))
        return 1
    try:
        bottleneck = gbps_option(args.bottleneck, meta, "bottleneck_gbps", "--bottleneck")
        ymax = gbps_option(args.ymax, meta, "ymax_gbps", "--ymax")
    except ValueError as e:
        sys.stderr.write("plot_rates: {}: {}\n".format(args.input, e))
        return 1
    title = args.title or meta.get("title", "DCQCN rates")
    svg = render(series, title, args.rt, args.width, args.height, bottleneck, ymax)
    if args.output == "-":
        sys.stdout.write(svg)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
