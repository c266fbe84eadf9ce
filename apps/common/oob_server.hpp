// The server side of the real tools' exchanges, for roce-appliance and roce-gen's server mode.
// It tells ibv_rc_pingpong (a 52-byte record first) from perftest (a version string first) by
// the first bytes, then answers perftest reactively: every QP record gets ours back (new QPs on
// the first round), every results field gets ours, "done" gets "done". That serves
// ib_write/read/send/atomic_bw and the _lat tests without being told which one runs.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/connector.hpp"
#include "apps/common/driver_set.hpp"
#include "apps/common/oob/records.hpp"
#include "apps/common/tcp.hpp"
#include "apps/common/traffic/drivers.hpp"

namespace roce::app {

struct ServerConfig {
  QpParams qp;
  LocalBuffer exposed;      // what peers WRITE, READ and run atomics on (its lkey is the rkey)
  LocalBuffer recv_region;  // every receive lands here (SEND sink/echo)
  std::uint32_t recv_depth = 256;
  bool echo_sends = false;  // echo every SEND (ib_send_lat, ibv_rc_pingpong); else sink
  // roce-gen's server knows its test: for WRITE latency it echoes writes of this size, using
  // the exposed buffer as [send half | landing half].
  std::optional<std::uint32_t> write_echo_size;
  Nanos pingpong_idle_timeout = 10 * kSecond;  // a pingpong QP is torn down after this quiet
  // The prelude a client sends as soon as it connects (perftest's version, sizes and MTU;
  // ibv_rc_pingpong's whole exchange) must be over within this, so a stalled or dripping client
  // gives its session up instead of holding it; real tools take milliseconds. Between perftest's
  // MTU and its first QP record the client registers its memory, and has oob_timeout_ms.
  int handshake_timeout_ms = 5'000;
  int oob_timeout_ms = 30'000;  // that set-up; and each record once the QPs are connected
};

struct SessionReport {
  std::string peer;
  std::string tool;  // "perftest" or "ibv_rc_pingpong"
  std::string remote_version;
  unsigned qps = 0;
  std::uint64_t received_messages = 0;
  std::uint64_t received_bytes = 0;
  ibv_mtu mtu = IBV_MTU_1024;
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
  Result<SessionReport> serve(TcpStream& tcp, const std::atomic<bool>& stop);

 private:
  struct ServedQp {
    LocalQp local;
    PerftestDest mine;
    std::unique_ptr<ReceiveServer> receiver;
    std::unique_ptr<WriteEcho> echo;
    std::uint64_t driver_id = 0;
  };
  Result<SessionReport> serve_pingpong(TcpStream& tcp, std::span<const std::byte> first, const std::atomic<bool>& stop);
  Result<SessionReport> serve_perftest(TcpStream& tcp, std::span<const std::byte> first, const std::atomic<bool>& stop);
  Result<ServedQp*> add_qp(const QpParams& p, const RemoteQp& peer, std::uint32_t out_reads, bool echo);
  void teardown(SessionReport& r);
  Result<SessionReport> serve_exchange(TcpStream& tcp, const std::atomic<bool>& stop);
  bool wait_input(TcpStream& tcp, const std::atomic<bool>& stop);
  // The time a read may take now: what is left of the handshake, or oob_timeout_ms after it.
  int read_timeout_ms() const;

  std::chrono::steady_clock::time_point handshake_deadline_{};
  bool handshake_done_ = false;

  Connector& conn_;
  DriverSet& drivers_;
  ServerConfig cfg_;
  std::vector<std::unique_ptr<ServedQp>> qps_;
  std::map<std::uint32_t, ServedQp*> by_remote_qpn_;
};

}  // namespace roce::app
