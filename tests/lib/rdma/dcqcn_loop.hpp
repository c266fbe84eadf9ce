// The DCQCN closed loop over the real transport: N sender engines, one RC QP each, keep several
// large RDMA WRITEs outstanding to one receiver engine through a SimFabric switch whose port
// toward the receiver is the bottleneck. Every QP runs DCQCN (reaction point + pacer on the
// sender, notification point on the receiver); the switch marks CE. Measures what the issue asks
// for after convergence and checks every written byte.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "lib/cc/congestion_point.hpp"
#include "lib/cc/params.hpp"
#include "lib/rdma/send_window.hpp"
#include "lib/time.hpp"

namespace roce::test {

struct DcqcnLoopConfig {
  int senders = 2;
  std::vector<Nanos> start_times;  // per sender; missing entries start at 0
  Nanos duration = 100 * kMilli;   // senders post new WRITEs until then, then drain
  Nanos measure_from = 50 * kMilli;
  Nanos trace_interval = 100 * kMicro;  // rounded up to the 20 us the loop polls at
  double line_rate_bps = 10e9;  // every link and switch port
  Nanos link_delay = 1 * kMicro;
  cc::CpParams port{};  // every switch egress port (line rate set by the fabric)
  cc::RpParams rp = cc::paper_params(10e9);
  bool one_sender_host = false;  // every sender QP on one engine (roce-gen -q N), not one host each
  double receiver_rate_bps = 0;   // the receiver's link and switch port (the bottleneck); 0: line rate
  bool dcqcn = true;           // false: no QP runs DCQCN (no pacer, no CNPs); set port.ecn_marking too
  rdma::WindowTuning window{};       // the senders' go-back-N send window
  std::uint32_t selective_repeat = 0;  // the reorder window of every QP pair (docs/loss.md), 0 = go-back-N
  // Senders bounded only by their 256-packet go-back-N window by default, as the queue bounds of
  // the DCQCN experiments assume (the 256 KiB byte window would keep the switch queue shallow).
  std::uint32_t max_inflight_bytes = 0;
  bool receiver_dcqcn = true;  // false: the receiver's QPs have no notification point (no CNPs)
  std::uint32_t message_bytes = 256 * 1024;  // a multiple of the 4096-byte path MTU
  int outstanding = 4;                       // WRITEs in flight per QP
  std::uint64_t seed = 1;
};

struct DcqcnLoopResult {
  // In the window [measure_from, duration).
  std::vector<double> goodput_bps;  // per QP: payload the receiver accepted in order
  double goodput_utilisation = 0;   // sum of goodput / the payload rate a full link carries
  double link_utilisation = 0;      // link bytes out of the bottleneck port / its capacity
  double jain = 0;
  double mean_queue_bytes = 0;  // bottleneck port, time-weighted
  std::uint64_t max_queue_bytes_window = 0;
  std::uint64_t drops_window = 0;
  // The whole run.
  std::uint64_t max_queue_bytes = 0;
  std::uint64_t drops = 0;
  std::uint64_t marks = 0;
  std::uint64_t cnps_sent = 0;      // by the receiver's notification points
  std::uint64_t cnps_received = 0;  // by the senders' reaction points
  std::uint64_t cnps_ignored = 0;
  std::uint64_t rate_decreases = 0;
  std::uint64_t rate_increases = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t sent_packets = 0;   // by the senders' QPs, first copies and resends
  std::uint64_t loss_events = 0;
  std::uint64_t window_cuts = 0;
  std::uint64_t unroutable = 0;
  // Data check: every completed WRITE's bytes compared at the receiver when it completed.
  std::uint64_t writes_completed = 0;
  std::uint64_t writes_failed = 0;     // completion status other than success
  std::uint64_t writes_corrupt = 0;    // destination bytes differ from the source
  bool drained = false;                // every posted WRITE completed after the senders stopped
  double cpu_seconds = 0;
};

// Runs one loop; writes the rate trace (docs/dcqcn.md format) to `trace` if it is not null.
DcqcnLoopResult run_dcqcn_loop(const DcqcnLoopConfig& config, std::ostream* trace);

}  // namespace roce::test
