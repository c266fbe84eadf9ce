// The cases of the performance suite. Each returns Figures whose samples are one value per
// timed window (or per run); nothing is asserted about their size. A case returns false only
// when the transport misbehaved (errors, drops, wrong completions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bench/suite/samples.hpp"
#include "lib/rdma/qp_context.hpp"

namespace roce::bench {

struct SuiteConfig {
  unsigned runs = 5;             // samples per figure
  double window = 0.2;           // seconds per sample (throughput cases)
  unsigned rtt_samples = 20000;  // round trips per RTT run
  std::size_t big_bytes = 0;     // destination buffers: larger than the LLC
  std::vector<std::uint32_t> sizes;  // message sizes of the goodput sweep
  bool smoke = false;
  rdma::TransportTuning tuning{};          // of every engine the suite creates
};

// Baselines: same PMD, same frames, same machine, same run.
bool forward_baseline(const SuiteConfig& c, std::uint32_t payload, Results& out);
bool memcpy_bandwidth(const SuiteConfig& c, Results& out);
bool icrc_bandwidth(const SuiteConfig& c, Results& out);
bool memcpy_icrc_ceiling(const SuiteConfig& c, std::uint32_t payload, Results& out);
// One window of the ceiling into `big`; payload Gbit/s.
double ceiling_window(std::span<std::byte> big, std::uint32_t payload, double seconds);
bool ring_pingpong(const SuiteConfig& c, Results& out);

// The transport.
bool responder_worker(const SuiteConfig& c, std::uint32_t payload, std::uint32_t message, Results& out);
bool goodput_sweep(const SuiteConfig& c, Results& out);
bool write_rtt(const SuiteConfig& c, Results& out);
bool loss_goodput(const SuiteConfig& c, Results& out);
bool cycles_per_packet(const SuiteConfig& c, Results& out);

}  // namespace roce::bench
