// `roce-gen raw`'s two runs: into a pcap file (no DPDK), or out of a DPDK port (EAL set up
// here, paced on the TSC, stopped by --count, --duration or Ctrl-C). Each prints one summary.
// roce-craft is the same tool under its old name.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "apps/gen/raw/raw_options.hpp"

namespace roce::gen {

// `prog` starts every error line ("roce-gen raw", or "roce-craft" under the old name).
int run_pcap(const RawCommand& cmd, std::ostream& out, std::ostream& err, const std::string& prog);
int run_port(const RawCommand& cmd, const std::vector<std::string>& eal_args, std::ostream& out, std::ostream& err,
             const std::string& prog);

// The whole tool: parse `app` (app[0] is the program name), print help, the opcode list or a
// one-line error, or run. Returns the exit status.
int raw_main(const std::string& prog, const std::vector<std::string>& eal, const std::vector<std::string>& app);

}  // namespace roce::gen
