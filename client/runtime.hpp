// What every DPDK app here does before and after its real work: EAL arguments (DPDK's own
// before `--`, or an embedded default), virtual devices, one dataplane on a port, its loops on
// worker lcores (or on a plain thread when the EAL has only the main lcore), and a clean stop.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/cli.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/signals.hpp"

namespace roce::client {

// EAL arguments used when the command line has no `--`: no hugepages, no PCI, a private
// file prefix, two lcores when the machine has two cores.
std::vector<std::string> default_eal_args(const std::string& prog);

// The EAL for one run of a tool: started with the tool's EAL arguments plus its --vdev
// options, SIGINT and SIGTERM turned into a stop request, and cleaned up (its runtime folder
// included) when main leaves by any path. Declare it before the dataplane, so the dataplane
// goes first.
class ToolEal {
 public:
  ToolEal() = default;
  ~ToolEal();
  ToolEal(const ToolEal&) = delete;
  ToolEal& operator=(const ToolEal&) = delete;

  // 0 when the EAL is up and the signals are installed. Otherwise what `fail` returns, asked
  // with kExitUsage when DPDK refuses the arguments (a bad EAL option, a device that cannot be
  // made: the command line's fault) and with kExitFailed when the signals cannot be installed.
  // A tool whose loops do not watch the stop request passes stop_signals = false and keeps
  // the default handlers (Ctrl-C ends it at once).
  int start(std::vector<std::string> eal, const std::vector<std::string>& vdevs, const FailFn& fail,
            bool stop_signals = true);

 private:
  bool up_ = false;
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

// "64M" / "4k" / "1GiB" / "4096" -> bytes (K, M, G: powers of 1024, either case or KiB, MiB,
// GiB). The error says what is wrong with the text; parse_size drops the reason.
Result<std::uint64_t> parse_byte_size(const std::string& s);
std::optional<std::uint64_t> parse_size(const std::string& s);
std::optional<proto::Ipv4Addr> parse_ipv4(const std::string& s);
// An endpoint address of either family: "10.77.0.2" or "fd77::2".
std::optional<rdma::IpAddress> parse_ip(const std::string& s);

}  // namespace roce::client
