// The DCQCN picture people know: flows that join one after another on a shared bottleneck and
// settle at their fair share. The live run's trace depends on how much CPU this machine gives
// the single polling thread; this one does not: the same reaction points, pacers, notification
// points and RED-marking switch queue as the live run (lib/cc), stepped on a virtual clock, with
// senders that always have data. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "lib/cc/congestion_point.hpp"
#include "lib/cc/notification_point.hpp"
#include "lib/cc/params.hpp"
#include "lib/time.hpp"

namespace roce::client {

struct ShareConfig {
  unsigned flows = 2;
  double line_rate_bps = 10e9;        // each sender's link, and its DCQCN start rate
  double bottleneck_bps = 2e9;
  Nanos join_every = 15'000'000;  // flow k starts k * this after the first
  Nanos run_after_last = 45'000'000;
  Nanos link_delay = 5'000;       // each way (the CNP's way back too)
  Nanos sample_every = 100'000;
  std::uint32_t frame_bytes = 1078;   // a 1024-byte WRITE MIDDLE on the wire
  cc::RedParams red{20'000, 200'000, 0.2};
  cc::NpParams np{};
  std::uint64_t seed = 2026;
};

struct ShareResult {
  std::vector<double> throughput_bps;  // per flow, over the last third of the run
  double jain = 0;                     // of those
  std::uint64_t marked = 0, cnps = 0, dropped = 0;
};

// Writes the rate trace (t_us,qp,rc_gbps,rt_gbps,alpha; the flows are QPs 1..N) to `csv`.
ShareResult run_dcqcn_share(const ShareConfig& c, std::ostream& csv);

}  // namespace roce::client
