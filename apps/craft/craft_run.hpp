// roce-craft's two runs: into a pcap file (no DPDK), or out of a DPDK port (EAL set up here,
// paced on the TSC, stopped by --count, --duration or Ctrl-C). Each prints one summary.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "apps/craft/craft_options.hpp"

namespace roce::craft {

int run_pcap(const CraftCommand& cmd, std::ostream& out, std::ostream& err);
int run_port(const CraftCommand& cmd, const std::vector<std::string>& eal_args, std::ostream& out, std::ostream& err);

}  // namespace roce::craft
