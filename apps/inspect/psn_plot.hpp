// --plot FILE.svg: the request PSN over time of each RC/DC flow (the "time-sequence graph"
// people draw for TCP), offset from the flow's first PSN so flows share one axis, with
// retransmissions marked x and NAKs marked with a triangle at the PSN they name. A self-
// contained SVG, no plotting library.
#pragma once

#include <string>

#include "apps/inspect/analysis.hpp"

namespace roce::inspect {

struct PlotOptions {
  std::string title;
  int width = 1000;
  int height = 620;
  std::size_t max_flows = 10;     // the flows with most packets; the others are counted in a note
  std::size_t max_markers = 2000;  // per flow and kind
};

// Empty when no flow has a request PSN to draw.
std::string psn_plot_svg(const Analysis& a, const PlotOptions& o);

}  // namespace roce::inspect
