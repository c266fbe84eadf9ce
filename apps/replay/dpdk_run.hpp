// The same scenario on the real dataplane path: the DPDK net_pcap PMD reads the capture
// (rx_pcap) and writes what the worker transmits (tx_pcap); one run-to-completion worker
// carries the engine. Frames are released one at a time no earlier than their capture offset
// on the TSC (gaps longer than max_gap are shortened), so timers fire between them as they
// would have. Timestamps in the output are the PMD's, so comparisons ignore timing.
//
// Initialises the EAL: once per process.
#pragma once

#include <string>
#include <vector>

#include "apps/replay/run_result.hpp"
#include "apps/replay/scenario.hpp"

namespace roce::replay {

struct DpdkRunOptions {
  std::vector<std::string> eal_args;  // argv[0] first; empty: defaults (no hugepages, no PCI, no shared config)
  std::string input;                  // the capture the PMD reads
  std::string output;                 // where the PMD writes what was sent
  Nanos max_gap = 10 * kMilli;
};

Result<RunResult> run_on_dpdk(const Scenario& s, const std::vector<Frame>& input, const DpdkRunOptions& o);

// The EAL arguments a run uses: the caller's (or the defaults) plus the net_pcap vdev.
std::vector<std::string> dpdk_eal_args(const DpdkRunOptions& o);

}  // namespace roce::replay
