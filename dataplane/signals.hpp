// SIGINT and SIGTERM as a request to stop gracefully. The handler only sets a flag (the one
// thing a signal handler may safely do); dataplane loops watch it (Dataplane::watch_stop_flag)
// and wind down on their own: stop RX, flush TX, publish final counters. A second signal while
// the first is pending ends the process the default way, for a stop that hangs.
#pragma once

#include <atomic>

#include "lib/status.hpp"

namespace roce::dp {

class StopSignals {
 public:
  // Installs the handlers (idempotent); restore() puts the previous ones back.
  static Status install();
  static void restore();
  static const std::atomic<bool>& flag();
  static bool requested() { return flag().load(std::memory_order_relaxed); }
  static int last_signal();  // 0 when none arrived
  static void clear();       // for tests, or an app that goes on after a stop
};

}  // namespace roce::dp
