// roce-craft's command line: cxxopts options into a RawStreamSpec, a rate and an output, with
// every value range-checked so a bad option is refused at start with a one-line reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/gen/raw/raw_stream.hpp"

namespace roce::craft {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the run could not be finished
inline constexpr int kExitUsage = 2;   // bad command line: options, DPDK arguments, a port or file that cannot be used

struct CraftCommand {
  gen::RawStreamSpec spec;
  std::optional<gen::Rate> rate;      // none given: pcap 1 Mpps, port unpaced
  std::uint64_t count = 1000;         // 0 with --port: until --duration or Ctrl-C
  double duration_s = 0;              // port mode: stop after this long (0 = no limit)
  std::string pcap_path;
  std::string port;
  std::optional<std::int64_t> start_ns;  // pcap: first timestamp (default: now)
};

struct CraftUsage {
  CraftCommand cmd;
  bool help = false;
  bool list_opcodes = false;
  std::string error;      // one line, without the program name
  std::string help_text;
};

// args[0] is the program name; the rest are roce-craft's own options (after DPDK's `--`).
CraftUsage parse_craft_args(const std::vector<std::string>& args);
// "0x0a  RC_RDMA_WRITE_ONLY  RETH  payload 0..PMTU" for every opcode of the table.
std::string opcode_list();

}  // namespace roce::craft
