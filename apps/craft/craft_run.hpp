// roce-craft's two runs: into a pcap file (no DPDK), or out of a DPDK port (EAL set up here,
// paced on the TSC, stopped by --count, --duration or Ctrl-C). Each prints one summary.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "apps/craft/craft_options.hpp"

namespace roce::craft {

// `prog` starts every error line ("roce-craft", or "roce-gen raw" when roce-gen runs it).
int run_pcap(const CraftCommand& cmd, std::ostream& out, std::ostream& err, const std::string& prog = "roce-craft");
int run_port(const CraftCommand& cmd, const std::vector<std::string>& eal_args, std::ostream& out, std::ostream& err,
             const std::string& prog = "roce-craft");

// The whole tool: parse `app` (app[0] is the program name), print help, the opcode list or a
// one-line error, or run. Returns the exit status. roce-craft's main and `roce-gen raw` call it.
int craft_main(const std::string& prog, const std::vector<std::string>& eal, const std::vector<std::string>& app);

}  // namespace roce::craft
