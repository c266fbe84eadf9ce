// roce-replay's work, callable from tests: read a capture, set up the scenario (from a file or
// derived from the capture), run it on the engine or the DPDK dataplane, write what was sent,
// and compare it with a golden capture or with what the real responder sent.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "apps/replay/compare.hpp"
#include "apps/replay/run_result.hpp"
#include "apps/replay/scenario.hpp"

namespace roce::replay {

inline constexpr int kExitPass = 0;
inline constexpr int kExitMismatch = 1;
inline constexpr int kExitError = 2;  // bad command line, unreadable input, a scenario that cannot be set up

struct ReplayOptions {
  std::string input;
  std::string scenario;                   // a scenario file; empty with derive
  bool derive = false;                    // derive the scenario (and the expectation) from the capture
  std::optional<rdma::IpAddress> responder_ip;  // derive: the host we stand in for (default: first request's destination)
  std::string output;                     // write what was sent here (pcap)
  std::string expect;                     // golden capture to compare with
  bool ignore_timing = false;
  std::optional<std::uint32_t> max_diffs;
  std::string dump_scenario;              // write the scenario used (derived or read) here
  bool dpdk = false;
  std::vector<std::string> eal_args;
  bool verbose = false;                   // print every non-zero counter
};

// What a replay found, for callers that look further than the exit code.
struct ReplayReport {
  int exit_code = kExitError;
  RunResult run;
  std::optional<Comparison> comparison;
  std::vector<std::string> counter_mismatches;  // "drop.icrc_bad: expected 1, got 0"
};

ReplayReport replay(const ReplayOptions& o, std::ostream& out, std::ostream& err);
inline int run_replay(const ReplayOptions& o, std::ostream& out, std::ostream& err) { return replay(o, out, err).exit_code; }

}  // namespace roce::replay
