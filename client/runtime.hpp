// What every DPDK app here does before and after its real work: EAL arguments (DPDK's own
// before `--`, or an embedded default), virtual devices, one dataplane on a port, its loops on
// worker lcores (or on a plain thread when the EAL has only the main lcore), and a clean stop.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/signals.hpp"

namespace roce::app {

// EAL arguments used when the command line has no `--`: no hugepages, no PCI, a private
// file prefix, two lcores when the machine has two cores.
std::vector<std::string> default_eal_args(const std::string& prog);

// Cleans the EAL up (and its runtime folder) when main leaves by any path once it is up.
// Declare it before the dataplane so the dataplane goes first.
struct EalGuard {
  EalGuard() = default;
  EalGuard(const EalGuard&) = delete;
  EalGuard& operator=(const EalGuard&) = delete;
  ~EalGuard() { dp::Eal::cleanup(); }
};

class RunningDataplane {
 public:
  RunningDataplane() = default;
  ~RunningDataplane() { stop(); }
  RunningDataplane(const RunningDataplane&) = delete;
  RunningDataplane& operator=(const RunningDataplane&) = delete;

  // Launches the dataplane's loops on the EAL's worker lcores, or on one plain thread.
  Status start(dp::Dataplane& dp);
  void stop();

 private:
  dp::Dataplane* dp_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool launched_ = false;
};

// "64M" / "4K" / "1G" / "4096" -> bytes.
std::optional<std::uint64_t> parse_size(const std::string& s);
std::optional<proto::Ipv4Addr> parse_ipv4(const std::string& s);
// An endpoint address of either family: "10.77.0.2" or "fd77::2".
std::optional<IpAddress> parse_ip(const std::string& s);

}  // namespace roce::app
