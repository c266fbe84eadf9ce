// The client side of a perftest-compatible test: the TCP exchange of ib_*_bw / ib_*_lat, QP
// set-up, the traffic on the worker lcores, and the figures. Works against a real perftest
// server, roce-appliance, or roce-gen in server mode.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apps/common/connector.hpp"
#include "apps/common/traffic/results.hpp"

namespace roce::app {

struct ClientOptions {
  std::string server;
  std::uint16_t port = 18515;
  TrafficSpec spec;
  unsigned qps = 1;
  QpParams qp;
  std::vector<std::uint32_t> sizes;  // more than one: -a
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
  bool verified = false;  // --verify ran and the far side held what was written
};

// `progress` gets one line per second of a running size (throughput so far).
Result<ClientRun> run_perftest_client(dp::Dataplane& dp, const ClientOptions& o,
                                      const std::function<void(const std::string&)>& progress);

// Pre-traffic handshakes perftest does for a test: the QP records once, then syncs.
int pre_traffic_handshakes(const TrafficSpec& s);

}  // namespace roce::app
