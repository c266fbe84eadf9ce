#include "dataplane/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>

#include <atomic>
#include <filesystem>

namespace roce::dp {
namespace {
std::atomic<bool> g_initialised{false};
}

SplitArgs split_args(int argc, char** argv, const std::vector<std::string>& defaults) {
  SplitArgs s;
  const std::string prog = argc > 0 ? argv[0] : "rocev2-dp";
  s.eal.push_back(prog);
  s.app.push_back(prog);
  int dash = -1;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      dash = i;
      break;
    }
  if (dash < 0) {
    s.eal.insert(s.eal.end(), defaults.begin(), defaults.end());
    for (int i = 1; i < argc; ++i) s.app.emplace_back(argv[i]);
    return s;
  }
  for (int i = 1; i < dash; ++i) s.eal.emplace_back(argv[i]);
  for (int i = dash + 1; i < argc; ++i) s.app.emplace_back(argv[i]);
  return s;
}

Status Eal::init(const std::vector<std::string>& eal_args) {
  if (g_initialised.exchange(true)) return make_error(EALREADY, "the DPDK EAL is already initialised in this process");
  std::vector<std::string> copy = eal_args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = rte_eal_init(static_cast<int>(copy.size()), argv.data());
  if (rc < 0) {
    g_initialised = false;
    const int err = rte_errno;
    std::string line;
    for (std::size_t i = 1; i < eal_args.size(); ++i) line += (i > 1 ? " " : "") + eal_args[i];
    return make_error(err ? err : EINVAL, std::string("DPDK EAL initialisation failed (") + rte_strerror(err) +
                                              ") with arguments: " + line);
  }
  return {};
}

void Eal::cleanup() {
  if (!g_initialised.exchange(false)) return;
  // DPDK 22.11 leaves its runtime folder (config, fbarrays, sockets: megabytes of tmpfs under
  // /var/run/dpdk) behind; a primary process that is done removes it.
  const bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
  const std::string dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  if (primary && !dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

bool Eal::initialised() { return g_initialised; }

}  // namespace roce::dp
