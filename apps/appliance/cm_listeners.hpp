// roce-appliance's rdma_cm listeners (--rdma-cm): what librdmacm's example servers do, for their
// unmodified clients. rping (TCP port space, 7174): the client SENDs its buffer's address, R_Key
// and length, the server RDMA READs it, SENDs a go-ahead, gets the client's second buffer the
// same way, RDMA WRITEs the data back into it and SENDs again, round after round, as
// `rping -s` does. ucmatose (TCP, 7471): once connected the server SENDs its messages, then
// takes as many from the client and disconnects, as cmatose's server does. udaddy (UDP port
// space, 7174): SIDR_REQ answered with a UD QP; the client's datagrams (SEND with immediate:
// its QPN) are received, then as many sent back, as udaddy's server does. rdma_server (TCP,
// 7471, or 7472 when ucmatose holds 7471): one 16-byte receive posted before the REP; once the
// client's 16 bytes are in, one 16-byte inline SEND back, and on its completion the server
// disconnects, as librdmacm's rdma_server does. perftest -R (TCP, 18515): a client's first
// request is its control channel (a CmChannel, served by a perftest session the appliance
// runs, as for the TCP exchange); its later requests, while that session runs, are its data QPs,
// accepted and handed to the session by their QPN (perftest's own server tells them apart by
// order too). Several clients of one host may run at once: a request of the host is a data QP
// of the oldest of its sessions between its two zeroed syncs, and a new client's control
// connection when none is there. Each connection's
// traffic is a driver on its QP's worker (a state machine on its CQ); the CM events are handled
// on one control thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/buffers.hpp"
#include "client/cm_channel.hpp"
#include "client/cm_service.hpp"
#include "client/connector.hpp"
#include "client/driver_set.hpp"

namespace roce::client {

struct CmListenOptions {
  bool rping = false;
  bool ucmatose = false;
  bool udaddy = false;
  bool rdma_server = false;
  bool perftest = false;               // perftest -R (ib_*_bw -R, ib_*_lat -R)
  std::uint16_t perftest_port = 18515; // perftest's default port (its -p)
  std::uint16_t rping_port = 7174;     // rping's default port
  std::uint16_t udaddy_port = 7174;    // udaddy's default port (UDP port space)
  std::uint16_t ucmatose_port = 7471;  // cmatose's default port
  std::uint16_t rdma_server_port = 7471;  // rdma_server's default (7472 by default beside ucmatose)
  std::uint32_t messages = 10;         // ucmatose's and udaddy's -C
  std::uint32_t message_size = 100;    // ucmatose's and udaddy's -S
  Nanos ud_idle = 30 * kSecond;        // a udaddy client that sends nothing this long is dropped
  std::size_t accept_queue = 64;
  std::uint32_t selective_repeat = 0;  // the reorder window accepted from a REQ that offers it (0: never)
  bool any() const { return rping || ucmatose || udaddy || rdma_server || perftest; }
};

// The data QPs the perftest -R clients of one host connected, until their sessions take them
// (by the client's QPN: QPNs are unique on the client's host, so a session finds its own even
// when two of the host's clients connected theirs at the same moment). Shared by the listener
// thread, which adds them, and the sessions, which take them. A UD QP resolved by SIDR names no
// client QP: bandwidth tests send none (it is added without one and taken in order, the adding
// session's first); latency and -b tests SEND it as immediate data once resolved.
class PerftestCmPool {
 public:
  struct Session;  // one client's state: open, syncs
  bool add(const Session* by, std::uint32_t remote_qpn, const LocalQp& qp);
  bool add_unnamed(const Session* by, const LocalQp& qp);
  std::optional<LocalQp> take(const Session* by, std::uint32_t remote_qpn, Nanos wait);
  std::vector<LocalQp> close(Session* s);

 private:
  friend class PerftestCmQps;
  struct Entry {
    LocalQp qp;
    const Session* by = nullptr;
  };
  mutable std::mutex mutex_;
  std::condition_variable added_;
  std::map<std::uint32_t, Entry> named_;
  std::deque<Entry> unnamed_;
};

struct PerftestCmPool::Session {
  bool open = true;
  unsigned syncs = 0;
};

// One perftest -R client's view of its host's pool: its session's handle.
class PerftestCmQps {
 public:
  explicit PerftestCmQps(std::shared_ptr<PerftestCmPool> pool = std::make_shared<PerftestCmPool>()) : pool_(std::move(pool)) {}
  // False once the session ended: the QP stays the caller's (to be destroyed).
  bool add(std::uint32_t remote_qpn, const LocalQp& qp) { return pool_->add(&session_, remote_qpn, qp); }
  bool add_unnamed(const LocalQp& qp) { return pool_->add_unnamed(&session_, qp); }
  // The QP the client connected from `remote_qpn` (else the oldest unnamed one), waiting up to
  // `wait` for it: a UD client's QPN message may still be on its way to the listener.
  std::optional<LocalQp> take(std::uint32_t remote_qpn, Nanos wait = 0) { return pool_->take(&session_, remote_qpn, wait); }
  // The session ended: what was added for it and never taken is returned (to be destroyed) and
  // nothing more is added for it.
  std::vector<LocalQp> close() { return pool_->close(&session_); }
  bool open() const;
  // The session answered one of perftest's two zeroed syncs: after the first and before the
  // second the client connects its data QPs, so a request of its host then is one of them.
  void synced();
  bool in_connect_window() const;
  const std::shared_ptr<PerftestCmPool>& pool() const { return pool_; }

 private:
  std::shared_ptr<PerftestCmPool> pool_;
  PerftestCmPool::Session session_;
};

// How roce-appliance serves a perftest -R client: the data QPs' parameters, and a session run on
// the control channel (with the QPs it will take) until the client leaves.
struct PerftestCmServe {
  QpParams qp;  // qp.type UD: the data QPs are resolved by SIDR (perftest -c UD -R)
  // UD: the client SENDs its QPN once resolved (perftest does for latency and -b tests); the
  // listener takes it before the session gets the QP.
  bool ud_qpn_message = false;
  std::function<void(std::shared_ptr<CmChannel>, std::shared_ptr<PerftestCmQps>)> start_session;
};

// "rping,ucmatose,udaddy,rdma_server" (or "all"), each name optionally with ":PORT" -> options;
// an unknown name, a bad port or two TCP listeners on one port is an error naming it.
Result<CmListenOptions> parse_cm_listeners(const std::string& list);

// Largest rping buffer (rping's RPING_BUFSIZE): a client advertising more is disconnected.
inline constexpr std::uint32_t kRpingMaxBuffer = 64 * 1024;

class CmListeners {
 public:
  // `shared`: a CM agent other services use too (roce-appliance with --nvmf-subsystem as
  // well); none: the listeners run their own.
  CmListeners(dp::Dataplane& dp, DriverSet& drivers, Connector& conn, CmListenOptions o, std::shared_ptr<CmService> shared = nullptr,
              PerftestCmServe perftest = {});
  ~CmListeners();
  CmListeners(const CmListeners&) = delete;
  CmListeners& operator=(const CmListeners&) = delete;

  Status start();
  // DREQ for every live connection (bounded wait), then every QP and region goes.
  void stop();

  struct Totals {
    std::uint64_t connections = 0;   // accepted
    std::uint64_t completed = 0;     // ended by a disconnect after doing their protocol's work
    std::uint64_t failed = 0;        // a work completion in error or a protocol violation
    std::uint64_t rping_rounds = 0;  // READ + WRITE rounds served
    std::uint64_t messages_received = 0;
    std::uint64_t messages_sent = 0;
    std::uint64_t datagrams = 0;     // udaddy: received and sent
    std::uint64_t rdma_server_exchanges = 0;  // rdma_server: 16 bytes in, 16 bytes out
    std::uint64_t perftest_sessions = 0;      // perftest -R control connections accepted
    std::uint64_t perftest_qps = 0;           // and their data QPs
  };
  Totals totals();
  // The CM's counters: live, or as they were when stop() ended the CM.
  std::map<std::string, std::uint64_t> cm_counters() { return cm_ ? cm_->counters() : final_counters_; }

  // The work of one connection, run on its QP's worker (public for the drivers' sake).
  struct Work;

 private:
  enum class Kind : std::uint8_t { Rping, Ucmatose, Udaddy, RdmaServer, Perftest, PerftestData };
  struct Conn {
    Kind kind = Kind::Rping;
    cm::CmId id = 0;
    std::string peer;
    LocalQp qp;
    MappedBuffer buf;
    const rdma::MemoryRegion* mr = nullptr;
    std::shared_ptr<Work> work;
    std::uint64_t driver = 0;
    bool disconnecting = false;
    rdma::AddressHandle* ah = nullptr;  // udaddy: the client's QP
    Nanos started = 0;
    // perftest -R: the control channel (its QP is the channel's) and the session's data QPs
    // (each data QP is the session's; Conn holds none).
    std::shared_ptr<CmChannel> channel;
    std::shared_ptr<PerftestCmQps> perftest;
  };
  void loop();
  void on_event(const cm::RdmaCmEvent& e);
  void on_request(const cm::RdmaCmEvent& e, Kind kind);
  void on_ud_request(const cm::RdmaCmEvent& e);
  void on_perftest_request(const cm::RdmaCmEvent& e);
  void on_perftest_ud_request(const cm::RdmaCmEvent& e, const std::shared_ptr<PerftestCmQps>& session);
  // UD data QPs whose client's QPN message is awaited (one receive posted on each).
  struct UdQpnWait {
    LocalQp qp;
    MappedBuffer buf;
    const rdma::MemoryRegion* mr = nullptr;
    std::shared_ptr<PerftestCmQps> session;
    std::string peer;
    Nanos deadline = 0;
  };
  void poll_ud_qpn_waits();
  void forget_perftest_session(const Conn& c);
  // An answered request's connection joins conns_; a failed accept is refused and freed.
  void keep(cm::CmId id, Conn c, const Status& accepted, const std::function<void(const std::string&)>& refuse);
  void finish(Conn& c);        // the driver goes, the work is counted
  void release(cm::CmId id);   // QP and region go (after TIMEWAIT, or on failure)

  dp::Dataplane& dp_;
  DriverSet& drivers_;
  Connector& conn_;
  CmListenOptions o_;
  std::shared_ptr<CmService> cm_;
  bool shared_cm_ = false;
  CmService::Channel channel_ = 0;
  PerftestCmServe perftest_;
  // perftest -R: the running sessions of each client host (by its IP), oldest first.
  std::map<std::string, std::vector<std::shared_ptr<PerftestCmQps>>> perftest_sessions_;
  std::shared_ptr<PerftestCmQps> connecting_session(const std::string& host) const;
  std::vector<UdQpnWait> ud_qpn_waits_;
  std::map<cm::ListenerId, Kind> listeners_;
  std::map<cm::CmId, Conn> conns_;  // control thread only
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex totals_mutex_;
  Totals totals_;
  std::map<std::string, std::uint64_t> final_counters_;
};

}  // namespace roce::client
