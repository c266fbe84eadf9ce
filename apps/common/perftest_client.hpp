// The client side of a perftest-compatible test: the TCP exchange of ib_*_bw / ib_*_lat in
// perftest 4.5's order (oob/perftest_flow.hpp), QP set-up, the traffic on the worker lcores, and
// the figures. Works against a real perftest server, roce-appliance, or roce-gen in server mode.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apps/common/connector.hpp"
#include "apps/common/oob/perftest.hpp"
#include "apps/common/oob/perftest_flow.hpp"
#include "apps/common/traffic/results.hpp"

namespace roce::app {

struct ClientOptions {
  std::string server;
  std::uint16_t port = 18515;
  TrafficSpec spec;
  unsigned qps = 1;
  QpParams qp;  // qp.type: RC, UC or UD (perftest's -c)
  std::vector<std::uint32_t> sizes;  // more than one: -a (UD sweeps stop at the path MTU, as perftest's)
  bool verify = false;
  int oob_timeout_ms = 30'000;
  // A run that completes nothing for this long fails with a hint instead of hanging (a SEND
  // latency test against a server that does not echo, a peer that went away).
  Nanos stall_timeout = 10 * kSecond;
};

struct ClientRun {
  std::vector<BwFigures> bw;
  std::vector<LatFigures> lat;
  RunCounters counters;
  ibv_mtu mtu = IBV_MTU_1024;
  std::string remote_version;
  std::vector<PerftestDest> local, remote;  // the QP records, ours and the server's
  bool verified = false;  // --verify ran and the far side held what was written
};

// `progress` gets one line per second of a running size (throughput so far).
Result<ClientRun> run_perftest_client(dp::Dataplane& dp, const ClientOptions& o,
                                      const std::function<void(const std::string&)>& progress);

// The client's side of perftest's exchange in the order perftest 4.5 runs it (the recorded
// streams in tests/apps/fixtures/oob show it); run_perftest_client runs the traffic in between.
// Versions, cycle-buffer and cache-line sizes, then the MTU: the smaller one is returned.
Result<ibv_mtu> perftest_client_preamble(PerftestSession& s, ibv_mtu mine);

// Walks `flow` on the client's side: records, syncs, results and "done" on the socket; `connect`
// brings the QPs up with the server's records, `traffic` runs one size and gives the figures the
// next results step sends. Every record the server sends again must name the same QP as its first
// one: a server on another -q or another test's order fails with the step where it went astray.
struct ClientHooks {
  std::function<Status(const std::vector<PerftestDest>&)> connect;
  std::function<Result<PerftestResults>(std::uint32_t size_index)> traffic;
};
Result<std::vector<PerftestDest>> perftest_client_exchange(PerftestSession& s, const PerftestTest& test,
                                                           const std::vector<PerftestDest>& mine,
                                                           const ClientHooks& hooks);

}  // namespace roce::app
