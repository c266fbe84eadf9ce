// Figures of the suite as raw samples: every case runs several timed windows and writes each
// window's value; scripts/bench_report.py takes medians, minima and maxima. Keeping the raw
// samples in the JSON lets a reader recompute any statistic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/util/json_writer.hpp"

namespace roce::bench {

struct Param {
  std::string key;
  std::string text;     // set for text values
  double number = 0;    // otherwise
  bool is_text = false;
};

// One figure: what was measured (case name and parameters), its unit, and one value per run.
struct Figure {
  std::string name;
  std::vector<Param> params;
  std::string unit;
  std::vector<double> samples;
  std::vector<std::pair<std::string, double>> notes;  // side counts (retransmits, losses, ...)

  Figure& with(std::string k, double v) {
    params.push_back(Param{std::move(k), {}, v, false});
    return *this;
  }
  Figure& with(std::string k, std::string v) {
    params.push_back(Param{std::move(k), std::move(v), 0, true});
    return *this;
  }
  Figure& note(std::string k, double v) {
    notes.emplace_back(std::move(k), v);
    return *this;
  }
  double median() const {
    if (samples.empty()) return 0;
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    const std::size_t n = s.size();
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }
};

class Results {
 public:
  Figure& add(Figure f) {
    figures_.push_back(std::move(f));
    return figures_.back();
  }
  const std::vector<Figure>& figures() const { return figures_; }
  void write(JsonWriter& w) const {
    w.key("figures").begin_array();
    for (const Figure& f : figures_) {
      w.begin_object().field("case", f.name).field("unit", f.unit);
      w.key("params").begin_object();
      for (const Param& p : f.params) {
        if (p.is_text)
          w.field(p.key, p.text);
        else
          w.field(p.key, p.number);
      }
      w.end_object();
      w.key("samples").begin_array();
      for (double s : f.samples) w.value(s);
      w.end_array();
      w.key("notes").begin_object();
      for (const auto& [k, v] : f.notes) w.field(k, v);
      w.end_object();
      w.end_object();
    }
    w.end_array();
  }

 private:
  std::vector<Figure> figures_;
};

}  // namespace roce::bench
