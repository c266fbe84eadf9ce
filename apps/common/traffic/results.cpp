#include "apps/common/traffic/results.hpp"

#include "lib/util/json_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace roce::app {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double bw_units(double bytes_per_s, bool gbits) { return gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / kMiB; }

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

std::string bw_table_header(bool gbits) {
  char b[256];
  std::snprintf(b, sizeof b, " %-10s %-14s %-18s %-21s %s\n", "#bytes", "#iterations",
                gbits ? "BW peak[Gb/sec]" : "BW peak[MB/sec]", gbits ? "BW average[Gb/sec]" : "BW average[MB/sec]",
                "MsgRate[Mpps]");
  return b;
}

std::string bw_table_row(const BwFigures& f, bool gbits) {
  char b[256];
  std::snprintf(b, sizeof b, " %-10u %-14llu %-18.2f %-21.2f %.6f\n", f.size, static_cast<unsigned long long>(f.iterations),
                bw_units(f.bw_peak_bps, gbits), bw_units(f.bw_avg_bps, gbits), f.msg_rate_mpps);
  return b;
}

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

std::string to_json(const TrafficSpec& spec, const std::vector<BwFigures>& bw, const std::vector<LatFigures>& lat,
                    const RunCounters& c, bool gbits) {
  JsonWriter w;
  w.begin_object().field("test", to_string(spec.verb) + "_" + to_string(spec.measure)).key("results").begin_array();
  for (const BwFigures& f : bw)
    w.begin_object()
        .field("bytes", f.size)
        .field("iterations", f.iterations)
        .field("bw_peak", bw_units(f.bw_peak_bps, gbits))
        .field("bw_average", bw_units(f.bw_avg_bps, gbits))
        .field("bw_unit", gbits ? "Gb/sec" : "MB/sec")
        .field("msg_rate_mpps", f.msg_rate_mpps)
        .end_object();
  for (const LatFigures& f : lat)
    w.begin_object()
        .field("bytes", f.size)
        .field("iterations", f.iterations)
        .field("t_min_us", f.t_min_us)
        .field("t_max_us", f.t_max_us)
        .field("t_typical_us", f.t_typical_us)
        .field("t_avg_us", f.t_avg_us)
        .field("t_stdev_us", f.t_stdev_us)
        .field("p99_us", f.p99_us)
        .field("p999_us", f.p999_us)
        .end_object();
  w.end_array()
      .field("errors", c.errors)
      .field("first_error", c.first_error)
      .field("retransmits", c.retransmits)
      .field("naks", c.naks)
      .field("timeouts", c.timeouts)
      .field("cnps_received", c.cnps_received)
      .field("cnps_sent", c.cnps_sent)
      .end_object();
  return w.str();
}

}  // namespace roce::app
