#include "client/traffic/results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace roce::client {

namespace {

double pct(const std::vector<Nanos>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()))) ;
  return static_cast<double>(sorted[std::min(sorted.size() - 1, i == 0 ? 0 : i - 1)]);
}

}  // namespace

LatFigures summarise_latency(std::uint32_t size, std::vector<Nanos> samples, bool halve) {
  LatFigures f;
  f.size = size;
  f.iterations = samples.size();
  if (samples.empty()) return f;
  if (halve)
    for (Nanos& s : samples) s /= 2;
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(samples.size());
  const double sum = std::accumulate(samples.begin(), samples.end(), 0.0, [](double a, Nanos b) { return a + static_cast<double>(b); });
  const double avg = sum / n;
  double var = 0;
  for (Nanos s : samples) var += (static_cast<double>(s) - avg) * (static_cast<double>(s) - avg);
  f.t_min_us = static_cast<double>(samples.front()) / 1e3;
  f.t_max_us = static_cast<double>(samples.back()) / 1e3;
  f.t_typical_us = static_cast<double>(samples[samples.size() / 2]) / 1e3;
  f.t_avg_us = avg / 1e3;
  f.t_stdev_us = std::sqrt(var / n) / 1e3;
  f.p99_us = pct(samples, 0.99) / 1e3;
  f.p999_us = pct(samples, 0.999) / 1e3;
  return f;
}

std::string table_rule() { return std::string(87, '-') + "\n"; }

std::string lat_table_header() {
  char b[256];
  std::snprintf(b, sizeof b, " %-7s %-12s %-13s %-13s %-16s %-13s %-15s %-22s %s\n", "#bytes", "#iterations", "t_min[usec]",
                "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]",
                "99.9% percentile[usec]");
  return b;
}

std::string lat_table_row(const LatFigures& f) {
  char b[256];
  std::snprintf(b, sizeof b, " %-7u %-12llu %-13.2f %-13.2f %-16.2f %-13.2f %-15.2f %-22.2f %.2f\n", f.size,
                static_cast<unsigned long long>(f.iterations), f.t_min_us, f.t_max_us, f.t_typical_us, f.t_avg_us,
                f.t_stdev_us, f.p99_us, f.p999_us);
  return b;
}

}  // namespace roce::client
