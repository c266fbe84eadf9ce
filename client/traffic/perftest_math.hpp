// perftest 4.5's figures, computed as its print_report_bw, print_report_lat and
// print_report_lat_duration compute them (src/perftest_parameters.c), from timestamps on the
// dataplane's clock. perftest counts CPU cycles (rdtsc) and divides by the CPU's MHz; our
// timestamps are nanoseconds from the same TSC, so one "cycle" here is 1 ns and every integer
// step perftest takes on cycles (the per-operation time of the peak, the median of two) is
// taken on nanoseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "client/traffic/results.hpp"

namespace roce::client {

// Bandwidth of one run. `posted[k]` and `completed[k]` are the times the k-th operation of the
// run (every QP's together, in time order) was posted and seen completed; a completion that
// retires several operations (CQ moderation) stamps all of them. Empty: no peak (perftest's
// noPeak, which it sets for -D, --run_infinitely and runs of more than 20000 iterations).
struct BwTimestamps {
  std::vector<Nanos> posted;
  std::vector<Nanos> completed;
};

struct BwInput {
  std::uint32_t size = 0;      // bytes per operation
  std::uint64_t ops = 0;       // operations counted
  Nanos first = 0, last = 0;   // the measured span: first post to last completion (or the -D window)
  const BwTimestamps* times = nullptr;
  std::uint32_t cq_mod = 1;    // a completion is signalled every cq_mod operations (and on the last)
  std::uint32_t post_list = 1; // operations posted together
};

// perftest's peak: the shortest time per operation over any run of operations i..j, where i
// starts a post list and j is an operation whose completion was signalled, taken as
// (completed[j] - posted[i]) / (j - i + 1) in whole nanoseconds. Operations i..j were all posted
// at or after posted[i] and all completed by completed[j], so the rate is one that was really
// carried over a real interval: bursts of completions (one coalesced ACK retiring many WRs)
// cannot make it exceed the link. perftest tries every pair (quadratic); this finds the same
// minimum from the upper convex hull of the post times, O(n log n). Returns 0 for no operations.
Nanos perftest_peak_interval(std::span<const Nanos> posted, std::span<const Nanos> completed, std::uint32_t cq_mod,
                             std::uint32_t post_list);

// Average (size x ops over the span), message rate and, with timestamps, the peak.
BwFigures perftest_bw(const BwInput& in);

// Latency of a latency test from its per-iteration times: perftest takes the time between
// consecutive posts (iters - 1 of them), sorts them, leaves out the 2 largest, and reports the
// smallest, the median of the rest (the mean of the two middle ones when their count is even)
// as t_typical, their mean, their standard deviation (from differences truncated to whole
// microseconds, as perftest's int arithmetic does), t_max as the first one left out, and the
// 99 % and 99.9 % points at index ceil(count x p). `rtt_factor` is 2 for tests that time a
// round trip (SEND, WRITE) and 1 for READ and atomics. `iters` is what the table shows.
LatFigures perftest_latency(std::uint32_t size, std::uint64_t iters, std::vector<Nanos> deltas, int rtt_factor);

// Latency of a -D latency test: the run's time over its iterations, and transactions per second.
struct LatDurationFigures {
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;
  double t_avg_us = 0;
  double tps = 0;
  std::optional<double> cpu_util_percent;  // --cpu_util
};
LatDurationFigures perftest_latency_duration(std::uint32_t size, std::uint64_t iters, Nanos elapsed, int rtt_factor);

}  // namespace roce::client
