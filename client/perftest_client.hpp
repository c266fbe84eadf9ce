// The client side of a perftest-compatible test: the TCP exchange of ib_*_bw / ib_*_lat in
// perftest 4.5's order (oob/perftest_flow.hpp), QP set-up, the traffic on the worker lcores, and
// the figures. Works against a real perftest server, roce-appliance, or roce-gen in server mode.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/connector.hpp"
#include "client/oob/perftest.hpp"
#include "client/oob/perftest_flow.hpp"
#include "client/traffic/perftest_math.hpp"
#include "client/traffic/results.hpp"

namespace roce::client {

class BwClient;
// perftest's figures of one size's bandwidth drivers (all QPs together; the window under -D).
BwFigures bw_figures(const TrafficSpec& spec, const std::vector<std::unique_ptr<BwClient>>& bw);

// Where a run stands, about once a second (for a live progress line).
struct ClientProgress {
  std::uint32_t size = 0;
  std::uint64_t done_ops = 0;
  std::uint64_t target_ops = 0;  // 0 under -D
  double elapsed_s = 0;
  double duration_s = 0;         // -D, else 0
  double bytes_per_s = 0;        // over the last second
};

// What the client knew when its QPs came up: both sides' QP records and the path MTU.
struct ClientConnection {
  std::vector<PerftestDest> mine, peers;
  ibv_mtu mtu = IBV_MTU_1024;
  std::string remote_version;
};

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
  bool mr_per_qp = false;       // one memory region per QP (perftest's --mr_per_qp)
  bool run_infinitely = false;  // a result every spec.duration until a stop signal
  bool cpu_util = false;        // -D: the host's CPU use over the measured window
  bool gbits = false;           // the figures the server gets are in Gb/sec (else MB/sec), as perftest sends them
  bool duplex = false;          // -b: the server sends too; the figures shown are both sides' sum
  // --use-srq: a SEND latency test's or -b's receives come from one shared receive queue of
  // qp.recv_depth (perftest's client makes none otherwise).
  bool use_srq = false;
  // -R: the exchange runs on an rdma_cm connection to `port` and the QPs connect through rdma_cm
  // (perftest_cm.hpp); retry_count is --retry_count, the data connections' retry and RNR retry.
  bool rdma_cm = false;
  std::uint8_t retry_count = 7;
  // Selective repeat (docs/loss.md): the reorder window offered to the server, in the TCP
  // exchange's version record (perftest_version_record) or, with -R, in each data QP's REQ; RC
  // only. The QPs use it only when the server accepted it (a rocev2-dp server); 0 = go-back-N.
  std::uint32_t selective_repeat = 0;
  // perftest prints as the run goes: the header once the QPs are up, a row per size.
  std::function<void(const ClientConnection&)> on_connected;
  std::function<void(const BwFigures&)> on_bw;
  std::function<void(const LatFigures&)> on_lat;
  std::function<void(const LatDurationFigures&)> on_lat_duration;
};

struct ClientRun {
  std::vector<BwFigures> bw;
  std::vector<LatFigures> lat;
  RunCounters counters;
  ibv_mtu mtu = IBV_MTU_1024;
  std::string remote_version;
  std::uint32_t selective_repeat = 0;  // the reorder window the server accepted; 0 = go-back-N
  std::vector<PerftestDest> local, remote;  // the QP records, ours and the server's
  bool verified = false;  // --verify ran and the far side held what was written
  std::vector<LatDurationFigures> lat_duration;  // -D latency tests
  std::optional<double> cpu_util_percent;        // --cpu_util under -D
  bool stopped = false;   // --run_infinitely ended by a stop signal (its normal end)
  // --use-srq where it applies: the receives came from one shared receive queue, refilled each
  // time its limit event came.
  bool shared_srq = false;
  std::uint64_t srq_limit_events = 0;
};

// `progress` is called about once a second while a size runs.
Result<ClientRun> run_perftest_client(dp::Dataplane& dp, const ClientOptions& o,
                                      const std::function<void(const ClientProgress&)>& progress);

// The client's side of perftest's exchange in the order perftest 4.5 runs it (the recorded
// streams in tests/apps/fixtures/oob show it); run_perftest_client runs the traffic in between.
// Versions, cycle-buffer and cache-line sizes, then the MTU: the smaller one is returned.
// `ece` goes after our version (perftest_version_record): the offer of selective repeat.
Result<ibv_mtu> perftest_client_preamble(PerftestSession& s, ibv_mtu mine, const cm::Ece& ece = {});

// Walks `flow` on the client's side: records, syncs, results and "done" on the socket; `connect`
// brings the QPs up with the server's records, `traffic` runs one size and gives the figures the
// next results step sends. Every record the server sends again must name the same QP as its first
// one: a server on another -q or another test's order fails with the step where it went astray.
struct ClientHooks {
  std::function<Status(const std::vector<PerftestDest>&)> connect;
  std::function<Result<PerftestResults>(std::uint32_t size_index)> traffic;
  // Before the sync that starts a size's traffic (SEND -b posts its receives there, as perftest).
  std::function<Status(std::uint32_t size_index)> before_traffic_sync;
  std::function<void(const PerftestResults& theirs)> results;  // the server's figures, when it sends them
  std::function<Status()> cm_connect;  // -R: the data QPs' rdma_cm connections, between the two syncs
};
Result<std::vector<PerftestDest>> perftest_client_exchange(PerftestSession& s, const PerftestTest& test,
                                                           const std::vector<PerftestDest>& mine,
                                                           const ClientHooks& hooks);

}  // namespace roce::client
