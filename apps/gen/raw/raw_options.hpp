// `roce-gen raw`'s command line (roce-craft is its other name): cxxopts options into a RawStreamSpec, a rate and an output, with
// every value range-checked so a bad option is refused at start with a one-line reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/gen/raw/raw_stream.hpp"
#include "client/cli.hpp"

namespace roce::gen {

// Exit statuses: client::kExitOk, kExitFailed (the run could not be finished), kExitUsage (bad
// command line: options, DPDK arguments, a port or file that cannot be used).
using client::kExitFailed;
using client::kExitOk;
using client::kExitUsage;

struct RawCommand {
  RawStreamSpec spec;
  std::optional<Rate> rate;      // none given: pcap 1 Mpps, port unpaced
  std::uint64_t count = 1000;         // 0 with --dev: until --duration or Ctrl-C
  double duration_s = 0;              // port mode: stop after this long (0 = no limit)
  std::string pcap_path;
  std::string dev;  // the DPDK port (--dev)
  std::optional<std::int64_t> start_ns;  // pcap: first timestamp (default: now)
};

struct RawUsage {
  RawCommand cmd;
  bool help = false;
  bool list_opcodes = false;
  std::string error;      // one line, without the program name
  std::string help_text;
};

// args[0] is the program name; the rest are the raw mode's own options (after DPDK's `--`).
RawUsage parse_raw_args(const std::vector<std::string>& args);
// "0x0a  RC_RDMA_WRITE_ONLY  RETH  payload 0..PMTU" for every opcode of the table.
std::string opcode_list();

}  // namespace roce::gen
