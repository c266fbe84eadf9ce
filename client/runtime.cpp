#include "client/runtime.hpp"

#include <arpa/inet.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <cstring>

namespace roce::client {

std::vector<std::string> default_eal_args(const std::string& prog) {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return {"--no-huge", "--no-pci", "-m", "512", "--file-prefix=" + prog + "_" + std::to_string(::getpid()),
          "--log-level=error", "-l", cores >= 2 ? "0-1" : "0"};
}

ToolEal::~ToolEal() {
  if (up_) dp::Eal::cleanup();
}

int ToolEal::start(std::vector<std::string> eal, const std::vector<std::string>& vdevs, const FailFn& fail,
                   bool stop_signals) {
  for (const auto& v : vdevs) eal.push_back("--vdev=" + dp::with_default_af_packet_ring(v));
  if (Status s = dp::Eal::init(eal); !s) return fail(s.error().message, kExitUsage);
  up_ = true;
  if (!stop_signals) return kExitOk;
  if (Status s = dp::StopSignals::install(); !s) return fail(s.error().message, kExitFailed);
  return kExitOk;
}

Status RunningDataplane::start(dp::Dataplane& dp) {
  dp_ = &dp;
  std::vector<unsigned> lcores;
  unsigned l;
  RTE_LCORE_FOREACH_WORKER(l) lcores.push_back(l);
  // Each loop needs its own lcore here: the main lcore stays with the control work.
  const unsigned loops = dp.worker_count() + (dp.io_stats() ? 1 : 0);
  if (lcores.size() >= loops) {
    lcores.resize(loops);
    if (Status s = dp.launch(lcores); !s) return s;
    launched_ = true;
    return {};
  }
  // Too few lcores: one plain thread steps every loop in turn.
  dp.set_driven_by_other_thread(true);
  thread_ = std::thread([this] {
    while (!stop_.load(std::memory_order_relaxed)) dp_->poll_once();
    dp_->flush();
  });
  return {};
}

void RunningDataplane::stop() {
  if (!dp_) return;
  if (launched_) {
    dp_->stop();
    dp_->wait();
    launched_ = false;
  }
  stop_ = true;
  if (thread_.joinable()) {
    thread_.join();
    // Nobody polls any more: later Dataplane::call()s run on the caller instead of waiting.
    dp_->set_driven_by_other_thread(false);
  }
  dp_ = nullptr;
}

Result<std::uint64_t> parse_byte_size(const std::string& s) {
  if (s.empty()) return make_error(EINVAL, "empty size");
  // stoull alone would take " 4" and "-1" (as 2^64 - 1).
  if (s[0] < '0' || s[0] > '9') return make_error(EINVAL, "size '" + s + "' is not a number");
  std::size_t used = 0;
  unsigned long long v;
  try {
    v = std::stoull(s, &used, 10);
  } catch (...) {
    return make_error(EINVAL, "size '" + s + "' is too large");
  }
  std::uint64_t mult = 1;
  const std::string unit = s.substr(used);
  if (unit == "" || unit == "B") mult = 1;
  else if (unit == "K" || unit == "k" || unit == "KiB") mult = 1ull << 10;
  else if (unit == "M" || unit == "m" || unit == "MiB") mult = 1ull << 20;
  else if (unit == "G" || unit == "g" || unit == "GiB") mult = 1ull << 30;
  else return make_error(EINVAL, "size '" + s + "': the unit must be K, M or G (or KiB, MiB, GiB)");
  if (v > UINT64_MAX / mult) return make_error(EINVAL, "size '" + s + "' is too large");
  return v * mult;
}

std::optional<std::uint64_t> parse_size(const std::string& s) {
  auto r = parse_byte_size(s);
  if (!r) return std::nullopt;
  return *r;
}

std::optional<proto::Ipv4Addr> parse_ipv4(const std::string& s) {
  in_addr a{};
  if (::inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  proto::Ipv4Addr out;
  std::memcpy(out.data(), &a, 4);
  return out;
}

std::optional<rdma::IpAddress> parse_ip(const std::string& s) {
  if (auto v4 = parse_ipv4(s)) return rdma::IpAddress::ipv4(*v4);
  in6_addr a{};
  if (::inet_pton(AF_INET6, s.c_str(), &a) != 1) return std::nullopt;
  proto::Ipv6Addr out;
  std::memcpy(out.data(), &a, 16);
  return rdma::IpAddress::ipv6(out);
}

}  // namespace roce::client
