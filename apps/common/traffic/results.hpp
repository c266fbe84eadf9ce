// Figures of a test run and their presentation: perftest's table columns, and JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/traffic/spec.hpp"

namespace roce::app {

struct BwFigures {
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;  // completed operations
  double bw_peak_bps = 0;        // bytes per second
  double bw_avg_bps = 0;
  double msg_rate_mpps = 0;
  Nanos elapsed = 0;
};

struct LatFigures {
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;
  double t_min_us = 0, t_max_us = 0, t_typical_us = 0, t_avg_us = 0, t_stdev_us = 0, p99_us = 0, p999_us = 0;
};

// Transport-level totals gathered from the engine counters of the run's QPs.
struct RunCounters {
  std::uint64_t errors = 0;  // completions with an error status
  std::uint64_t retransmits = 0;
  std::uint64_t naks = 0;
  std::uint64_t cnps_received = 0;
  std::uint64_t cnps_sent = 0;
  std::uint64_t timeouts = 0;
  std::string first_error;  // ibv_wc_status_str of the first failed completion
};

// Latency figures from raw samples (nanoseconds), perftest-style: typical is the median.
LatFigures summarise_latency(std::uint32_t size, std::vector<Nanos> samples, bool halve);

std::string bw_table_header(bool gbits);
std::string bw_table_row(const BwFigures& f, bool gbits);
std::string lat_table_header();
std::string lat_table_row(const LatFigures& f);
std::string table_rule();

std::string to_json(const TrafficSpec& spec, const std::vector<BwFigures>& bw, const std::vector<LatFigures>& lat,
                    const RunCounters& c, bool gbits);

}  // namespace roce::app
