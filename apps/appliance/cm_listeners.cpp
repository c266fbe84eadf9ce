#include "apps/appliance/cm_listeners.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>

#include "client/rping_info.hpp"

namespace roce::client {

namespace {

constexpr std::size_t kRpingRecv = 0, kRpingSend = 64, kRpingData = 4096;
// rdma_server's two 16-byte messages: the receive, then the (inline) send.
constexpr std::uint32_t kRdmaServerMsg = 16;
constexpr std::uint32_t kGrhBytes = 40;  // a UD receive starts with the GRH
constexpr int kBufferAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

std::string peer_of(const cm::RdmaCmEvent& e) { return e.addressing ? proto::to_string(e.addressing->src) : "?"; }

}  // namespace

Result<CmListenOptions> parse_cm_listeners(const std::string& list) {
  CmListenOptions o;
  bool server_port_given = false;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    std::optional<std::uint16_t> port;
    if (colon != std::string::npos) {
      const std::string digits = item.substr(colon + 1);
      unsigned long v = 0;
      std::size_t used = 0;
      try {
        v = std::stoul(digits, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (digits.empty() || used != digits.size() || v == 0 || v > 65535)
        return make_error(EINVAL, "--rdma-cm: '" + item + "': the port must be 1..65535");
      port = static_cast<std::uint16_t>(v);
    }
    if (name == "all" && port) return make_error(EINVAL, "--rdma-cm: 'all' takes no port");
    if (name == "rping") o.rping = true, o.rping_port = port.value_or(o.rping_port);
    else if (name == "ucmatose") o.ucmatose = true, o.ucmatose_port = port.value_or(o.ucmatose_port);
    else if (name == "udaddy") o.udaddy = true, o.udaddy_port = port.value_or(o.udaddy_port);
    else if (name == "rdma_server") o.rdma_server = true, o.rdma_server_port = port.value_or(o.rdma_server_port), server_port_given |= port.has_value();
    else if (name == "perftest") o.perftest = true, o.perftest_port = port.value_or(o.perftest_port);
    else if (name == "all") o.rping = o.ucmatose = o.udaddy = o.rdma_server = true;
    else return make_error(EINVAL, "--rdma-cm: unknown listener '" + name + "' (rping, ucmatose, udaddy, rdma_server, perftest or all)");
  }
  // rdma_server and ucmatose share 7471 as their default: beside ucmatose, rdma_server moves to 7472.
  if (o.rdma_server && o.ucmatose && !server_port_given && o.rdma_server_port == o.ucmatose_port)
    o.rdma_server_port = static_cast<std::uint16_t>(o.ucmatose_port == 7472 ? 7473 : 7472);
  const auto clash = [](bool a, std::uint16_t pa, bool b, std::uint16_t pb) { return a && b && pa == pb; };
  if (clash(o.rping, o.rping_port, o.ucmatose, o.ucmatose_port) ||
      clash(o.rping, o.rping_port, o.rdma_server, o.rdma_server_port) ||
      clash(o.ucmatose, o.ucmatose_port, o.rdma_server, o.rdma_server_port) ||
      clash(o.perftest, o.perftest_port, o.rping, o.rping_port) ||
      clash(o.perftest, o.perftest_port, o.ucmatose, o.ucmatose_port) ||
      clash(o.perftest, o.perftest_port, o.rdma_server, o.rdma_server_port))
    return make_error(EINVAL, "--rdma-cm: two listeners on one TCP port space port (give one NAME:PORT)");
  return o;
}

// One connection's traffic, stepped on its QP's worker once per loop iteration. The control
// thread reads the atomics only.
struct CmListeners::Work {
  enum class Phase : std::uint8_t { WantRead, Reading, WantWrite, Writing };
  enum class Proto : std::uint8_t { Rping, Cmatose, Udaddy, RdmaServer };
  Proto proto = Proto::Rping;
  LocalQp qp;
  std::byte* base = nullptr;
  std::uint32_t lkey = 0;
  // rping
  Phase phase = Phase::WantRead;
  std::uint32_t read_len = 0;
  // ucmatose
  std::uint32_t messages = 0, size = 0;
  bool sent_all = false;
  std::uint32_t sent = 0, received = 0;
  std::atomic<bool> go{false};  // ESTABLISHED: the server's SENDs may start
  // udaddy
  rdma::AddressHandle* ah = nullptr;
  std::uint32_t remote_qpn = 0;
  std::uint32_t qkey = cm::kRdmaUdpQkey;

  std::atomic<bool> done{false}, failed{false};
  std::string error;  // written before `failed` is set
  std::atomic<std::uint64_t> rounds{0}, rx{0}, tx{0};

  void fail(std::string why) {
    if (failed.load()) return;
    error = std::move(why);
    failed.store(true);
  }
  bool post_recv(rdma::Engine& e, std::size_t off, std::uint32_t len, std::uint64_t id) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(base + off), len, lkey};
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    const int rc = e.post_recv(qp.qp, &wr, &bad);
    if (rc) fail("post_recv: " + std::string(std::strerror(rc)));
    return rc == 0;
  }
  bool post_datagram(rdma::Engine& e, std::size_t off, std::uint32_t len) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(base + off), len, lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    // udaddy's datagrams carry the sender's QPN as their immediate (network order).
    const proto::Be32 imm = proto::Be32::of(qp.qpn);
    std::memcpy(&wr.imm_data, imm.bytes.data(), imm.bytes.size());
    wr.wr.ud.ah = &ah->base;
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr* bad = nullptr;
    const int rc = e.post_send(qp.qp, &wr, &bad);
    if (rc) fail("post_send: " + std::string(std::strerror(rc)));
    return rc == 0;
  }
  bool post_send(rdma::Engine& e, ibv_wr_opcode op, std::size_t off, std::uint32_t len, std::uint64_t raddr = 0,
                 std::uint32_t rkey = 0, unsigned flags = 0) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(base + off), len, lkey};
    ibv_send_wr wr{};
    wr.wr_id = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED | flags;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    const int rc = e.post_send(qp.qp, &wr, &bad);
    if (rc) fail("post_send: " + std::string(std::strerror(rc)));
    return rc == 0;
  }

  void step(rdma::Engine& e) {
    if (failed.load(std::memory_order_relaxed)) return;
    if (proto == Proto::Cmatose && go.load(std::memory_order_relaxed) && !sent_all) {
      sent_all = true;
      for (std::uint32_t i = 0; i < messages; ++i)
        if (!post_send(e, IBV_WR_SEND, std::size_t{messages} * size + std::size_t{i} * size, size)) return;
    }
    ibv_wc wc[16];
    const int n = e.poll_cq(qp.cq, 16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return fail(std::string("work completion: ") + ibv_wc_status_str(wc[i].status));
      switch (proto) {
        case Proto::Rping: on_rping(e, wc[i]); break;
        case Proto::Cmatose: on_cmatose(wc[i]); break;
        case Proto::Udaddy: on_udaddy(e, wc[i]); break;
        case Proto::RdmaServer: on_rdma_server(e, wc[i]); break;
      }
      if (failed.load(std::memory_order_relaxed)) return;
    }
  }

  // rping_test_server's loop, driven by completions.
  void on_rping(rdma::Engine& e, const ibv_wc& wc) {
    switch (wc.opcode) {
      case IBV_WC_RECV: {
        if (wc.byte_len != sizeof(RpingInfo)) return fail("received " + std::to_string(wc.byte_len) + " bytes, not rping's 16");
        RpingInfo info;
        std::memcpy(&info, base + kRpingRecv, sizeof info);
        if (!post_recv(e, kRpingRecv, sizeof(RpingInfo), 0)) return;
        const std::uint32_t len = info.size.get();
        if (phase == Phase::WantRead) {
          if (len == 0 || len > kRpingMaxBuffer) return fail("client buffer of " + std::to_string(len) + " bytes (1.." + std::to_string(kRpingMaxBuffer) + ")");
          read_len = len;
          phase = Phase::Reading;
          post_send(e, IBV_WR_RDMA_READ, kRpingData, len, info.buf.get(), info.rkey.get());
        } else if (phase == Phase::WantWrite) {
          // What rping writes back: the string it read, with its terminating zero.
          const void* nul = std::memchr(base + kRpingData, 0, read_len);
          std::uint32_t w = nul ? static_cast<std::uint32_t>(static_cast<const std::byte*>(nul) - (base + kRpingData)) + 1 : read_len;
          if (w > len) w = len;
          phase = Phase::Writing;
          post_send(e, IBV_WR_RDMA_WRITE, kRpingData, w, info.buf.get(), info.rkey.get());
        } else {
          fail("client sent its buffer while the server's RDMA operation was running");
        }
        return;
      }
      case IBV_WC_RDMA_READ:
        phase = Phase::WantWrite;
        post_send(e, IBV_WR_SEND, kRpingSend, sizeof(RpingInfo));
        return;
      case IBV_WC_RDMA_WRITE:
        phase = Phase::WantRead;
        rounds.fetch_add(1, std::memory_order_relaxed);
        post_send(e, IBV_WR_SEND, kRpingSend, sizeof(RpingInfo));
        return;
      default:
        return;  // the go-ahead SENDs
    }
  }

  // udaddy's server: every datagram in, then as many back to the QPN their immediate names.
  void on_udaddy(rdma::Engine& e, const ibv_wc& wc) {
    if (wc.opcode == IBV_WC_RECV) {
      ++received;
      rx.fetch_add(1, std::memory_order_relaxed);
      if (wc.wc_flags & IBV_WC_WITH_IMM) {
        proto::Be32 imm;
        std::memcpy(imm.bytes.data(), &wc.imm_data, imm.bytes.size());
        remote_qpn = imm.get();
      } else {
        remote_qpn = wc.src_qp;
      }
      if (received == messages && !sent_all) {
        sent_all = true;
        const std::size_t out = std::size_t{messages} * (size + kGrhBytes);
        for (std::uint32_t i = 0; i < messages; ++i)
          if (!post_datagram(e, out, size)) return;
      }
    } else if (wc.opcode == IBV_WC_SEND) {
      ++sent;
      tx.fetch_add(1, std::memory_order_relaxed);
      if (sent == messages) done.store(true);
    }
  }

  // rdma_server: its one receive completes, its one inline SEND goes out; once that completes the
  // server disconnects (done). What it sends is its 16-byte send buffer, untouched (zeros).
  void on_rdma_server(rdma::Engine& e, const ibv_wc& wc) {
    if (wc.opcode == IBV_WC_RECV) {
      if (++received > 1) return fail("a second message; rdma_server takes one");
      rx.fetch_add(1, std::memory_order_relaxed);
      post_send(e, IBV_WR_SEND, kRdmaServerMsg, kRdmaServerMsg, 0, 0, IBV_SEND_INLINE);
    } else if (wc.opcode == IBV_WC_SEND) {
      tx.fetch_add(1, std::memory_order_relaxed);
      done.store(true);
    }
  }

  void on_cmatose(const ibv_wc& wc) {
    if (wc.opcode == IBV_WC_RECV) {
      ++received;
      rx.fetch_add(1, std::memory_order_relaxed);
    } else if (wc.opcode == IBV_WC_SEND) {
      ++sent;
      tx.fetch_add(1, std::memory_order_relaxed);
    }
    if (sent == messages && received == messages) done.store(true);
  }
};

bool PerftestCmPool::add(const Session* by, std::uint32_t remote_qpn, const LocalQp& qp) {
  {
    std::lock_guard lock(mutex_);
    if (!by->open) return false;
    named_[remote_qpn] = Entry{qp, by};
  }
  added_.notify_all();
  return true;
}

bool PerftestCmPool::add_unnamed(const Session* by, const LocalQp& qp) {
  {
    std::lock_guard lock(mutex_);
    if (!by->open) return false;
    unnamed_.push_back(Entry{qp, by});
  }
  added_.notify_all();
  return true;
}

std::optional<LocalQp> PerftestCmPool::take(const Session* by, std::uint32_t remote_qpn, Nanos wait) {
  std::unique_lock lock(mutex_);
  std::optional<LocalQp> got;
  const auto found = [&] {
    if (const auto it = named_.find(remote_qpn); it != named_.end()) {
      got = it->second.qp;
      named_.erase(it);
    } else if (!unnamed_.empty()) {
      auto it = std::find_if(unnamed_.begin(), unnamed_.end(), [&](const Entry& e) { return e.by == by; });
      if (it == unnamed_.end()) it = unnamed_.begin();
      got = it->qp;
      unnamed_.erase(it);
    }
    return got.has_value() || !by->open;
  };
  added_.wait_for(lock, std::chrono::nanoseconds(wait), found);
  return got;
}

std::vector<LocalQp> PerftestCmPool::close(Session* s) {
  std::vector<LocalQp> left;
  {
    std::lock_guard lock(mutex_);
    s->open = false;
    for (auto it = named_.begin(); it != named_.end();) {
      if (it->second.by == s) {
        left.push_back(it->second.qp);
        it = named_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = unnamed_.begin(); it != unnamed_.end();) {
      if (it->by == s) {
        left.push_back(it->qp);
        it = unnamed_.erase(it);
      } else {
        ++it;
      }
    }
  }
  added_.notify_all();
  return left;
}

bool PerftestCmQps::open() const {
  std::lock_guard lock(pool_->mutex_);
  return session_.open;
}

void PerftestCmQps::synced() {
  std::lock_guard lock(pool_->mutex_);
  ++session_.syncs;
}

bool PerftestCmQps::in_connect_window() const {
  std::lock_guard lock(pool_->mutex_);
  return session_.open && session_.syncs == 1;
}

CmListeners::CmListeners(dp::Dataplane& dp, DriverSet& drivers, Connector& conn, CmListenOptions o, std::shared_ptr<CmService> shared,
                         PerftestCmServe perftest)
    : dp_(dp), drivers_(drivers), conn_(conn), o_(o), cm_(std::move(shared)), shared_cm_(cm_ != nullptr), perftest_(std::move(perftest)) {}

CmListeners::~CmListeners() { stop(); }

Status CmListeners::start() {
  if (o_.messages == 0 || o_.messages > 4096) return make_error(EINVAL, "--cm-messages must be 1..4096");
  if (o_.message_size == 0 || o_.message_size > 65536) return make_error(EINVAL, "--cm-message-size must be 1..65536");
  if (o_.udaddy && o_.message_size > 4096)
    return make_error(EINVAL, "--cm-message-size above 4096 does not fit a UD datagram (udaddy)");
  if (!cm_) {
    CmServiceConfig cc;
    cc.selective_repeat = o_.selective_repeat;
    cm_ = std::make_shared<CmService>(dp_, drivers_, cc);
  }
  channel_ = shared_cm_ ? cm_->open_channel() : 0;
  const auto add = [&](Kind k, std::uint16_t port) -> Status {
    auto l = cm_->listen(proto::RdmaPortSpace::Tcp, port, o_.accept_queue, channel_);
    if (!l) return l.error();
    listeners_[*l] = k;
    return {};
  };
  if (o_.rping)
    if (Status s = add(Kind::Rping, o_.rping_port); !s) return s;
  if (o_.ucmatose)
    if (Status s = add(Kind::Ucmatose, o_.ucmatose_port); !s) return s;
  if (o_.rdma_server)
    if (Status s = add(Kind::RdmaServer, o_.rdma_server_port); !s) return s;
  if (o_.perftest) {
    if (Status s = add(Kind::Perftest, o_.perftest_port); !s) return s;
    // perftest -c UD -R resolves its data QPs by SIDR in the UDP port space, on the same port.
    auto l = cm_->listen(proto::RdmaPortSpace::Udp, o_.perftest_port, o_.accept_queue, channel_);
    if (!l) return l.error();
    listeners_[*l] = Kind::Perftest;
  }
  if (o_.udaddy) {
    auto l = cm_->listen(proto::RdmaPortSpace::Udp, o_.udaddy_port, o_.accept_queue, channel_);
    if (!l) return l.error();
    listeners_[*l] = Kind::Udaddy;
  }
  thread_ = std::thread([this] { loop(); });
  return {};
}

void CmListeners::stop() {
  if (!cm_) return;
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (shared_cm_) {
    // Only these listeners' connections: the agent's other users keep theirs.
    std::vector<cm::CmId> ids;
    for (const auto& [id, c] : conns_) ids.push_back(id);
    cm_->disconnect_ids(ids, CmServiceConfig{}.stop_wait);
    cm_->close_channel(channel_);
  } else {
    cm_->stop();  // DREQ for every live connection
  }
  for (auto& [id, c] : conns_) finish(c);
  while (!conns_.empty()) release(conns_.begin()->first);
  for (UdQpnWait& w : ud_qpn_waits_) {
    (void)conn_.destroy(w.qp);
    (void)dp_.memory().deregister(w.mr->key);
  }
  ud_qpn_waits_.clear();
  final_counters_ = cm_->counters();
  cm_.reset();
}

void CmListeners::loop() {
  while (!stop_) {
    for (const auto& e : cm_->wait_events(50 * kMilli, &stop_, channel_)) on_event(e);
    std::vector<cm::CmId> ud_ended;
    const Nanos now = dp_.now();
    for (auto& [id, c] : conns_) {
      if (c.kind == Kind::Udaddy) {
        // A datagram service has no connection to end: done, failed or idle, it goes.
        if (!c.work) continue;
        if (!c.work->done.load() && !c.work->failed.load() && now - c.started > o_.ud_idle)
          c.work->fail("no datagrams within " + std::to_string(o_.ud_idle / kSecond) + " s");
        if (c.work->done.load() || c.work->failed.load()) ud_ended.push_back(id);
        continue;
      }
      if (c.kind == Kind::Perftest) {
        // The session is over (the client left, or it failed): the control connection goes too.
        if (!c.disconnecting && c.perftest && !c.perftest->open()) {
          c.disconnecting = true;
          (void)cm_->disconnect(id);
        }
        continue;
      }
      if (c.disconnecting || !c.work) continue;
      // A finished cmatose exchange, or a connection whose traffic failed: the server disconnects.
      if (c.work->failed.load() || c.work->done.load()) {
        c.disconnecting = true;
        (void)cm_->disconnect(id);
      }
    }
    for (cm::CmId id : ud_ended) {
      finish(conns_[id]);
      release(id);
    }
    poll_ud_qpn_waits();
  }
}

void CmListeners::on_event(const cm::RdmaCmEvent& e) {
  using T = cm::RdmaCmEventType;
  if (e.type == T::ConnectRequest) {
    const auto l = listeners_.find(e.listener);
    if (l == listeners_.end()) {
      (void)cm_->reject(e.id);
      return;
    }
    on_request(e, l->second);
    return;
  }
  const auto it = conns_.find(e.id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  switch (e.type) {
    case T::Established:
      if (c.work) c.work->go.store(true);
      break;
    case T::Disconnected:
      if (c.channel) c.channel->set_disconnected();
      if (c.kind == Kind::Perftest) forget_perftest_session(c);
      finish(c);
      break;
    case T::TimewaitExit:
    case T::Rejected:
    case T::Unreachable:
    case T::ConnectError:
      if (c.channel) c.channel->set_disconnected();
      if (c.kind == Kind::Perftest) forget_perftest_session(c);
      finish(c);
      release(e.id);
      break;
    default:
      break;
  }
}

void CmListeners::on_request(const cm::RdmaCmEvent& e, Kind kind) {
  const auto* req = std::get_if<cm::ReqInfo>(&e.detail);
  const std::string peer = peer_of(e);
  const auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "roce-appliance: rdma_cm request from %s refused: %s\n", peer.c_str(), why.c_str());
    (void)cm_->reject(e.id);
  };
  if (kind == Kind::Udaddy) return on_ud_request(e);
  if (kind == Kind::Perftest) return on_perftest_request(e);
  if (req == nullptr || e.ud) return refuse("not a connected (RC) request");
  if (req->transport != proto::CmTransport::Rc) return refuse("only RC connections are served");
  Conn c;
  c.kind = kind;
  c.id = e.id;
  c.peer = peer;
  const bool rping = kind == Kind::Rping;
  const bool rdma_server = kind == Kind::RdmaServer;
  const std::size_t bytes = rping         ? kRpingData + kRpingMaxBuffer
                            : rdma_server ? std::size_t{2} * kRdmaServerMsg
                                          : std::size_t{2} * o_.messages * o_.message_size;
  auto buf = MappedBuffer::anonymous(bytes);
  if (!buf) return refuse(buf.error().message);
  c.buf = std::move(*buf);
  auto mr = conn_.register_memory(c.buf.data(), c.buf.size(), kBufferAccess);
  if (!mr) return refuse(mr.error().message);
  c.mr = *mr;
  QpParams qp;
  qp.send_depth = rping ? 16 : rdma_server ? 1 : o_.messages + 4;
  qp.recv_depth = rping ? 4 : rdma_server ? 1 : o_.messages;
  if (rdma_server) qp.max_inline = kRdmaServerMsg;  // rdma_server asks for 16 bytes inline
  auto q = conn_.create(qp);
  if (!q) {
    (void)dp_.memory().deregister(c.mr->key);
    return refuse(q.error().message);
  }
  c.qp = *q;
  auto work = std::make_shared<Work>();
  work->proto = rping ? Work::Proto::Rping : rdma_server ? Work::Proto::RdmaServer : Work::Proto::Cmatose;
  work->qp = c.qp;
  work->base = c.buf.data();
  work->lkey = c.mr->lkey();
  work->messages = o_.messages;
  work->size = o_.message_size;
  // Receives first (the client SENDs as soon as it is connected), then RTR/RTS, then the REP.
  const bool posted = dp_.call(c.qp.worker, [&](rdma::Engine& eng) {
    if (rping) return work->post_recv(eng, kRpingRecv, sizeof(RpingInfo), 0);
    if (rdma_server) return work->post_recv(eng, 0, kRdmaServerMsg, 0);
    for (std::uint32_t i = 0; i < o_.messages; ++i)
      if (!work->post_recv(eng, std::size_t{i} * o_.message_size, o_.message_size, i)) return false;
    return true;
  });
  const cm::CmQpAttrs a = cm::passive_qp_attrs(*req, c.qp.psn, cm_->qp_limits());
  Status s = posted ? cm_->connect_qp(c.qp, IBV_QPT_RC, a) : make_error(EIO, work->error);
  if (s) {
    Work* w = work.get();
    c.work = std::move(work);
    c.driver = drivers_.add(c.qp.worker, [w](rdma::Engine& eng, Nanos) { w->step(eng); });
    cm::AcceptParams ap;
    ap.local_qpn = c.qp.qpn;
    ap.starting_psn = c.qp.psn;
    ap.responder_resources = a.rtr.max_dest_rd_atomic;
    ap.initiator_depth = a.rts.max_rd_atomic;
    ap.ece = a.rep_ece;
    s = cm_->accept(e.id, ap);
  }
  keep(e.id, std::move(c), s, refuse);
}

void CmListeners::keep(cm::CmId id, Conn c, const Status& accepted,
                       const std::function<void(const std::string&)>& refuse) {
  // The connection is kept even when its accept failed, so that finish/release free what it holds.
  Conn& kept = conns_[id] = std::move(c);
  if (!accepted) {
    refuse(accepted.error().message);
    finish(kept);
    release(id);
    return;
  }
  std::lock_guard lock(totals_mutex_);
  ++totals_.connections;
}

void CmListeners::on_ud_request(const cm::RdmaCmEvent& e) {
  const std::string peer = peer_of(e);
  const auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "roce-appliance: udaddy request from %s refused: %s\n", peer.c_str(), why.c_str());
    (void)cm_->reject(e.id);
  };
  if (!e.ud || !e.addressing) return refuse("not a UD (SIDR) request with rdma_cm addresses");
  const rdma::IpAddress client = e.addressing->src;
  if (!dp_.resolve(client, 3 * kSecond)) return refuse("no ARP or neighbour answer");
  Conn c;
  c.kind = Kind::Udaddy;
  c.id = e.id;
  c.peer = peer;
  c.started = dp_.now();
  const std::uint32_t slot = o_.message_size + kGrhBytes;
  auto buf = MappedBuffer::anonymous(std::size_t{o_.messages} * slot + o_.message_size);
  if (!buf) return refuse(buf.error().message);
  c.buf = std::move(*buf);
  auto mr = conn_.register_memory(c.buf.data(), c.buf.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return refuse(mr.error().message);
  c.mr = *mr;
  QpParams qp;
  qp.type = IBV_QPT_UD;
  qp.send_depth = o_.messages + 4;
  qp.recv_depth = o_.messages;
  auto q = conn_.create(qp);
  if (!q) {
    (void)dp_.memory().deregister(c.mr->key);
    return refuse(q.error().message);
  }
  c.qp = *q;
  auto work = std::make_shared<Work>();
  work->proto = Work::Proto::Udaddy;
  work->qp = c.qp;
  work->base = c.buf.data();
  work->lkey = c.mr->lkey();
  work->messages = o_.messages;
  work->size = o_.message_size;
  Status s = cm_->ready_ud_qp(c.qp);
  if (s) {
    auto ah = dp_.call(c.qp.worker, [&](rdma::Engine& eng) {
      ibv_ah_attr a{};
      a.is_global = 1;
      a.grh.dgid = rdma::gid_from_ip(client);
      a.grh.hop_limit = 64;
      a.port_num = 1;
      return eng.create_ah(c.qp.pd, a);
    });
    if (ah) c.ah = *ah;
    else s = ah.error();
  }
  if (s) {
    work->ah = c.ah;
    const bool posted = dp_.call(c.qp.worker, [&](rdma::Engine& eng) {
      for (std::uint32_t i = 0; i < o_.messages; ++i)
        if (!work->post_recv(eng, std::size_t{i} * slot, slot, i)) return false;
      return true;
    });
    if (!posted) s = make_error(EIO, work->error);
  }
  if (s) {
    Work* w = work.get();
    c.work = std::move(work);
    c.driver = drivers_.add(c.qp.worker, [w](rdma::Engine& eng, Nanos) { w->step(eng); });
    s = cm_->accept_ud(e.id, c.qp.qpn);
  }
  keep(e.id, std::move(c), s, refuse);
}

void CmListeners::forget_perftest_session(const Conn& c) {
  // The host's next request opens a new session: its control connection is over, even if the
  // session has not noticed yet (a client run again at once must not look like a data QP).
  const auto it = perftest_sessions_.find(c.peer);
  if (it == perftest_sessions_.end()) return;
  std::erase(it->second, c.perftest);
  if (it->second.empty()) perftest_sessions_.erase(it);
}

std::shared_ptr<PerftestCmQps> CmListeners::connecting_session(const std::string& host) const {
  const auto it = perftest_sessions_.find(host);
  if (it == perftest_sessions_.end()) return nullptr;
  for (const auto& s : it->second)
    if (s->in_connect_window()) return s;
  return nullptr;
}

void CmListeners::on_perftest_request(const cm::RdmaCmEvent& e) {
  const auto* req = std::get_if<cm::ReqInfo>(&e.detail);
  const std::string peer = peer_of(e);
  const auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "roce-appliance: perftest -R request from %s refused: %s\n", peer.c_str(), why.c_str());
    (void)cm_->reject(e.id);
  };
  const std::shared_ptr<PerftestCmQps> session = connecting_session(peer);
  if (e.ud) {
    if (!session)
      return refuse("a SIDR request (UD data QP) with no session of this host between its two syncs (its control connection comes first)");
    return on_perftest_ud_request(e, session);
  }
  if (req == nullptr) return refuse("not a connection request");
  if (req->transport != proto::CmTransport::Rc) return refuse("only RC connections are served (perftest -R refuses UC)");
  Conn c;
  c.id = e.id;
  c.peer = peer;
  if (session) {
    // A data QP of the client whose session connects them (rdma_cm_connection_request_handler).
    c.kind = Kind::PerftestData;
    c.perftest = session;
    auto q = conn_.create(perftest_.qp);
    if (!q) return refuse(q.error().message);
    const cm::CmQpAttrs a = cm::passive_qp_attrs(*req, q->psn, cm_->qp_limits());
    Status s = cm_->connect_qp(*q, IBV_QPT_RC, a);
    if (s) {
      // The session may take it as soon as the client has the REP: it is there before.
      if (!c.perftest->add(req->remote_qpn, *q)) s = make_error(ECANCELED, "the client's session has ended");
    }
    if (s) {
      cm::AcceptParams ap;
      ap.local_qpn = q->qpn;
      ap.starting_psn = q->psn;
      ap.responder_resources = a.rtr.max_dest_rd_atomic;
      ap.initiator_depth = a.rts.max_rd_atomic;
      ap.ece = a.rep_ece;
      s = cm_->accept(e.id, ap);
      if (!s) (void)c.perftest->take(req->remote_qpn);
    }
    if (!s) (void)conn_.destroy(*q);
    if (s) {
      std::lock_guard lock(totals_mutex_);
      ++totals_.perftest_qps;
    }
    return keep(e.id, std::move(c), s, refuse);
  }
  // The client's control channel (rdma_server_connect): its exchange runs in a session.
  if (!perftest_.start_session) return refuse("this listener runs no perftest sessions");
  const std::string endpoint = peer + ":" + (e.addressing ? std::to_string(e.addressing->src_port) : std::string("?"));
  auto ch = CmChannel::create(conn_, peer, endpoint);
  if (!ch) return refuse(ch.error().message);
  c.kind = Kind::Perftest;
  c.channel = std::move(*ch);
  const auto host = perftest_sessions_.find(peer);
  c.perftest = host != perftest_sessions_.end() && !host->second.empty()
                   ? std::make_shared<PerftestCmQps>(host->second.front()->pool())
                   : std::make_shared<PerftestCmQps>();
  const cm::CmQpAttrs a = cm::passive_qp_attrs(*req, c.channel->qp().psn, cm_->qp_limits());
  Status s = cm_->connect_qp(c.channel->qp(), IBV_QPT_RC, a);
  if (s) {
    cm::AcceptParams ap;
    ap.local_qpn = c.channel->qp().qpn;
    ap.starting_psn = c.channel->qp().psn;
    ap.responder_resources = a.rtr.max_dest_rd_atomic;
    ap.initiator_depth = a.rts.max_rd_atomic;
    ap.ece = a.rep_ece;
    s = cm_->accept(e.id, ap);
  }
  if (s) {
    perftest_sessions_[peer].push_back(c.perftest);
    perftest_.start_session(c.channel, c.perftest);
    std::lock_guard lock(totals_mutex_);
    ++totals_.perftest_sessions;
  }
  keep(e.id, std::move(c), s, refuse);
}

void CmListeners::on_perftest_ud_request(const cm::RdmaCmEvent& e, const std::shared_ptr<PerftestCmQps>& session) {
  const std::string peer = peer_of(e);
  const auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "roce-appliance: perftest -R UD request from %s refused: %s\n", peer.c_str(), why.c_str());
    (void)cm_->reject(e.id);
  };
  if (perftest_.qp.type != IBV_QPT_UD)
    return refuse("the client runs -c UD; this server's sessions are " + std::string(perftest_.qp.type == IBV_QPT_UC ? "UC" : "RC") +
                  " (serve it with -c UD)");
  auto q = conn_.create(perftest_.qp);
  if (!q) return refuse(q.error().message);
  UdQpnWait w;
  w.qp = *q;
  w.session = session;
  w.peer = peer;
  // rdma_cm_connection_request_handler: the QP takes rdma_cm's Q_Key; for latency and -b tests
  // one receive (GRH and 4 bytes) is up before the SIDR_REP, for the client's QPN.
  Status s = cm_->ready_ud_qp(*q);
  if (s && perftest_.ud_qpn_message) {
    auto buf = MappedBuffer::anonymous(4096);
    if (!buf) s = buf.error();
    else {
      w.buf = std::move(*buf);
      auto mr = conn_.register_memory(w.buf.data(), w.buf.size(), IBV_ACCESS_LOCAL_WRITE);
      if (!mr) s = mr.error();
      else w.mr = *mr;
    }
    if (s) {
      const int rc = dp_.call(q->worker, [&](rdma::Engine& eng) {
        ibv_sge sge{reinterpret_cast<std::uint64_t>(w.buf.data()), kGrhBytes + 4, w.mr->lkey()};
        ibv_recv_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        return eng.post_recv(q->qp, &wr, &bad);
      });
      if (rc) s = make_error(rc, "post_recv for the client's QPN failed");
    }
  }
  if (s) s = cm_->accept_ud(e.id, q->qpn);
  if (s && !perftest_.ud_qpn_message && !session->add_unnamed(*q)) s = make_error(ECANCELED, "the client's session has ended");
  if (!s) {
    (void)conn_.destroy(*q);
    if (w.mr) (void)dp_.memory().deregister(w.mr->key);
    return refuse(s.error().message);
  }
  {
    std::lock_guard lock(totals_mutex_);
    ++totals_.perftest_qps;
  }
  if (!perftest_.ud_qpn_message) return;
  w.deadline = dp_.now() + 5 * kSecond;
  ud_qpn_waits_.push_back(std::move(w));
}

void CmListeners::poll_ud_qpn_waits() {
  const Nanos now = dp_.now();
  for (auto it = ud_qpn_waits_.begin(); it != ud_qpn_waits_.end();) {
    UdQpnWait& w = *it;
    ibv_wc wc{};
    const int n = dp_.call(w.qp.worker, [&](rdma::Engine& eng) { return eng.poll_cq(w.qp.cq, 1, &wc); });
    std::string why;
    bool kept = false;
    if (n == 1 && wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_IMM)) {
      // rdma_cm_initialize_ud_connection_parameters: the immediate data is the client's QPN.
      proto::Be32 imm;
      std::memcpy(imm.bytes.data(), &wc.imm_data, imm.bytes.size());
      const std::uint32_t qpn = imm.get();
      kept = w.session->add(qpn, w.qp);
      if (!kept) why = "its session has ended";
    } else if (n == 1) {
      why = wc.status != IBV_WC_SUCCESS ? std::string("the receive for its QPN failed: ") + ibv_wc_status_str(wc.status)
                                        : "its first message carried no immediate data (a QPN)";
    } else if (now < w.deadline) {
      ++it;
      continue;
    } else {
      why = "no SEND of its QPN within 5 s of the SIDR reply (a latency or -b test's client sends one)";
    }
    if (!why.empty()) std::fprintf(stderr, "roce-appliance: perftest -R UD data QP of %s dropped: %s\n", w.peer.c_str(), why.c_str());
    if (!kept) (void)conn_.destroy(w.qp);
    (void)dp_.memory().deregister(w.mr->key);
    it = ud_qpn_waits_.erase(it);
  }
}

void CmListeners::finish(Conn& c) {
  if (c.driver) {
    drivers_.remove(c.qp.worker, c.driver);
    c.driver = 0;
  }
  if (!c.work) return;
  const Work& w = *c.work;
  const char* name = c.kind == Kind::Rping      ? "rping"
                     : c.kind == Kind::Ucmatose ? "ucmatose"
                     : c.kind == Kind::Udaddy   ? "udaddy"
                                                : "rdma_server";
  {
    std::lock_guard lock(totals_mutex_);
    totals_.rping_rounds += w.rounds.load();
    if (c.kind == Kind::Udaddy) {
      totals_.datagrams += w.rx.load() + w.tx.load();
    } else if (c.kind == Kind::RdmaServer) {
      if (w.rx.load() == 1 && w.tx.load() == 1) ++totals_.rdma_server_exchanges;
    } else {
      totals_.messages_received += w.rx.load();
      totals_.messages_sent += w.tx.load();
    }
    if (w.failed.load()) ++totals_.failed;
    else ++totals_.completed;
  }
  if (w.failed.load())
    std::fprintf(stderr, "roce-appliance: %s client %s failed: %s\n", name, c.peer.c_str(), w.error.c_str());
  else if (c.kind == Kind::Udaddy)
    std::fprintf(stderr, "roce-appliance: udaddy client %s done: %llu datagrams received, %llu sent\n", c.peer.c_str(),
                 static_cast<unsigned long long>(w.rx.load()), static_cast<unsigned long long>(w.tx.load()));
  else if (c.kind == Kind::RdmaServer)
    std::fprintf(stderr, "roce-appliance: rdma_server client %s done: %llu messages received, %llu sent\n", c.peer.c_str(),
                 static_cast<unsigned long long>(w.rx.load()), static_cast<unsigned long long>(w.tx.load()));
  else if (c.kind == Kind::Rping)
    std::fprintf(stderr, "roce-appliance: rping client %s done: %llu rounds\n", c.peer.c_str(),
                 static_cast<unsigned long long>(w.rounds.load()));
  else
    std::fprintf(stderr, "roce-appliance: ucmatose client %s done: %llu messages sent, %llu received\n", c.peer.c_str(),
                 static_cast<unsigned long long>(w.tx.load()), static_cast<unsigned long long>(w.rx.load()));
  c.work.reset();
}

void CmListeners::release(cm::CmId id) {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  if (c.channel) c.channel->set_disconnected();
  if (c.ah) {
    rdma::AddressHandle* ah = c.ah;
    (void)dp_.call(c.qp.worker, [ah](rdma::Engine& e) { return e.destroy_ah(ah); });
  }
  if (c.qp.qp) (void)conn_.destroy(c.qp);
  if (c.mr) (void)dp_.memory().deregister(c.mr->key);
  conns_.erase(it);
}

CmListeners::Totals CmListeners::totals() {
  std::lock_guard lock(totals_mutex_);
  return totals_;
}

}  // namespace roce::client
