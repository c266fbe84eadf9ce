#include "dataplane/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace roce::dp {
namespace {
std::atomic<bool> g_initialised{false};

// Where DPDK 22.11 puts runtime folders (eal_get_runtime_dir: root, XDG, /tmp).
std::vector<std::filesystem::path> runtime_bases() {
  std::vector<std::filesystem::path> b{"/var/run/dpdk", "/tmp/dpdk"};
  if (const char* x = std::getenv("XDG_RUNTIME_DIR")) b.push_back(std::filesystem::path(x) / "dpdk");
  return b;
}

std::set<std::filesystem::path> existing_runtime_dirs() {
  std::set<std::filesystem::path> out;
  for (const auto& base : runtime_bases()) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec))
      out.insert(it->path());
  }
  return out;
}
}  // namespace

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
  const auto before = existing_runtime_dirs();
  const int rc = rte_eal_init(static_cast<int>(copy.size()), argv.data());
  if (rc < 0) {
    g_initialised = false;
    const int err = rte_errno;
    // A failed init (a bad --vdev, say) leaves the runtime folder it made; remove it unless it
    // was there before, where it may belong to a running process with the same prefix.
    const std::filesystem::path dir = rte_eal_get_runtime_dir();
    if (!dir.empty() && !before.count(dir)) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
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
