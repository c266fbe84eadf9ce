// roce-gen --json: every setting the run used, the peer (its address, perftest version and QP
// records) and ours, the results and the transport's counters; and errors as JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client/perftest_client.hpp"
#include "apps/gen/options.hpp"

namespace roce::client {

// What this end's RX queues did (dataplane/overrun.hpp, rx_backlog.hpp), summed over the loops
// that read the port.
struct ReceiveQueueFigures {
  std::uint64_t overrun_frames = 0, overrun_ce_marks = 0, backlog_bursts = 0, backlog_ce_marks = 0, backlog_max_frames = 0;
};

struct GenJsonRun {
  const ClientConnection* connection = nullptr;  // perftest tests: both sides' QP records
  std::vector<BwFigures> bw;
  std::vector<LatFigures> lat;
  std::vector<LatDurationFigures> lat_duration;
  RunCounters counters;
  std::string verify;                 // --verify's outcome in words; empty without --verify
  std::optional<double> cpu_util_percent;
  bool stopped = false;               // --run_infinitely ended by a signal
  std::uint32_t selective_repeat = 0;  // the reorder window the server agreed to; 0 = go-back-N
  std::optional<ReceiveQueueFigures> receive_queue;  // client runs
};

std::string gen_result_json(const GenOptions& g, const GenJsonRun& r);
// {"error": MESSAGE, "exit_status": N}
std::string gen_error_json(const std::string& message, int exit_status);

}  // namespace roce::client
