#include "dataplane/signals.hpp"

#include <csignal>
#include <cstring>
#include <mutex>

namespace roce::dp {
namespace {

std::atomic<bool> g_requested{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "signal handlers may only touch lock-free atomics");

constexpr int kSignals[] = {SIGINT, SIGTERM};
std::mutex g_install_mutex;
bool g_installed = false;
struct sigaction g_previous[2];

void on_stop_signal(int sig) {
  if (g_requested.load()) {
    // Second signal: the graceful stop is taking too long; die as the signal says.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal.store(sig);  // before the flag, so whoever sees the flag sees the signal
  g_requested.store(true);
}

}  // namespace

Status StopSignals::install() {
  std::lock_guard lock(g_install_mutex);
  if (g_installed) return {};
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    if (sigaction(kSignals[i], &sa, &g_previous[i]) != 0) {
      const int err = errno;
      for (std::size_t j = 0; j < i; ++j) sigaction(kSignals[j], &g_previous[j], nullptr);
      return make_error(err, std::string("cannot install a handler for ") + strsignal(kSignals[i]) + ": " +
                                 std::strerror(err));
    }
  }
  g_installed = true;
  return {};
}

void StopSignals::restore() {
  std::lock_guard lock(g_install_mutex);
  if (!g_installed) return;
  for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  g_installed = false;
}

const std::atomic<bool>& StopSignals::flag() { return g_requested; }

int StopSignals::last_signal() { return g_signal.load(); }

void StopSignals::clear() {
  g_signal.store(0);
  g_requested.store(false);
}

}  // namespace roce::dp
