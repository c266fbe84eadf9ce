// A packet-level closed loop for the congestion-control pieces alone: N always-backlogged
// senders (reaction point + pacer each) feed one bottleneck egress queue (congestion point);
// marked packets reach a per-flow notification point after a fixed delay, and its CNPs return
// to the sender after another fixed delay. A discrete-event loop in simulated time.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "lib/cc/congestion_point.hpp"
#include "lib/cc/notification_point.hpp"
#include "lib/cc/params.hpp"

namespace roce::cc::test {

struct LoopConfig {
  int senders = 2;
  std::uint32_t packet_bytes = 1000;
  Nanos to_switch = from_us(1);    // sender -> switch
  Nanos to_receiver = from_us(1);  // end of serialisation at the switch -> receiver
  Nanos cnp_return = from_us(2);   // receiver -> sender, on an unqueued priority
  Nanos duration = from_ms(100);
  Nanos measure_from = from_ms(50);
  Nanos trace_interval = from_us(100);
  std::vector<Nanos> start_times;  // per sender; missing entries start at 0
  RpParams rp = paper_params(40e9);
  NpParams np{};
  CpParams cp{};  // cp.line_rate_bps is the bottleneck
};

struct LoopResult {
  std::vector<double> throughput_bps;  // delivered per flow in [measure_from, duration)
  double utilisation = 0;              // delivered / bottleneck capacity in the window
  double jain = 0;
  double mean_queue_bytes = 0;  // time-weighted, in the window
  std::uint64_t max_queue_bytes_window = 0;
  std::uint64_t max_queue_bytes = 0;
  std::uint64_t drops = 0;         // whole run
  std::uint64_t drops_window = 0;  // in the measurement window
  std::uint64_t marks = 0;
  std::uint64_t cnps = 0;
  std::uint64_t rate_decreases = 0;
  std::uint64_t rate_increases = 0;
};

// Runs the loop; writes `t_us,qp,rc_gbps,rt_gbps,alpha` rows to `trace` if it is not null.
LoopResult run_closed_loop(const LoopConfig& config, std::ostream* trace);

}  // namespace roce::cc::test
