// `roce-gen emulate`: a bump in the wire between two DPDK ports (netsim/link_emulator):
// seeded loss, duplication, reordering, delay and jitter, and a bottleneck queue with RED ECN
// marking, in both directions, so go-back-N and DCQCN show without a switch.
#pragma once

#include <string>
#include <vector>

#include "lib/status.hpp"
#include "netsim/link_faults.hpp"

namespace roce::client {

struct EmulateOptions {
  bool help = false;
  std::string help_text;
  std::vector<std::string> vdevs;
  std::string port_a, port_b;   // side X and side Y of the emulator
  netsim::DirectionFaults faults;   // the same both ways
  std::uint64_t seed = 1;
  double duration_s = 0;        // 0: until Ctrl-C
  double interval_s = 1;        // progress lines; 0: none
  bool json = false;
};

// args[0] is the program name, args[1] "emulate". On error the one-line reason.
Result<EmulateOptions> parse_emulate_options(const std::vector<std::string>& args);

// Runs the emulator on this thread (EAL from `eal`); returns the exit status.
int run_emulate(const EmulateOptions& o, const std::vector<std::string>& eal);

}  // namespace roce::client
