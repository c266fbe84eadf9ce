// Figures of a test run, and roce-gen's own latency table for the ping-pong tests (perftest's
// printout is client/traffic/perftest_text.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/traffic/spec.hpp"

namespace roce::client {

struct BwFigures {
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;  // completed operations
  double bw_peak_bps = 0;        // bytes per second
  double bw_avg_bps = 0;
  double msg_rate_mpps = 0;
  Nanos elapsed = 0;
  std::optional<double> cpu_util_percent;  // --cpu_util under -D
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
  std::uint64_t packets_sent = 0;       // every packet the QPs sent, resends included
  std::uint64_t sacks_received = 0;     // selective repeat: SACKs that reported holes or held packets
  std::uint64_t selective_resends = 0;  // ... packets resent because a SACK or a timer found them missing
  // What the early retransmission timer did (docs/loss.md): went back N, probed the newest or
  // the oldest unacknowledged packet alone, found a hole with that probe.
  std::uint64_t early_retransmits = 0;
  std::uint64_t tail_probes = 0;
  std::uint64_t oldest_probes = 0;
  std::uint64_t probed_holes = 0;
  std::string first_error;  // ibv_wc_status_str of the first failed completion
};

// Latency figures of the ping-pong tests from raw samples (nanoseconds): typical is the median.
LatFigures summarise_latency(std::uint32_t size, std::vector<Nanos> samples, bool halve);

std::string lat_table_header();
std::string lat_table_row(const LatFigures& f);
std::string table_rule();

}  // namespace roce::client
