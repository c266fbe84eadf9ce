#!/usr/bin/env python3
"""Checks scripts/plot_rates.py: a valid SVG (parsed with xml.etree) with axes, ticks, one
line per QP and a legend; the bottleneck and fair-share lines, a time axis that ends with the
data and a rate scale cut at --ymax; dcqcn-trace output accepted; bad input refused. Usage:
plot_rates_test.py <plot_rates.py> <sample_rates.csv>"""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def run(script, args, stdin=None):
    return subprocess.run([sys.executable, script] + args, input=stdin, capture_output=True, text=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def texts(root):
    return [t.text or "" for t in root.iter(SVG + "text")]


def main():
    script, sample = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rates.svg")
        r = run(script, ["--title", "two <QPs>", "--rt", sample, out])
        check(r.returncode == 0, "plot failed: " + r.stderr)
        root = ET.parse(out).getroot()
        check(root.tag == SVG + "svg", "root element is " + root.tag)
        lines = list(root.iter(SVG + "polyline"))
        check(len(lines) == 2 * 3, "expected Rc, Rt and alpha lines for 2 QPs, got {}".format(len(lines)))
        colours = {l.get("stroke") for l in lines}
        check(len(colours) == 2, "one colour per QP, got {}".format(colours))
        for l in lines:
            for pair in l.get("points").split():
                x, y = (float(v) for v in pair.split(","))
                check(0 <= x <= 960 and 0 <= y <= 600, "point outside the picture: {}".format(pair))
        words = texts(root)
        for label in ("flow 1: Rc", "flow 2: Rc", "rate (Gb/s)", "alpha", "time (\u00b5s)", "two <QPs>",
                      "Rc: current rate", "Rt: target rate", "alpha: congestion estimate"):
            check(label in words, "missing text " + label)
        check("100" in words and "0" in words, "rate ticks missing: {}".format(words))

        # dcqcn-trace output on stdin: one QP, SVG on stdout.
        trace = "0,cnp,50,100,1\n55,alpha,50,100,0.99609375\n55,inc_timer,75,100,0.99609375\n"
        r = run(script, ["-", "-"], stdin=trace)
        check(r.returncode == 0, "dcqcn-trace input failed: " + r.stderr)
        root = ET.fromstring(r.stdout)
        check(len(list(root.iter(SVG + "polyline"))) == 2, "one Rc and one alpha line")
        check("QP: Rc" in texts(root), "legend for the single series")

        # Two flows, the second joining at 1000 us, on a 2 Gb/s bottleneck named in the trace.
        share = os.path.join(tmp, "share.csv")
        with open(share, "w") as f:
            f.write("# bottleneck_gbps=2\n# ymax_gbps=5\nt_us,qp,rc_gbps,rt_gbps,alpha\n")
            for t in range(0, 2500, 100):
                f.write("{},1,{},{},0.5\n".format(t, 10 if t == 0 else 1.5, 1.6))
                if t >= 1000:
                    f.write("{},2,{},{},0.5\n".format(t, 10 if t == 1000 else 0.8, 0.9))
        r = run(script, ["--rt", share, out])
        check(r.returncode == 0, "share trace failed: " + r.stderr)
        root = ET.parse(out).getroot()
        words = texts(root)
        for label in ("bottleneck 2 Gb/s", "fair share", "cut at 5 Gb/s (peak 10)"):
            check(label in words, "missing " + label + " in " + str(words))
        fair = [l for l in root.iter(SVG + "polyline") if l.get("stroke-dasharray") == "2,3"]
        check(len(fair) == 1 and len(fair[0].get("points").split()) == 4, "fair share steps from 2 to 1 Gb/s")
        # Ticks every 500 us: without the data ending the axis it would run on to 2500.
        check("2000" in words and "2500" not in words, "the time axis ends with the data (last sample 2400 us): {}".format(words))
        r = run(script, ["--bottleneck", "-1", share, out])
        check(r.returncode != 0 and "positive" in r.stderr, "a negative bottleneck is refused: " + r.stderr)

        # Long traces switch the axis to milliseconds and stay small.
        long_csv = os.path.join(tmp, "long.csv")
        with open(long_csv, "w") as f:
            for i in range(50000):
                f.write("{},{},{},100,0.5\n".format(i * 2, 1 + i % 2, 40 + (i % 7)))
        r = run(script, [long_csv, out])
        check(r.returncode == 0, "long trace failed: " + r.stderr)
        root = ET.parse(out).getroot()
        check("time (ms)" in texts(root), "long traces are labelled in ms")
        check(os.path.getsize(out) < 2_000_000, "thinned output is small")

        # Bad input: a clear error and a non-zero exit.
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("t_us,qp,rc_gbps,rt_gbps,alpha\n0,1,fast,100,1\n")
        r = run(script, [bad, out])
        check(r.returncode != 0 and "line 2" in r.stderr, "bad input must fail with the line: " + r.stderr)
    print("plot_rates: ok")


if __name__ == "__main__":
    main()
