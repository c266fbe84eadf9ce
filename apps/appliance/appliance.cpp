#include "apps/appliance/appliance.hpp"

#include <cstdio>

#include "client/perftest_server_print.hpp"

namespace roce::client {

namespace {

// FLUSH_GLOBAL: roce-gen flush (IBTA 1.5) may make ranges of it globally visible; ordinary
// memory is never persistent, so not FLUSH_PERSISTENT.
constexpr int kExposedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC | rdma::kAccessFlushGlobal;

}  // namespace

std::string size_text(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<std::uint64_t>(v)))
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(v), kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

Appliance::Appliance(dp::Dataplane& dp, ApplianceOptions o) : dp_(dp), o_(std::move(o)) {}

Appliance::~Appliance() {
  stop();
  cm_listeners_.reset();  // DREQs out while the dataplane still runs
  nvmf_.reset();
  shared_cm_.reset();
  reap_sessions(true);
  control_.stop();
  // What control clients made and still held (stop closes them all, so this is a safety net).
  std::vector<CreatedQp> qps;
  std::list<CreatedMr> mrs;
  {
    std::lock_guard lock(mutex_);
    qps.swap(created_qps_);
    mrs.swap(created_mrs_);
  }
  for (const CreatedQp& q : qps) conn_->destroy(q.qp);
  for (CreatedMr& m : mrs) release_mr(m);
}

Status Appliance::start() {
  started_ = std::chrono::steady_clock::now();
  if (o_.mr_bytes + o_.recv_bytes > o_.mr_quota)
    return make_error(EDQUOT, "the exposed region (" + size_text(o_.mr_bytes) + ") and the receive buffer (" +
                                  size_text(o_.recv_bytes) + ") exceed the memory region quota (" + size_text(o_.mr_quota) +
                                  ", --mr-quota)");
  auto ex = o_.mr_file.empty() ? MappedBuffer::anonymous(o_.mr_bytes) : MappedBuffer::file(o_.mr_file, o_.mr_bytes);
  if (!ex) return ex.error();
  exposed_ = std::move(*ex);
  auto rv = MappedBuffer::anonymous(o_.recv_bytes);
  if (!rv) return rv.error();
  recv_ = std::move(*rv);
  conn_ = std::make_unique<Connector>(dp_, static_cast<std::uint64_t>(dp_.now()) * 2654435761u + 1);
  auto emr = conn_->register_memory(exposed_.data(), exposed_.size(), kExposedAccess);
  if (!emr) return emr.error();
  exposed_mr_ = *emr;
  auto rmr = conn_->register_memory(recv_.data(), recv_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!rmr) return rmr.error();
  recv_mr_ = *rmr;
  mr_bytes_in_use_ = exposed_.size() + recv_.size();
  drivers_ = std::make_unique<DriverSet>(dp_);
  // One QP1, so one CM agent: the rdma_cm listeners and the NVMe/RDMA target share it.
  if (o_.rdma_cm.any() && o_.nvmf.enabled()) {
    CmServiceConfig cc;
    cc.selective_repeat = o_.selective_repeat;
    shared_cm_ = std::make_shared<CmService>(dp_, *drivers_, cc);
  }
  if (o_.rdma_cm.any()) {
    PerftestCmServe perftest;
    perftest.qp = o_.qp;
    // perftest -c UD -R: latency and -b clients SEND their QPN once resolved (the test is named
    // by --perftest and -b, as for perftest's own server).
    perftest.ud_qpn_message = o_.test && (o_.test->measure == Measure::Latency || o_.test->duplex);
    perftest.start_session = [this](std::shared_ptr<CmChannel> ch, std::shared_ptr<PerftestCmQps> qps) {
      std::lock_guard lock(mutex_);
      start_session(std::move(ch), std::move(qps));
    };
    cm_listeners_ = std::make_unique<CmListeners>(dp_, *drivers_, *conn_, o_.rdma_cm, shared_cm_, std::move(perftest));
    if (Status s = cm_listeners_->start(); !s) return s;
    std::fprintf(stderr, "roce-appliance: rdma_cm listeners:%s%s%s%s%s\n",
                 o_.rdma_cm.rping ? (" rping (TCP " + std::to_string(o_.rdma_cm.rping_port) + ")").c_str() : "",
                 o_.rdma_cm.ucmatose ? (" ucmatose (TCP " + std::to_string(o_.rdma_cm.ucmatose_port) + ")").c_str() : "",
                 o_.rdma_cm.udaddy ? (" udaddy (UDP " + std::to_string(o_.rdma_cm.udaddy_port) + ")").c_str() : "",
                 o_.rdma_cm.rdma_server ? (" rdma_server (TCP " + std::to_string(o_.rdma_cm.rdma_server_port) + ")").c_str() : "",
                 o_.rdma_cm.perftest ? (" perftest -R (TCP " + std::to_string(o_.rdma_cm.perftest_port) + ")").c_str() : "");
  }
  if (o_.nvmf.enabled()) {
    nvmf_ = std::make_unique<NvmfService>(dp_, *drivers_, *conn_, o_.nvmf, shared_cm_);
    if (Status s = nvmf_->start(); !s) return s;
    std::fprintf(stderr, "roce-appliance: NVMe/RDMA target %s with %zu namespace(s) on rdma_cm TCP port %u\n",
                 o_.nvmf.subsystem.c_str(), o_.nvmf.namespaces.size(), o_.nvmf.port);
  }
  auto l = TcpListener::listen(o_.listen_ip, o_.oob_port);
  if (!l) return l.error();
  listener_ = std::make_unique<TcpListener>(std::move(*l));
  waiting_ = std::make_unique<WaitingRoom>(o_.max_waiting, o_.handshake_timeout_ms);
  if (!o_.control_socket.empty())
    if (Status s = control_.start(
            o_.control_socket, [this](ControlSocket::ClientId c, const JsonValue& cmd) { return handle(c, cmd); },
            [this](ControlSocket::ClientId c) { client_closed(c); }, o_.control);
        !s)
      return s;
  return {};
}

void Appliance::stop() {
  stop_ = true;
  std::lock_guard lock(mutex_);
  for (auto& s : sessions_) s->stop = true;
}

// Called with mutex_ held.
void Appliance::refuse(const std::string& peer, const std::string& why) {
  session_errors_.add("refused " + peer + ": " + why);
  std::fprintf(stderr, "roce-appliance: refused %s: %s\n", peer.c_str(), why.c_str());
}

void Appliance::accept_one(TcpStream tcp) {
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= o_.max_sessions) {
    ++refused_sessions_;
    const std::string why = std::to_string(sessions_.size()) + " sessions are running (--max-sessions " +
                            std::to_string(o_.max_sessions) + "); try again when one has ended";
    refuse(tcp.peer_endpoint(), why);
    send_refusal(tcp, why);
    return;
  }
  start_session(std::make_shared<TcpStream>(std::move(tcp)), nullptr);
}

void Appliance::start_session(std::shared_ptr<OobChannel> channel, std::shared_ptr<PerftestCmQps> cm_qps) {
  auto s = std::make_unique<Session>();
  Session* raw = s.get();
  raw->id = next_session_id_++;
  raw->peer = channel->peer_endpoint();
  raw->started = std::chrono::steady_clock::now();
  if (stop_) raw->stop = true;
  ServerConfig cfg;
  cfg.qp = o_.qp;
  cfg.selective_repeat = o_.selective_repeat;
  cfg.exposed = LocalBuffer{exposed_.data(), exposed_.size(), exposed_mr_->lkey()};
  cfg.recv_region = LocalBuffer{recv_.data(), recv_.size(), recv_mr_->lkey()};
  cfg.recv_depth = o_.recv_depth;
  cfg.use_srq = o_.use_srq;
  cfg.test = o_.test;
  cfg.handshake_timeout_ms = o_.handshake_timeout_ms;
  // A UD data QP may wait in the listener for its client's QPN message a little longer.
  const Nanos cm_wait = o_.qp.type == IBV_QPT_UD ? 5 * kSecond : 0;
  if (cm_qps) {
    cfg.cm_qp = [cm_qps, cm_wait](std::uint32_t remote_qpn) { return cm_qps->take(remote_qpn, cm_wait); };
    cfg.cm_sync = [cm_qps] { cm_qps->synced(); };
  }
  raw->thread = std::thread([this, raw, cfg, channel, cm_qps]() mutable {
    {
      OobServer server(*conn_, *drivers_, cfg);
      raw->report = server.serve(*channel, raw->stop);
    }
    // -R: the data QPs the session never took go; the listener then ends the control connection.
    if (cm_qps)
      for (const LocalQp& q : cm_qps->close()) (void)conn_->destroy(q);
    raw->done = true;
  });
  sessions_.push_back(std::move(s));
}

void Appliance::reap_sessions(bool all) {
  std::list<std::unique_ptr<Session>> ended;
  {
    std::lock_guard lock(mutex_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (all || (*it)->done) {
        if (all) (*it)->stop = true;
        ended.splice(ended.end(), sessions_, it++);
      } else {
        ++it;
      }
    }
  }
  // Joined without the lock: a session ending on `stop` still tears its QPs down.
  for (auto& s : ended) s->thread.join();
  std::lock_guard lock(mutex_);
  for (auto& s : ended) {
    if (s->report) {
      // What perftest's server prints, a block per session as each ends.
      ServerPrintSettings ps;
      ps.device = o_.dev;
      ps.recv_depth = o_.recv_depth;
      ps.max_rd_atomic = o_.qp.max_rd_atomic;
      ps.test = o_.test;
      const std::string printout = perftest_server_printout(*s->report, ps);
      if (!printout.empty()) {
        std::fputs(printout.c_str(), stdout);
        std::fflush(stdout);
      }
      const SessionReport& r = *s->report;
      if (r.shared_srq)
        std::fprintf(stderr, "roce-appliance: %s client %s: %u QPs on one shared receive queue, %llu messages, %llu SRQ limit events\n",
                     r.tool.c_str(), r.peer.c_str(), r.qps, static_cast<unsigned long long>(r.received_messages),
                     static_cast<unsigned long long>(r.srq_limit_events));
      finished_.add(*s->report);
    } else if (s->report.error().code != ECANCELED) {
      ++failed_sessions_;
      session_errors_.add(s->report.error().message);
      std::fprintf(stderr, "roce-appliance: session failed: %s\n", s->report.error().message.c_str());
    }
  }
}

void Appliance::run() {
  const auto t0 = std::chrono::steady_clock::now();
  auto next_status = t0 + std::chrono::duration<double>(o_.status_interval_s);
  auto last_status = t0;
  std::vector<WaitingRoom::Left> left;
  while (!stop_ && !dp::StopSignals::requested()) {
    left.clear();
    for (TcpStream& tcp : waiting_->poll(*listener_, 100, left)) accept_one(std::move(tcp));
    if (!left.empty()) {
      std::lock_guard lock(mutex_);
      for (const WaitingRoom::Left& l : left)
        if (l.refused) {
          ++handshakes_dropped_;
          refuse(l.peer, l.reason);
        }
    }
    reap_sessions(false);
    const auto now = std::chrono::steady_clock::now();
    if (o_.duration_s > 0 && now - t0 >= std::chrono::duration<double>(o_.duration_s)) break;
    if (o_.status_interval_s > 0 && now >= next_status) {
      const double secs = std::chrono::duration<double>(now - last_status).count();
      std::fprintf(stderr, "%s\n", status_line(secs).c_str());
      last_status = now;
      next_status = now + std::chrono::duration<double>(o_.status_interval_s);
    }
  }
  stop();
  reap_sessions(true);
  if (cm_listeners_) cm_listeners_->stop();  // DREQ for every live rdma_cm connection
  if (nvmf_) nvmf_->stop();
  if (shared_cm_) shared_cm_->stop();
}

}  // namespace roce::client
