// The same scenario on the real dataplane path: the DPDK net_pcap PMD reads the capture
// (rx_pcap) and writes what the worker transmits (tx_pcap); one run-to-completion worker
// carries the engine. The worker's poll loop is stepped by hand with the capture's clock (the
// dataplane would hand it the TSC), taking one frame from the PMD per delivery, so the run is
// as deterministic as on the plain engine. Timestamps in the output are the PMD's (wall
// clock), so comparisons ignore timing.
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
};

Result<RunResult> run_on_dpdk(const Scenario& s, const std::vector<Frame>& input, const DpdkRunOptions& o);

// The EAL arguments a run uses: the caller's (or the defaults) plus the net_pcap vdev.
std::vector<std::string> dpdk_eal_args(const DpdkRunOptions& o);

}  // namespace roce::replay
