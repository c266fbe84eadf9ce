// The main job: roce-gen's perftest client and roce-appliance's server, each on its own
// dataplane, joined through the link emulator (a little loss, a bottleneck with ECN marking)
// over net_ring ports in one process. Shows the perftest result, retransmissions and CNPs, a
// pcap of the first packets and a DCQCN rate trace.
#pragma once

#include <string>

#include "client/traffic/spec.hpp"
#include "lib/status.hpp"

namespace roce::client {

struct DemoOptions {
  TrafficSpec spec;
  double loss = 0.001;
  double duplicate = 0;       // probability a frame is delivered twice, each way
  double reorder = 0;         // probability a frame is held back (100 us), each way
  double soak_s = 0;          // > 0: soak mode for this long (see soak.hpp)
  double soak_rss_slack_mib = 16;
  double bottleneck_gbps = 2;
  double line_rate_gbps = 10;  // the senders' DCQCN start rate
  unsigned flows = 2;          // sender QPs sharing the bottleneck
  std::string out_dir = "demo-out";
  std::uint32_t capture_frames = 300;
  bool gbits = true;
};

struct DemoResult {
  int exit_code = 0;
};

// Makes --out (and its parents) if needed and checks it can be written in.
Status prepare_out_dir(const std::string& dir);

// Runs the whole demonstration; EAL must be initialised (with at least 2 lcores for speed).
Result<DemoResult> run_demo(const DemoOptions& o);

}  // namespace roce::client
