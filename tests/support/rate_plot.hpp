// Where closed-loop tests write their rate traces (docs/dcqcn.md "Rate trace CSV") and how they
// turn one into an SVG with scripts/plot_rates.py. meson passes the directory in
// CC_TRACE_OUT_DIR and, when it found python3, the interpreter and the script in ROCE_PYTHON3
// and ROCE_PLOT_RATES.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace roce::test {

inline std::filesystem::path trace_out_dir() {
  const char* d = std::getenv("CC_TRACE_OUT_DIR");
  return d && *d ? std::filesystem::path(d) : std::filesystem::current_path();
}

struct PlotResult {
  bool attempted = false;  // false: no python3 or script was given to the test
  int status = 0;          // of the plotting command
  std::filesystem::path svg;
  std::string command;
};

// Draws `csv` into the SVG next to it (same name, .svg).
inline PlotResult plot_rates(const std::filesystem::path& csv, const std::string& title) {
  PlotResult r;
  const char* python = std::getenv("ROCE_PYTHON3");
  const char* script = std::getenv("ROCE_PLOT_RATES");
  if (!python || !*python || !script || !*script) return r;
  r.attempted = true;
  r.svg = csv;
  r.svg.replace_extension(".svg");
  r.command = std::string("'") + python + "' '" + script + "' --title '" + title + "' '" + csv.string() + "' '" +
              r.svg.string() + "'";
  r.status = std::system(r.command.c_str());
  return r;
}

}  // namespace roce::test
