#include "apps/inspect/psn_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace roce::inspect {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#aec7e8"};
constexpr const char* kRetxColour = "#d62728";
constexpr int kLeft = 90, kRight = 30, kTop = 50, kLegendRow = 16;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// Ticks at 1, 2 or 5 times a power of ten inside [lo, hi].
std::vector<double> ticks(double lo, double hi, int count = 6) {
  if (hi <= lo) hi = lo + 1;
  const double raw = (hi - lo) / count;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string tick_label(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

std::string psn_plot_svg(const Analysis& a, const PlotOptions& o) {
  std::vector<const Flow*> flows;
  for (const auto& f : a.flows())
    if (!f->points.empty()) flows.push_back(f.get());
  if (flows.empty()) return {};
  std::stable_sort(flows.begin(), flows.end(), [](const Flow* x, const Flow* y) { return x->points.size() > y->points.size(); });
  const std::size_t hidden = flows.size() > o.max_flows ? flows.size() - o.max_flows : 0;
  flows.resize(std::min(flows.size(), o.max_flows));

  double t0 = 1e300, t1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const Flow* f : flows)
    for (const PsnPoint& p : f->points) {
      const double t = static_cast<double>(p.t_ns) / 1e9;
      t0 = std::min(t0, t);
      t1 = std::max(t1, t);
      y0 = std::min(y0, static_cast<double>(p.psn_offset));
      y1 = std::max(y1, static_cast<double>(p.psn_offset));
    }
  if (t1 <= t0) t1 = t0 + 1e-6;
  if (y1 <= y0) y1 = y0 + 1;
  // Time in the unit that keeps tick labels short; the axis ends with the data.
  const double span = t1 - t0;
  const double scale = span >= 1 ? 1 : span >= 1e-3 ? 1e3 : 1e6;
  const char* unit = span >= 1 ? "s" : span >= 1e-3 ? "ms" : "\u00b5s";

  const int legend_rows = static_cast<int>(flows.size()) + 1 + (hidden ? 1 : 0);
  const int plot_w = o.width - kLeft - kRight;
  const int plot_h = o.height - kTop - 70 - legend_rows * kLegendRow;
  auto px = [&](double t) { return kLeft + (t - t0) / (t1 - t0) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - (y - y0) / (y1 - y0) * plot_h; };

  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(o.width) + "\" height=\"" + std::to_string(o.height) +
       "\" viewBox=\"0 0 " + std::to_string(o.width) + " " + std::to_string(o.height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(kLeft + plot_w / 2.0) + "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">" + esc(o.title) + "</text>\n";
  s += "<rect x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kTop) + "\" width=\"" + std::to_string(plot_w) +
       "\" height=\"" + std::to_string(plot_h) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (double v : ticks(y0, y1)) {
    s += "<line x1=\"" + std::to_string(kLeft) + "\" x2=\"" + std::to_string(kLeft + plot_w) + "\" y1=\"" + num(py(v)) + "\" y2=\"" +
         num(py(v)) + "\" stroke=\"#e5e5e5\"/>\n";
    s += "<text x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + num(py(v) + 4) + "\" text-anchor=\"end\">" + tick_label(v) + "</text>\n";
  }
  for (double v : ticks(t0 * scale, t1 * scale)) {
    const double x = px(v / scale);
    s += "<line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + std::to_string(kTop + plot_h) + "\" y2=\"" +
         std::to_string(kTop + plot_h + 5) + "\" stroke=\"#333\"/>\n";
    s += "<text x=\"" + num(x) + "\" y=\"" + std::to_string(kTop + plot_h + 18) + "\" text-anchor=\"middle\">" + tick_label(v) + "</text>\n";
  }
  s += "<text x=\"" + num(kLeft + plot_w / 2.0) + "\" y=\"" + std::to_string(kTop + plot_h + 36) +
       "\" text-anchor=\"middle\">time since the first frame (" + unit + ")</text>\n";
  const double cy = kTop + plot_h / 2.0;
  s += "<text x=\"24\" y=\"" + num(cy) + "\" text-anchor=\"middle\" transform=\"rotate(-90 24 " + num(cy) +
       ")\">request PSN - the flow's first PSN</text>\n";

  int row = 0;
  const int legend_y = kTop + plot_h + 56;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const Flow& f = *flows[i];
    const char* colour = kPalette[i % std::size(kPalette)];
    // New packets: per pixel column the lowest and highest PSN, joined in time order.
    std::map<int, std::pair<double, double>> columns;
    std::size_t retx = 0, naks = 0;
    std::string marks;
    for (const PsnPoint& p : f.points) {
      const double t = static_cast<double>(p.t_ns) / 1e9, y = p.psn_offset;
      if (p.kind == PsnPoint::kNew) {
        auto [it, fresh] = columns.try_emplace(static_cast<int>(px(t)), y, y);
        if (!fresh) {
          it->second.first = std::min(it->second.first, y);
          it->second.second = std::max(it->second.second, y);
        }
      } else if (p.kind == PsnPoint::kRetransmission && retx++ < o.max_markers) {
        const double x = px(t), yy = py(y);
        marks += "<path d=\"M" + num(x - 3) + " " + num(yy - 3) + "L" + num(x + 3) + " " + num(yy + 3) + "M" + num(x - 3) + " " +
                 num(yy + 3) + "L" + num(x + 3) + " " + num(yy - 3) + "\" stroke=\"" + kRetxColour + "\" stroke-width=\"1.5\"/>\n";
      } else if (p.kind == PsnPoint::kNak && naks++ < o.max_markers) {
        const double x = px(t), yy = py(y);
        marks += "<path d=\"M" + num(x) + " " + num(yy - 5) + "L" + num(x - 4) + " " + num(yy + 3) + "L" + num(x + 4) + " " +
                 num(yy + 3) + "Z\" fill=\"black\"/>\n";
      }
    }
    std::string pts;
    for (const auto& [col, range] : columns) {
      pts += num(col) + "," + num(py(range.first)) + " ";
      if (range.second != range.first) pts += num(col) + "," + num(py(range.second)) + " ";
    }
    s += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"1.5\" points=\"" + pts + "\"/>\n";
    s += marks;
    std::string label = f.key.src.str() + " \u2192 " + f.key.dst.str() + " QP " + [&] {
      char b[12];
      std::snprintf(b, sizeof b, "0x%06x", f.key.qpn);
      return std::string(b);
    }() + ": " + std::to_string(f.points.size() - retx - naks) + " packets, " + std::to_string(retx) + " retransmitted, " +
                        std::to_string(naks) + " NAKs";
    const int y = legend_y + row++ * kLegendRow;
    s += "<line x1=\"" + std::to_string(kLeft) + "\" x2=\"" + std::to_string(kLeft + 24) + "\" y1=\"" + std::to_string(y - 4) +
         "\" y2=\"" + std::to_string(y - 4) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"/>\n";
    s += "<text x=\"" + std::to_string(kLeft + 30) + "\" y=\"" + std::to_string(y) + "\">" + esc(label) + "</text>\n";
  }
  const int y = legend_y + row++ * kLegendRow;
  s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(y) + "\" fill=\"#444\"><tspan fill=\"" + kRetxColour +
       "\">\u00d7</tspan> retransmission   \u25b2 NAK (at the PSN it names)" +
       (a.points_truncated() ? std::string("   (points stop where the memory limit for the picture was reached)") : "") + "</text>\n";
  if (hidden)
    s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(legend_y + row * kLegendRow) + "\" fill=\"#444\">and " +
         std::to_string(hidden) + " smaller flows not drawn</text>\n";
  s += "</svg>\n";
  return s;
}

}  // namespace roce::inspect
