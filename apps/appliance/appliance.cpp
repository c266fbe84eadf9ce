#include "apps/appliance/appliance.hpp"

#include <cstdio>

#include "lib/util/json_writer.hpp"

namespace roce::app {

namespace {

constexpr int kExposedAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

std::string access_text(int a) {
  std::string s;
  if (a & IBV_ACCESS_LOCAL_WRITE) s += "local_write ";
  if (a & IBV_ACCESS_REMOTE_WRITE) s += "remote_write ";
  if (a & IBV_ACCESS_REMOTE_READ) s += "remote_read ";
  if (a & IBV_ACCESS_REMOTE_ATOMIC) s += "remote_atomic ";
  if (!s.empty()) s.pop_back();
  return s;
}

}  // namespace

Appliance::Appliance(dp::Dataplane& dp, ApplianceOptions o) : dp_(dp), o_(std::move(o)) {}

Appliance::~Appliance() {
  stop();
  reap_sessions(true);
  control_.stop();
}

Status Appliance::start() {
  started_ = std::chrono::steady_clock::now();
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
  drivers_ = std::make_unique<DriverSet>(dp_);
  auto l = TcpListener::listen(o_.listen_ip, o_.oob_port);
  if (!l) return l.error();
  listener_ = std::make_unique<TcpListener>(std::move(*l));
  if (!o_.control_socket.empty())
    if (Status s = control_.start(o_.control_socket, [this](const JsonValue& c) { return handle(c); }); !s) return s;
  return {};
}

void Appliance::stop() { stop_ = true; }

void Appliance::accept_one(TcpStream tcp) {
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= o_.max_sessions) {
    ++failed_sessions_;
    session_errors_.push_back("refused " + tcp.peer_address() + ": " + std::to_string(o_.max_sessions) +
                              " sessions already running");
    return;  // closing the socket tells the client
  }
  auto s = std::make_unique<Session>();
  Session* raw = s.get();
  ServerConfig cfg;
  cfg.qp = o_.qp;
  cfg.exposed = LocalBuffer{exposed_.data(), exposed_.size(), exposed_mr_->lkey()};
  cfg.recv_region = LocalBuffer{recv_.data(), recv_.size(), recv_mr_->lkey()};
  cfg.recv_depth = o_.recv_depth;
  cfg.test = o_.test;
  raw->thread = std::thread([this, raw, cfg, t = std::move(tcp)]() mutable {
    OobServer server(*conn_, *drivers_, cfg);
    raw->report = server.serve(t, stop_);
    raw->done = true;
  });
  sessions_.push_back(std::move(s));
}

void Appliance::reap_sessions(bool all) {
  std::lock_guard lock(mutex_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& s = **it;
    if (!all && !s.done) {
      ++it;
      continue;
    }
    s.thread.join();
    if (s.report) {
      finished_.push_back(*s.report);
    } else if (s.report.error().code != ECANCELED) {
      ++failed_sessions_;
      session_errors_.push_back(s.report.error().message);
      std::fprintf(stderr, "roce-appliance: session failed: %s\n", s.report.error().message.c_str());
    }
    it = sessions_.erase(it);
  }
}

std::string Appliance::status_line(double seconds) {
  std::uint64_t rx = 0, tx = 0, qps = 0;
  Counters c;
  for (unsigned w = 0; w < dp_.worker_count(); ++w) {
    dp_.call(w, [&](Engine& e) {
      rx += dp_.worker(w).stats().rx_bytes;
      tx += dp_.worker(w).stats().tx_bytes;
      c.add(e.total_counters());
      e.for_each_qp([&](const QueuePair&) { ++qps; });
      return 0;
    });
  }
  const double in = static_cast<double>(rx - last_rx_bytes_) * 8 / 1e9 / seconds;
  const double out = static_cast<double>(tx - last_tx_bytes_) * 8 / 1e9 / seconds;
  last_rx_bytes_ = rx;
  last_tx_bytes_ = tx;
  char line[256];
  std::snprintf(line, sizeof line, "QPs %llu | in %.3f Gb/s | out %.3f Gb/s | retransmits %llu | NAKs sent %llu | CNPs in %llu out %llu",
                static_cast<unsigned long long>(qps), in, out,
                static_cast<unsigned long long>(c.get(Counter::RetransmittedPkts)),
                static_cast<unsigned long long>(c.get(Counter::NaksSent)),
                static_cast<unsigned long long>(c.get(Counter::CnpReceived)),
                static_cast<unsigned long long>(c.get(Counter::CnpSent)));
  return line;
}

void Appliance::run() {
  const auto t0 = std::chrono::steady_clock::now();
  auto next_status = t0 + std::chrono::duration<double>(o_.status_interval_s);
  auto last_status = t0;
  while (!stop_ && !dp::StopSignals::requested()) {
    auto tcp = listener_->accept(100);
    if (tcp) accept_one(std::move(*tcp));
    reap_sessions(false);
    const auto now = std::chrono::steady_clock::now();
    if (o_.duration_s > 0 && now - t0 >= std::chrono::duration<double>(o_.duration_s)) break;
    if (o_.status_interval_s > 0 && now >= next_status) {
      const double secs = std::chrono::duration<double>(now - last_status).count();
      std::printf("%s\n", status_line(secs).c_str());
      std::fflush(stdout);
      last_status = now;
      next_status = now + std::chrono::duration<double>(o_.status_interval_s);
    }
  }
  stop_ = true;
  reap_sessions(true);
  std::lock_guard lock(mutex_);
  for (const LocalQp& q : manual_qps_) conn_->destroy(q);
  manual_qps_.clear();
}

std::string Appliance::list_qps() {
  JsonWriter w;
  w.begin_object().field("ok", true).key("qps").begin_array();
  for (unsigned wk = 0; wk < dp_.worker_count(); ++wk) {
    dp_.call(wk, [&](Engine& e) {
      e.for_each_qp([&](const QueuePair& q) {
        const Counters& c = q.counters();
        w.begin_object()
            .field("qpn", q.qpn())
            .field("worker", wk)
            .field("type", q.type() == IBV_QPT_RC ? "RC" : q.type() == IBV_QPT_UC ? "UC" : "UD")
            .field("state", to_string(q.state()))
            .field("dest_qpn", q.config().dest_qpn)
            .field("sent_pkts", c.get(Counter::SentPkts))
            .field("rcvd_pkts", c.get(Counter::RcvdPkts))
            .field("retransmitted_pkts", c.get(Counter::RetransmittedPkts))
            .end_object();
      });
      return 0;
    });
  }
  w.end_array().end_object();
  return w.str();
}

std::string Appliance::list_mrs() {
  JsonWriter w;
  w.begin_object().field("ok", true).key("mrs").begin_array();
  auto one = [&w](const char* role, const MemoryRegion* m) {
    w.begin_object()
        .field("role", role)
        .field("rkey", m->rkey())
        .field("addr", m->iova)
        .field("length", m->length)
        .field("access", access_text(m->access))
        .end_object();
  };
  one(o_.mr_file.empty() ? "exposed" : "exposed-file", exposed_mr_);
  one("receive", recv_mr_);
  std::lock_guard lock(mutex_);
  for (const ManualMr& m : manual_mrs_) one("created", m.mr);
  w.end_array().end_object();
  return w.str();
}

std::string Appliance::handle(const JsonValue& cmd) {
  const auto name = cmd.get_string("cmd");
  if (!name) return control_error("a command is an object with a \"cmd\" string");
  if (*name == "list_qps") return list_qps();
  if (*name == "list_mrs") return list_mrs();
  if (*name == "status" || *name == "counters") return report_json();
  if (*name == "stop") {
    stop_ = true;
    JsonWriter w;
    w.begin_object().field("ok", true).field("stopping", true).end_object();
    return w.str();
  }
  if (*name == "create_mr") {
    const auto size = cmd.get_uint("size");
    if (!size || *size == 0 || *size > (16ull << 30)) return control_error("create_mr needs \"size\": 1 .. 16 GiB");
    auto mem = MappedBuffer::anonymous(*size);
    if (!mem) return control_error(mem.error().message);
    auto mr = conn_->register_memory(mem->data(), mem->size(), kExposedAccess);
    if (!mr) return control_error(mr.error().message);
    std::lock_guard lock(mutex_);
    manual_mrs_.push_back(ManualMr{std::move(*mem), *mr});
    JsonWriter w;
    w.begin_object().field("ok", true).field("rkey", (*mr)->rkey()).field("addr", (*mr)->iova).field("length", (*mr)->length).end_object();
    return w.str();
  }
  if (*name == "create_qp") {
    auto q = conn_->create(o_.qp);
    if (!q) return control_error(q.error().message);
    std::lock_guard lock(mutex_);
    manual_qps_.push_back(*q);
    JsonWriter w;
    w.begin_object().field("ok", true).field("qpn", q->qpn).field("psn", q->psn).field("gid", to_string(dp_.local().ip)).end_object();
    return w.str();
  }
  if (*name == "connect_qp") {
    const auto qpn = cmd.get_uint("qpn");
    const auto rqpn = cmd.get_uint("remote_qpn");
    const auto rpsn = cmd.get_uint("remote_psn");
    const auto rip = cmd.get_string("remote_ip");
    const auto ip = rip ? parse_ipv4(*rip) : std::nullopt;
    if (!qpn || !rqpn || !rpsn || !ip)
      return control_error("connect_qp needs \"qpn\", \"remote_qpn\", \"remote_psn\" and \"remote_ip\"");
    LocalQp found;
    {
      std::lock_guard lock(mutex_);
      for (const LocalQp& q : manual_qps_)
        if (q.qpn == *qpn) found = q;
    }
    if (!found.qp) return control_error("no QP " + std::to_string(*qpn) + " made by create_qp");
    if (Status s = conn_->connect(found, RemoteQp{static_cast<std::uint32_t>(*rqpn), static_cast<std::uint32_t>(*rpsn),
                                                  gid_from_ip(IpAddress::ipv4(*ip))},
                                  o_.qp);
        !s)
      return control_error(s.error().message);
    JsonWriter w;
    w.begin_object().field("ok", true).field("qpn", found.qpn).field("state", "RTS").end_object();
    return w.str();
  }
  return control_error("unknown command '" + *name + "': list_qps, list_mrs, create_mr, create_qp, connect_qp, counters, stop");
}

std::string Appliance::report_json() {
  JsonWriter w;
  const double up = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  w.begin_object().field("ok", true).field("uptime_s", up);
  w.key("port").begin_object().field("name", dp_.port().name).field("driver", dp_.port().driver)
      .field("mac", proto::mac_to_string(dp_.local().mac)).field("ip", to_string(dp_.local().ip)).end_object();
  Counters total;
  w.key("workers").begin_array();
  for (unsigned wk = 0; wk < dp_.worker_count(); ++wk) {
    dp_.call(wk, [&](Engine& e) {
      const dp::WorkerStats& st = dp_.worker(wk).stats();
      total.add(e.total_counters());
      w.begin_object()
          .field("worker", wk)
          .field("rx_packets", st.rx_packets)
          .field("rx_bytes", st.rx_bytes)
          .field("tx_packets", st.tx_packets)
          .field("tx_bytes", st.tx_bytes)
          .field("tx_dropped", st.tx_dropped)
          .field("arp_replies", st.arp_replies)
          .field("icrc_bad", e.drops(EngineDrop::IcrcBad))
          .field("unknown_qp", e.drops(EngineDrop::UnknownQp))
          .field("not_for_us", e.drops(EngineDrop::NotForUs));
      w.key("limit_hits").begin_object();
      for (std::size_t l = 0; l < static_cast<std::size_t>(EngineLimit::Count); ++l)
        w.field(to_string(static_cast<EngineLimit>(l)), e.limit_hits(static_cast<EngineLimit>(l)));
      w.end_object().end_object();
      return 0;
    });
  }
  w.end_array();
  w.key("limits").begin_object()
      .field("max_qps", o_.max_qps)
      .field("max_mrs", o_.max_mrs)
      .field("max_qp_wr", o_.max_qp_wr)
      .field("max_rd_atomic", static_cast<std::uint32_t>(o_.max_rd_atomic))
      .field("mrs_in_use", static_cast<std::uint64_t>(dp_.memory().size()))
      .field("mr_registrations_refused", dp_.memory().refused_full())
      .end_object();
  w.key("transport").begin_object();
  for (std::size_t k = 0; k < kCounterCount; ++k) w.field(counter_name(static_cast<Counter>(k)), total.values()[k]);
  w.end_object();
  std::lock_guard lock(mutex_);
  w.field("sessions_running", static_cast<std::uint64_t>(sessions_.size()));
  w.field("sessions_failed", failed_sessions_);
  w.key("sessions").begin_array();
  for (const SessionReport& r : finished_)
    w.begin_object()
        .field("peer", r.peer)
        .field("tool", r.tool)
        .field("version", r.remote_version)
        .field("qps", r.qps)
        .field("received_messages", r.received_messages)
        .field("received_bytes", r.received_bytes)
        .field("writes_sent", r.writes_sent)
        .end_object();
  w.end_array();
  w.key("errors").begin_array();
  for (const std::string& e : session_errors_) w.value(e);
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace roce::app
