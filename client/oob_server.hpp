// The server side of the real tools' exchanges, for roce-appliance and roce-gen's server mode.
// It tells ibv_rc_pingpong (a 52-byte record first) from perftest (a version string first) by
// the first bytes, then answers perftest reactively: every QP record gets ours back (new QPs on
// the first round), every results field gets ours, "done" gets "done". That serves every
// perftest bandwidth test and ib_read_lat / ib_atomic_lat, whatever -q, -a or -n, without being
// told which one runs. Two latency tests need the server to act, which the exchange does not
// announce: ib_send_lat's server answers each SEND, ib_write_lat's writes first. ServedTest names
// them, as perftest's own server is named by its program.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/buffers.hpp"
#include "client/connector.hpp"
#include "client/driver_set.hpp"
#include "client/duplex_server.hpp"
#include "client/oob/perftest_flow.hpp"
#include "client/oob/perftest.hpp"
#include "client/oob/records.hpp"
#include "client/tcp.hpp"
#include "client/traffic/drivers.hpp"
#include "client/traffic/srq_feeder.hpp"

namespace roce::client {

// The perftest test a server serves, when it must know (ib_send_lat, ib_write_lat).
struct ServedTest {
  Verb verb = Verb::Write;
  Measure measure = Measure::Bandwidth;
  // ib_write_lat: the server writes `sizes` (-s, or -a's sweep) one after the other, `iters`
  // times each (-n); iters 0 answers each of the client's WRITEs until it leaves (one size only).
  std::vector<std::uint32_t> sizes{2};
  std::uint64_t iters = 0;
  // -b (bandwidth tests): the server runs `sizes` x `iters` toward the client too, each size
  // between the client's sync and its results (duplex_server.hpp).
  bool duplex = false;
  // -b with the client's -D (its run, and the margin left out at each end) or --run_infinitely
  // (our traffic runs until the client leaves): perftest's server is told them too.
  Nanos duration = 0;
  Nanos margin = 0;
  bool infinite = false;
};

struct ServerConfig {
  QpParams qp;              // qp.type: RC, UC or UD (perftest's -c: the exchange does not carry it)
  LocalBuffer exposed;      // what peers WRITE, READ and run atomics on (its lkey is the rkey)
  LocalBuffer recv_region;  // every receive lands here (SEND sink/echo)
  std::uint32_t recv_depth = 256;
  std::optional<ServedTest> test;
  // perftest's --use-srq on the server: a perftest session's QPs (TCP exchange) share one
  // receive queue of recv_depth receives (SEND tests; ib_write_lat takes no receives).
  bool use_srq = false;
  Nanos pingpong_idle_timeout = 10 * kSecond;  // a pingpong QP is torn down after this quiet
  // A perftest session with no TCP input and no packet on its QPs for this long has lost its
  // client (or the client waits for a server role we were not given): it ends with the reason.
  Nanos quiet_timeout = 15 * kSecond;
  // The prelude a client sends as soon as it connects (perftest's version, sizes and MTU;
  // ibv_rc_pingpong's whole exchange) must be over within this, so a stalled or dripping client
  // gives its session up instead of holding it; real tools take milliseconds. Between perftest's
  // MTU and its first QP record the client registers its memory, and has oob_timeout_ms.
  int handshake_timeout_ms = 5'000;
  int oob_timeout_ms = 30'000;  // that set-up; and each record once the QPs are connected
  // perftest -R: the exchange runs on the client's rdma_cm control connection (CmChannel) and
  // its data QPs connected through rdma_cm before their records came. This hands the session
  // the QP (at RTS) the client connected from QPN `remote_qpn`, which the session then owns;
  // nullopt when it connected none. A record naming QP 0 is one of perftest's two syncs around
  // those connections (its QP 0 record still zeroed): answered with a zeroed record.
  std::function<std::optional<LocalQp>(std::uint32_t remote_qpn)> cm_qp;
  // Told of each of those zeroed syncs as it comes, before it is answered: between the first
  // and the second the client connects its data QPs (a listener serving several clients of one
  // host tells their data QPs from a new client's control connection by it).
  std::function<void()> cm_sync;
  // Selective repeat (docs/loss.md): the reorder window we accept from a client that offers it
  // in its version record (a rocev2-dp client over the TCP exchange); 0 = go-back-N always.
  // rdma_cm (-R) QPs agree on it in their REQ/REP instead (CmServiceConfig).
  std::uint32_t selective_repeat = 0;
};

struct SessionReport {
  std::string peer;
  std::string tool;  // "perftest", "ibv_rc_pingpong" or "ibv_srq_pingpong"
  std::string remote_version;
  bool rdma_cm = false;              // perftest -R: the exchange and the QPs went through rdma_cm
  ibv_qp_type qp_type = IBV_QPT_RC;  // the data QPs' (perftest's -c)
  unsigned qps = 0;
  std::uint64_t received_messages = 0;
  std::uint64_t received_bytes = 0;
  std::uint64_t writes_sent = 0;  // ib_write_lat: the server's WRITEs
  // ibv_srq_pingpong, and perftest sessions under --use-srq: every QP took its receives from one
  // shared receive queue, refilled each time its limit event came (SrqFeeder).
  bool shared_srq = false;
  std::uint64_t srq_limit_events = 0;
  ibv_mtu mtu = IBV_MTU_1024;
  std::uint32_t selective_repeat = 0;  // the reorder window agreed in the TCP exchange; 0 = go-back-N
  // perftest sessions, for the printout perftest's server makes: each QP's records as
  // exchanged, the client's figures (RDMA bandwidth tests send them), when SENDs arrived, and
  // which operations the QPs answered (the exchange does not name the test).
  std::vector<std::pair<PerftestDest, PerftestDest>> records;  // ours, the client's
  std::optional<PerftestResults> client_results;
  std::optional<PerftestResults> server_results;  // -b: our own figures of the last size, as sent
  // -a -b: every size's pair (the client's, ours), in order: perftest's server prints a row each.
  std::vector<std::pair<PerftestResults, PerftestResults>> duplex_sizes;
  Nanos first_received = 0, last_received = 0;
  std::uint64_t read_responses = 0, atomic_responses = 0;
  // ib_write_lat: the server's own round trips, per size it completed.
  std::vector<std::pair<std::uint32_t, std::vector<Nanos>>> write_latency;
};

class OobServer {
 public:
  OobServer(Connector& conn, DriverSet& drivers, ServerConfig cfg) : conn_(conn), drivers_(drivers), cfg_(std::move(cfg)) {}
  // A session that ended in an error still owns QPs whose drivers run on the workers: they are
  // detached and destroyed here, before the receivers they point to go away.
  ~OobServer();
  OobServer(const OobServer&) = delete;
  OobServer& operator=(const OobServer&) = delete;

  // Serves one accepted connection to its end. `stop` aborts waiting. A session that fails
  // before its handshake is done tells the client why (oob/refusal.hpp); errors name the peer.
  Result<SessionReport> serve(OobChannel& tcp, const std::atomic<bool>& stop);

 private:
  struct ServedQp {
    LocalQp local;
    PerftestDest mine;
    PerftestDest peer;
    std::unique_ptr<ReceiveServer> receiver;  // SEND tests and pingpong
    std::unique_ptr<WriteLatency> writer;     // ib_write_lat, one size at a time
    rdma::AddressHandle* ah = nullptr;              // UD: the client's QP, for answers
    std::uint64_t driver_id = 0;
  };
  Result<SessionReport> serve_pingpong(OobChannel& tcp, std::span<const std::byte> first, const std::atomic<bool>& stop);
  Result<SessionReport> serve_perftest(OobChannel& tcp, std::span<const std::byte> first, const std::atomic<bool>& stop);
  Result<ServedQp*> add_qp(const QpParams& p, const PerftestDest& peer, std::uint32_t out_reads, bool echo, int worker = -1);
  // ibv_srq_pingpong: the session's SRQ on `worker`, stocked, with its feeder polled there.
  Status start_shared_srq(unsigned worker);
  // ib_write_lat: starts the next size's WRITEs on QP 0 when the previous one is done; false
  // when every size is done.
  Result<bool> advance_write_latency(ServedQp& q, const PerftestDest& peer, SessionReport& r);
  Result<bool> finish_write_latency(ServedQp& q, const PerftestDest& peer, SessionReport& r);
  std::uint64_t packets_received();
  // -b: the server's own traffic of the sweep's `size_index`-th size on every QP, toward the client.
  Status start_duplex(std::uint32_t size_index);
  void teardown(SessionReport& r);
  Result<SessionReport> serve_exchange(OobChannel& tcp, const std::atomic<bool>& stop);
  bool wait_input(OobChannel& tcp, const std::atomic<bool>& stop, int ms = 200);
  // The time a read may take now: what is left of the handshake, or oob_timeout_ms after it.
  int read_timeout_ms() const;
  // The Q_Key of a UD client's QP: rdma_cm's RDMA_UDP_QKEY under -R, else perftest's.
  std::uint32_t ud_qkey() const;

  std::chrono::steady_clock::time_point handshake_deadline_{};
  bool handshake_done_ = false;
  bool refusal_sent_ = false;  // the client already knows why it is refused

  Connector& conn_;
  DriverSet& drivers_;
  ServerConfig cfg_;
  std::vector<std::unique_ptr<ServedQp>> qps_;
  std::map<std::uint32_t, ServedQp*> by_remote_qpn_;
  // ib_write_lat's [send | landing] area of the session, sized for its largest message.
  MappedBuffer write_area_;
  const rdma::MemoryRegion* write_mr_ = nullptr;
  std::uint32_t write_max_ = 0;
  std::size_t write_size_index_ = 0;
  // -b: the server's own traffic, started at the sync before each size.
  std::unique_ptr<DuplexTraffic> duplex_;
  // ibv_srq_pingpong's shared receive queue, gone after the QPs on it.
  std::unique_ptr<SrqFeeder> srq_feeder_;
  unsigned srq_worker_ = 0;
  std::uint64_t srq_driver_id_ = 0;
};

}  // namespace roce::client
