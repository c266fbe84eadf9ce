#include "client/oob_server.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

#include "client/oob/perftest.hpp"
#include "client/oob/pingpong.hpp"
#include "client/oob/refusal.hpp"
#include "lib/cm/rdma_cm.hpp"
#include "protocol/be.hpp"

namespace roce::client {

namespace {

constexpr std::size_t kProbe = 5;
constexpr char kDone[kProbe] = {'d', 'o', 'n', 'e', '\0'};
// How long after a pingpong client's first record more may come before it is taken for
// ibv_rc_pingpong's single one (ibv_srq_pingpong writes its 256 in a loop).
constexpr int kSrqPingpongProbeMs = 300;

std::string hex_bytes(std::span<const std::byte> b) {
  std::string out;
  char x[4];
  for (std::byte v : b) {
    std::snprintf(x, sizeof x, "%02x", std::to_integer<unsigned>(v));
    out += x;
  }
  return out;
}

bool looks_like_record(std::span<const std::byte> first) {
  // Both records start with a 4-hex-digit LID and a colon ("0000:"); perftest's version does not.
  return first.size() == kProbe && std::to_integer<char>(first[4]) == ':';
}

}  // namespace

bool OobServer::wait_input(OobChannel& tcp, const std::atomic<bool>& stop, int ms) {
  while (!stop.load(std::memory_order_relaxed)) {
    if (!handshake_done_ && std::chrono::steady_clock::now() >= handshake_deadline_) return true;  // the read times out
    if (tcp.wait_readable(ms)) return true;
  }
  return false;
}

std::uint32_t OobServer::ud_qkey() const { return cfg_.cm_qp ? cm::kRdmaUdpQkey : kPerftestQkey; }

int OobServer::read_timeout_ms() const {
  if (handshake_done_) return cfg_.oob_timeout_ms;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(handshake_deadline_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

Result<OobServer::ServedQp*> OobServer::add_qp(const QpParams& p, const PerftestDest& peer, std::uint32_t out_reads,
                                               bool echo, int worker) {
  std::optional<LocalQp> cm_connected;
  if (cfg_.cm_qp) {
    cm_connected = cfg_.cm_qp(peer.qpn);
    if (!cm_connected)
      return make_error(EPROTO, "the client's record names its QP " + std::to_string(peer.qpn) +
                                    ", which did not connect through rdma_cm (perftest -R connects every data QP first)");
  }
  auto lq = cm_connected ? Result<LocalQp>(*cm_connected) : conn_.create(p, worker);
  if (!lq) return lq.error();
  auto q = std::make_unique<ServedQp>();
  q->local = *lq;
  q->mine.out_reads = static_cast<std::uint16_t>(out_reads);
  q->mine.qpn = lq->qpn;
  q->mine.psn = lq->psn;
  if (write_mr_) {
    // ib_write_lat: the client's WRITEs land in the session's own area, where we watch for them.
    q->mine.rkey = write_mr_->rkey();
    q->mine.vaddr = reinterpret_cast<std::uint64_t>(write_area_.data()) + write_max_;
  } else {
    q->mine.rkey = cfg_.exposed.lkey;
    q->mine.vaddr = reinterpret_cast<std::uint64_t>(cfg_.exposed.ptr);
  }
  q->mine.gid = conn_.local_gid();
  const bool ud = p.type == IBV_QPT_UD;
  // -b: the session's DuplexTraffic polls the QP (and takes SENDs into its own receives).
  const bool duplex = cfg_.test && cfg_.test->duplex;
  // On a shared receive queue the feeder posts the receives; the QP's receiver reaps and echoes.
  const std::uint32_t own_receives = p.srq ? 0 : cfg_.recv_depth;
  if (!write_mr_ && !duplex) q->receiver = std::make_unique<ReceiveServer>(q->local, cfg_.recv_region, own_receives, echo, ud);
  ServedQp* raw = q.get();
  // Receives go up before the QP leaves INIT, so a SEND never meets an empty queue.
  q->driver_id = drivers_.add(q->local.worker, [raw](rdma::Engine& e, Nanos now) {
    if (raw->receiver) raw->receiver->poll(e, now);
    if (raw->writer) raw->writer->poll(e, now);
  });
  auto undo = [&] {
    drivers_.remove(raw->local.worker, raw->driver_id);
    if (raw->ah) conn_.dataplane().call(raw->local.worker, [&](rdma::Engine& e) { return e.destroy_ah(raw->ah); });
    conn_.destroy(raw->local);
  };
  if (!cm_connected)
    if (Status s = conn_.connect(q->local, RemoteQp{peer.qpn, peer.psn, peer.gid}, p); !s) {
      undo();
      return s.error();
    }
  if (ud) {
    // Answers to a UD client go through an address handle to its GID and QP (Q_Key perftest's
    // 0x11111111; under -R rdma_cm's, which the client's QP took when it was resolved).
    auto ah = conn_.dataplane().call(q->local.worker, [&](rdma::Engine& e) {
      ibv_ah_attr a{};
      a.is_global = 1;
      a.grh.dgid = peer.gid;
      a.grh.hop_limit = 64;
      a.port_num = 1;
      return e.create_ah(raw->local.pd, a);
    });
    if (!ah) {
      undo();
      return ah.error();
    }
    q->ah = *ah;
    if (q->receiver)
      drivers_.inspect(q->local.worker, [&] {
        raw->receiver->set_ud_peer(RemoteBuffer{0, 0, raw->ah, peer.qpn, ud_qkey()});
        return 0;
      });
  }
  qps_.push_back(std::move(q));
  return raw;
}

OobServer::~OobServer() {
  SessionReport discarded;
  teardown(discarded);
  if (write_mr_) conn_.dataplane().memory().deregister(write_mr_->rkey());
}

void OobServer::teardown(SessionReport& r) {
  if (duplex_) {
    duplex_->stop();
    r.received_messages += duplex_->received_messages();
    r.received_bytes += duplex_->received_bytes();
  }
  for (auto& q : qps_) {
    drivers_.remove(q->local.worker, q->driver_id);
    if (q->receiver) {
      r.received_messages += q->receiver->received();
      r.received_bytes += q->receiver->bytes();
      if (q->receiver->received() > 0) {
        if (r.first_received == 0 || q->receiver->first_received() < r.first_received)
          r.first_received = q->receiver->first_received();
        r.last_received = std::max(r.last_received, q->receiver->last_received());
      }
    }
    if (q->writer) r.writes_sent += q->writer->status().completed;
    const rdma::Counters c = conn_.dataplane().call(q->local.worker, [&](rdma::Engine&) { return q->local.qp->counters(); });
    r.read_responses += c.get(rdma::Counter::ReadResponsesSent);
    r.atomic_responses += c.get(rdma::Counter::AtomicAcksSent);
    if (r.tool == "perftest") r.records.emplace_back(q->mine, q->peer);
    if (q->ah) conn_.dataplane().call(q->local.worker, [&](rdma::Engine& e) { return e.destroy_ah(q->ah); });
    conn_.destroy(q->local);
  }
  qps_.clear();
  by_remote_qpn_.clear();
  if (srq_feeder_) {
    drivers_.remove(srq_worker_, srq_driver_id_);
    r.shared_srq = true;
    r.srq_limit_events = srq_feeder_->limit_events();
    (void)conn_.destroy_srq(srq_worker_, srq_feeder_->srq());
    srq_feeder_.reset();
  }
  // Only now that the QPs are gone: a stopped -b run (--run_infinitely's client left) may still
  // have WRITEs queued that read from the duplex buffer.
  duplex_.reset();
}

std::uint64_t OobServer::packets_received() {
  std::uint64_t n = 0;
  for (auto& q : qps_)
    n += conn_.dataplane().call(q->local.worker, [&](rdma::Engine&) { return q->local.qp->counters().get(rdma::Counter::RcvdPkts); });
  return n;
}

Status OobServer::start_duplex(std::uint32_t size_index) {
  const ServedTest& t = *cfg_.test;
  TrafficSpec spec;
  spec.verb = t.verb;
  spec.measure = Measure::Bandwidth;
  spec.size = t.verb == Verb::Atomic ? 8 : t.sizes[size_index];
  spec.iters = t.iters;
  // -D: the run and its margin; --run_infinitely: no end of our own (the session ends with the client).
  spec.duration = t.infinite ? std::numeric_limits<Nanos>::max() / 4 : t.duration;
  spec.margin = t.margin;
  // perftest's defaults: -t 128 (never above -n), -Q 100 (1 above 8 KiB, never above -t).
  spec.tx_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(128, t.iters));
  spec.cq_mod = spec.size > 8192 ? 1 : std::min<std::uint32_t>(100, spec.tx_depth);
  std::vector<DuplexQp> qps;
  for (auto& q : qps_) qps.push_back(DuplexQp{q->local, RemoteBuffer{q->peer.vaddr, q->peer.rkey, q->ah, q->peer.qpn, ud_qkey()}});
  // --use-srq: the QPs take the client's SENDs from the session's shared receive queue.
  const std::uint32_t own_receives = srq_feeder_ ? 0 : std::min(cfg_.recv_depth, cfg_.qp.recv_depth);
  return duplex_->start(qps, spec, own_receives, cfg_.qp.type == IBV_QPT_UD);
}

Result<bool> OobServer::advance_write_latency(ServedQp& q, const PerftestDest& peer, SessionReport& r) {
  const ServedTest& t = *cfg_.test;
  if (q.writer) {
    const DriverStatus st = drivers_.inspect(q.local.worker, [&] { return q.writer->status(); });
    if (st.errors)
      return make_error(EIO, std::string("our WRITE to the client failed (") + ibv_wc_status_str(st.first_error) +
                                 "): the client does not take WRITEs, so it is not ib_write_lat");
    if (!st.done) return true;
    r.writes_sent += st.completed;
    r.write_latency.emplace_back(t.sizes[write_size_index_], q.writer->samples());
    ++write_size_index_;
    drivers_.inspect(q.local.worker, [&] {
      q.writer.reset();
      return 0;
    });
  }
  if (write_size_index_ >= t.sizes.size()) return false;
  auto w = std::make_unique<WriteLatency>(q.local, t.sizes[write_size_index_], t.iters, true,
                                          LocalBuffer{write_area_.data(), write_max_, write_mr_->lkey()},
                                          write_area_.data() + write_max_, RemoteBuffer{peer.vaddr, peer.rkey});
  drivers_.inspect(q.local.worker, [&] {
    q.writer = std::move(w);
    return 0;
  });
  return true;
}

Result<bool> OobServer::finish_write_latency(ServedQp& q, const PerftestDest& peer, SessionReport& r) {
  // The client ends once our last WRITE has landed, which can be before its ACK reaches us (a
  // descheduled worker): wait for that completion so the last size keeps its samples.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    const std::size_t recorded = r.write_latency.size();
    auto more = advance_write_latency(q, peer, r);
    if (!more || r.write_latency.size() > recorded || !*more) return more;
    if (std::chrono::steady_clock::now() >= deadline) return more;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Result<SessionReport> OobServer::serve(OobChannel& tcp, const std::atomic<bool>& stop) {
  handshake_deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.handshake_timeout_ms);
  handshake_done_ = false;
  refusal_sent_ = false;
  const std::string peer = tcp.peer_endpoint();
  auto r = serve_exchange(tcp, stop);
  if (r || r.error().code == ECANCELED) return r;
  std::string why = r.error().message;
  if (!handshake_done_ && !refusal_sent_) {
    if (r.error().code == ETIMEDOUT) why = "handshake not finished in time: " + why;
    send_refusal(tcp, why);
  }
  return make_error(r.error().code, peer + ": " + why);
}

Result<SessionReport> OobServer::serve_exchange(OobChannel& tcp, const std::atomic<bool>& stop) {
  std::array<std::byte, kProbe> first{};
  if (!wait_input(tcp, stop)) return make_error(ECANCELED, "stopped");
  if (Status s = tcp.read_exact(first, read_timeout_ms()); !s) return s.error();
  return looks_like_record(first) ? serve_pingpong(tcp, first, stop) : serve_perftest(tcp, first, stop);
}

Result<SessionReport> OobServer::serve_pingpong(OobChannel& tcp, std::span<const std::byte> first,
                                                const std::atomic<bool>& stop) {
  SessionReport r;
  r.peer = tcp.peer_address();
  r.tool = "ibv_rc_pingpong";
  std::array<std::byte, kPingpongRecordBytes> rec{};
  std::memcpy(rec.data(), first.data(), first.size());
  if (Status s = tcp.read_exact(std::span{rec}.subspan(first.size()), read_timeout_ms()); !s) return s.error();
  auto peer = parse_pingpong(rec);
  if (!peer) return peer.error();
  // ibv_rc_pingpong waits for our record after its one; ibv_srq_pingpong writes its 256 records
  // back to back, so more bytes come at once.
  std::vector<PingpongDest> peers{*peer};
  if (tcp.wait_readable(kSrqPingpongProbeMs)) {
    r.tool = "ibv_srq_pingpong";
    auto all = read_srq_pingpong_records(tcp, *peer, read_timeout_ms());
    if (!all) return make_error(all.error().code, r.peer + ": " + all.error().message);
    peers = std::move(*all);
  }
  QpParams p = cfg_.qp;
  p.max_rd_atomic = 1;  // what ibv_rc_pingpong and ibv_srq_pingpong set
  p.type = IBV_QPT_RC;
  // ibv_srq_pingpong's QPs share one receive queue, as its own do: all on the SRQ's worker.
  int worker = -1;
  if (r.tool == "ibv_srq_pingpong") {
    const unsigned w = conn_.next_worker();
    if (Status s = start_shared_srq(w); !s) {
      teardown(r);
      return make_error(s.error().code, r.peer + " (ibv_srq_pingpong): " + s.error().message);
    }
    p.srq = srq_feeder_->srq();
    worker = static_cast<int>(w);
  }
  std::vector<PingpongDest> mine;
  for (const PingpongDest& d : peers) {
    PerftestDest pd;
    pd.qpn = d.qpn;
    pd.psn = d.psn;
    pd.gid = d.gid;
    auto qp = add_qp(p, pd, 1, true, worker);
    if (!qp) {
      teardown(r);
      return qp.error();
    }
    PingpongDest m;
    m.qpn = (*qp)->local.qpn;
    m.psn = (*qp)->local.psn;
    m.gid = conn_.local_gid();
    mine.push_back(m);
  }
  auto fail = [&](const Error& e) -> Result<SessionReport> {
    teardown(r);
    return make_error(e.code, r.peer + " (" + r.tool + "): " + e.message);
  };
  if (r.tool == "ibv_srq_pingpong") {
    if (Status s = write_srq_pingpong_records(tcp, mine); !s) return fail(s.error());
  } else if (Status s = tcp.write_all(format_pingpong(mine.front())); !s) {
    return fail(s.error());
  }
  std::array<std::byte, kProbe> done{};
  if (Status s = tcp.read_exact(done, read_timeout_ms()); !s) return fail(s.error());
  handshake_done_ = true;
  r.qps = static_cast<unsigned>(mine.size());
  r.mtu = p.mtu;
  // The client closes the TCP connection and ping-pongs; echo until it goes quiet.
  std::uint64_t last = 0;
  auto quiet_since = std::chrono::steady_clock::now();
  while (!stop.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::uint64_t got = 0;
    for (const auto& q : qps_) {
      const ServedQp* sq = q.get();
      got += drivers_.inspect(sq->local.worker, [sq] { return sq->receiver->received(); });
    }
    const auto now = std::chrono::steady_clock::now();
    if (got != last) {
      last = got;
      quiet_since = now;
    } else if (now - quiet_since > std::chrono::nanoseconds(cfg_.pingpong_idle_timeout)) {
      break;
    }
  }
  Status srq_error;
  if (srq_feeder_) srq_error = drivers_.inspect(srq_worker_, [this] { return srq_feeder_->error(); });
  teardown(r);
  if (!srq_error) return make_error(srq_error.error().code, r.peer + " (ibv_srq_pingpong): " + srq_error.error().message);
  return r;
}

Status OobServer::start_shared_srq(unsigned worker) {
  auto srq = conn_.create_srq(worker, cfg_.recv_depth);
  if (!srq) return srq.error();
  srq_worker_ = worker;
  srq_feeder_ = std::make_unique<SrqFeeder>(*srq, cfg_.recv_region, cfg_.recv_depth);
  SrqFeeder* f = srq_feeder_.get();
  if (Status s = conn_.dataplane().call(worker, [f](rdma::Engine& e) { return f->start(e); }); !s) return s;
  srq_driver_id_ = drivers_.add(worker, [f](rdma::Engine& e, Nanos) { f->poll(e); });
  return {};
}

Result<SessionReport> OobServer::serve_perftest(OobChannel& tcp, std::span<const std::byte> first,
                                                const std::atomic<bool>& stop) {
  SessionReport r;
  r.peer = tcp.peer_address();
  r.tool = "perftest";
  r.rdma_cm = static_cast<bool>(cfg_.cm_qp);
  r.qp_type = cfg_.qp.type;
  // The version: 16 bytes, of which `first` holds 5.
  std::array<char, 16> version{};
  std::memcpy(version.data(), first.data(), first.size());
  if (Status s = tcp.read_exact(std::as_writable_bytes(std::span{version}).subspan(first.size()), read_timeout_ms()); !s)
    return s.error();
  version.back() = '\0';
  r.remote_version = version.data();
  // A rocev2-dp client offers selective repeat after its version's NUL; we answer there too
  // (nothing unless it offered: a perftest client gets perftest's record).
  const cm::Ece offer = perftest_version_ece(version);
  // -R sessions' QPs agree on it in their REQ/REP; UC and UD have nothing to repeat.
  const bool tcp_rc = cfg_.qp.type == IBV_QPT_RC && !cfg_.cm_qp;
  const cm::Ece answer = cm::answer_selective_repeat(offer, tcp_rc ? cfg_.selective_repeat : 0);
  const std::array<char, 16> mine_version = perftest_version_record(PerftestSession::kVersion, answer);
  if (Status s = tcp.write_all(std::as_bytes(std::span{mine_version})); !s) return s.error();
  // Like perftest, ours goes out first: an old client then says itself what it does not support.
  if (Status s = check_remote_version(r.remote_version); !s) {
    refusal_sent_ = true;  // our version told it: perftest refuses ours itself, a refusal line would only confuse it
    return make_error(s.error().code, r.peer + ": " + s.error().message);
  }
  // The version went by hand above (the probe took its first bytes); sizes and MTU follow.
  PerftestSession session(tcp, OobRole::Server, read_timeout_ms());
  session.set_remote_version(r.remote_version);
  if (Status s = session.exchange_sizes(); !s) return s.error();
  auto mtu = session.exchange_mtu(cfg_.qp.mtu);
  if (!mtu) return mtu.error();
  // Now the client sets its QPs and memory up (perftest's ctx_init registers its buffers, which
  // takes a while on a slow host) before its first QP record: it gets oob_timeout_ms for that.
  handshake_deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.oob_timeout_ms);
  r.mtu = *mtu;
  QpParams p = cfg_.qp;
  p.mtu = *mtu;
  p.selective_repeat = cm::agreed_selective_repeat(offer, answer);
  r.selective_repeat = p.selective_repeat;

  const bool write_lat = cfg_.test && cfg_.test->verb == Verb::Write && cfg_.test->measure == Measure::Latency;
  const bool send_lat = cfg_.test && cfg_.test->verb == Verb::Send && cfg_.test->measure == Measure::Latency;
  const std::string served = cfg_.test ? perftest_program(cfg_.test->verb, cfg_.test->measure) : "";
  if (write_lat) {
    write_max_ = std::max<std::uint32_t>(*std::max_element(cfg_.test->sizes.begin(), cfg_.test->sizes.end()), 64);
    auto area = MappedBuffer::anonymous(2 * std::size_t{write_max_});
    if (!area) return area.error();
    write_area_ = std::move(*area);
    // perftest's grants REMOTE_WRITE alone; READ too lets roce-gen --verify read back.
    auto mr = conn_.register_memory(write_area_.data(), write_area_.size(),
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr) return mr.error();
    write_mr_ = *mr;
  }
  auto fail = [&](int code, const std::string& why) -> Result<SessionReport> {
    teardown(r);
    return make_error(code, r.peer + " (perftest " + r.remote_version + ", " + std::to_string(r.qps) + " QP(s)): " + why);
  };

  // Once the results exchange has begun, its five 8-byte fields (size, iterations, peak, average,
  // message rate) come in a row: a field whose fifth byte happens to be ':' (a double's mantissa
  // can be anything) is not a record then. perftest syncs with one more record pair afterwards.
  constexpr int kResultFields = 5;
  int results_left = 0;
  RecordOrder order;
  // -b (perftest's server given -b): where the client is in -b's order, and our own figures.
  const bool duplex = cfg_.test && cfg_.test->duplex && cfg_.test->measure == Measure::Bandwidth;
  std::optional<DuplexCursor> cursor;
  if (duplex) {
    PerftestTest t;
    t.verb = cfg_.test->verb;
    t.sizes = static_cast<std::uint32_t>(cfg_.test->sizes.size());
    t.all_sizes = t.sizes > 1;
    t.duplex = true;
    t.duration = cfg_.test->duration > 0 && !cfg_.test->infinite;
    t.infinite = cfg_.test->infinite;
    cursor.emplace(t);
    duplex_ = std::make_unique<DuplexTraffic>(conn_, drivers_);
  }
  std::array<std::uint64_t, kResultFields> ours{};
  // -b: our own traffic of a size is over; its figures are what we send for the client's.
  auto finish_duplex = [&]() -> Status {
    auto mine = duplex_->finish(cfg_.quiet_timeout);
    if (!mine) return mine.error();
    r.server_results = *mine;
    ours = {mine->size, mine->iters, double_to_wire(mine->bw_peak), double_to_wire(mine->bw_avg),
            double_to_wire(mine->msg_rate)};
    return {};
  };
  ServedQp* writer_qp = nullptr;  // ib_write_lat: QP 0's, once the records are all in
  PerftestDest writer_peer;
  bool writing = false;
  std::uint64_t activity = 0;
  // perftest's -b client shows itself at its results: they come right after its traffic (its
  // sync precedes the traffic, where a one-way client's closing sync follows it: no packet had
  // come when its latest record did), or once per size of a -a sweep (a one-way client sends
  // them once).
  std::optional<std::uint64_t> packets_at_record;
  int results_exchanges = 0;
  auto quiet_since = std::chrono::steady_clock::now();
  std::array<std::uint64_t, kResultFields> results{};
  for (;;) {
    if (writing) {
      auto more = advance_write_latency(*writer_qp, writer_peer, r);
      if (!more) return fail(more.error().code, more.error().message);
      writing = *more;
    }
    if (stop.load(std::memory_order_relaxed)) {
      teardown(r);
      return make_error(ECANCELED, "stopped");
    }
    if (!tcp.wait_readable(writing ? 2 : 200)) {
      // Quiet: no record and, on the QPs, no packet (ib_write_lat: no answer to our WRITEs).
      const auto now = std::chrono::steady_clock::now();
      const std::uint64_t seen = writer_qp && writer_qp->writer
                                     ? drivers_.inspect(writer_qp->local.worker, [&] { return writer_qp->writer->received(); })
                                     : packets_received();
      if (seen != activity || r.qps == 0) {
        activity = seen;
        quiet_since = now;
        continue;
      }
      if (now - quiet_since < std::chrono::nanoseconds(cfg_.quiet_timeout)) continue;
      const std::string secs = std::to_string(cfg_.quiet_timeout / kSecond) + " s";
      if (writer_qp) {
        const std::uint32_t size = cfg_.test->sizes[std::min(write_size_index_, cfg_.test->sizes.size() - 1)];
        return fail(ETIMEDOUT, "the client has not answered our WRITE " + std::to_string(seen + 1) + " of " +
                                   std::to_string(size) + " bytes for " + secs + ": is it " + served +
                                   (cfg_.test->sizes.size() > 1 ? " -a -n " + std::to_string(cfg_.test->iters)
                                                                : " -s " + std::to_string(size)) +
                                   "?");
      }
      std::uint64_t sends = 0;
      for (auto& q : qps_)
        if (q->receiver) sends += drivers_.inspect(q->local.worker, [&] { return q->receiver->received(); });
      if (!send_lat && sends > 0 && sends < 4)
        return fail(ETIMEDOUT, "the client sent " + std::to_string(sends) + " SEND(s) and has waited " + secs +
                                   " since: an ib_send_lat client waits for an answer to each SEND (serve it with "
                                   "--perftest ib_send_lat)");
      if (!write_lat && order.latency_prelude_complete() && activity == 0)
        return fail(ETIMEDOUT, "nothing from the client for " + secs + " after a latency test's records: an ib_write_lat "
                                   "client waits for the server's first WRITE (serve it with --perftest ib_write_lat, "
                                   "and its -s)");
      return fail(ETIMEDOUT, "nothing from the client for " + secs + ", on the socket or its QPs: it went away");
    }
    quiet_since = std::chrono::steady_clock::now();
    std::array<std::byte, kProbe> head{};
    if (Status s = tcp.read_exact(head, read_timeout_ms()); !s) {
      // perftest's ib_write_lat closes the connection without "done": that is its end.
      if (s.error().code == ECONNRESET && r.qps > 0 && (!write_lat || writer_qp)) {
        if (writing) {
          auto more = finish_write_latency(*writer_qp, writer_peer, r);
          if (!more) return fail(more.error().code, more.error().message);
        }
        teardown(r);
        return r;
      }
      return fail(s.error().code, s.error().message);
    }
    if (std::memcmp(head.data(), kDone, kProbe) == 0) {
      tcp.write_all(std::as_bytes(std::span{kDone}));
      if (writing) {
        auto more = finish_write_latency(*writer_qp, writer_peer, r);  // a WRITE that failed says why
        if (!more) return fail(more.error().code, more.error().message);
      }
      teardown(r);
      return r;
    }
    if (results_left == 0 && looks_like_record(head)) {
      std::array<std::byte, kPerftestRecordBytes> rec{};
      std::memcpy(rec.data(), head.data(), kProbe);
      if (Status s = tcp.read_exact(std::span{rec}.subspan(kProbe), read_timeout_ms()); !s)
        return fail(s.error().code, s.error().message);
      auto peer = parse_perftest(rec);
      if (!peer) return fail(peer.error().code, peer.error().message);
      if (cfg_.cm_qp && peer->qpn == 0) {
        // -R: a sync around the rdma_cm connections of the data QPs (create_rdma_cm_connection).
        if (cfg_.cm_sync) cfg_.cm_sync();
        PerftestDest zero;
        zero.out_reads = 0;
        const std::string out = format_perftest(zero);
        if (Status s = tcp.write_all(std::as_bytes(std::span{out})); !s) return fail(s.error().code, s.error().message);
        handshake_done_ = true;
        continue;
      }
      order.add(peer->qpn);
      const std::uint64_t packets_before = packets_at_record.value_or(0);
      packets_at_record = r.qps > 0 ? packets_received() : 0;
      ServedQp* q = nullptr;
      const bool new_qp = by_remote_qpn_.find(peer->qpn) == by_remote_qpn_.end();
      if (cursor) {
        auto step = cursor->record(new_qp);
        if (!step) return fail(step.error().code, step.error().message);
        // The sync after a size (a sweep's, or the closing one of SEND -D, which exchanges no
        // results): our own traffic of the size ends first, as perftest's server's does.
        if (!*step && duplex_->running())
          if (Status s = finish_duplex(); !s) return fail(s.error().code, s.error().message);
        if (*step) {
          // The sync before a size: a -b client has sent nothing yet; a one-way one has run its
          // traffic and syncs after it.
          if (**step == 0 && *packets_at_record > packets_before)
            return fail(EPROTO, "the client ran its traffic before this sync: it runs a one-way test (no -b); this "
                                "server was told -b");
          if (Status s = start_duplex(**step); !s) return fail(s.error().code, s.error().message);
        }
      }
      if (!new_qp) {
        q = by_remote_qpn_.at(peer->qpn);
      } else {
        // --use-srq (perftest's server flag): every QP of the session takes its receives from one
        // shared receive queue, stocked to the receive depth and refilled on its limit event, so
        // all of them live on the SRQ's worker. QPs rdma_cm made (-R) came without it.
        int worker = -1;
        if (cfg_.use_srq && !cfg_.cm_qp && !write_lat) {
          if (!srq_feeder_)
            if (Status s = start_shared_srq(conn_.next_worker()); !s) return fail(s.error().code, s.error().message);
          p.srq = srq_feeder_->srq();
          worker = static_cast<int>(srq_worker_);
        }
        auto added = add_qp(p, *peer, p.max_rd_atomic, send_lat, worker);
        if (!added) return fail(added.error().code, added.error().message);
        q = *added;
        q->peer = *peer;
        by_remote_qpn_[peer->qpn] = q;
        ++r.qps;
        if (r.qps == 1) writer_peer = *peer;
      }
      const std::string out = format_perftest(q->mine);
      if (Status s = tcp.write_all(std::as_bytes(std::span{out})); !s) return fail(s.error().code, s.error().message);
      handshake_done_ = true;
      if (write_lat && !writer_qp) {
        if (order.bandwidth_order())
          return fail(EPROTO, "the client sends its QP records in the order of a bandwidth or SEND test (all its QPs "
                              "first); ib_write_lat, which this server serves, opens with QP 0's record alone");
        if (order.latency_prelude_complete()) {
          // ib_write_lat's server WRITEs first, on QP 0, as soon as the records are all in.
          writer_qp = by_remote_qpn_.at(writer_peer.qpn);
          writing = true;
          activity = 0;
        }
      }
      continue;
    }
    if (writer_qp)
      return fail(EPROTO, "the client sent " + hex_bytes(head) + "... after " + served +
                              "'s records, where its client sends nothing: it runs another test (a bandwidth test's "
                              "results?); this server serves " + served);
    if (results_left == 0 && duplex) {
      // -b: the client's figures come for ours, once our own traffic of the size is over.
      if (Status s = cursor->results(); !s) return fail(s.error().code, s.error().message);
      if (duplex_->running())
        if (Status s = finish_duplex(); !s) return fail(s.error().code, s.error().message);
    }
    if (!duplex && results_left == 0 && (++results_exchanges > 1 || (packets_at_record == 0u && packets_received() > 0)))
      return fail(EPROTO, std::string("the client sent its results ") +
                              (results_exchanges > 1 ? "a second time" : "right after its traffic, with no sync between") +
                              ": it runs -b (bidirectional), where the server sends too; serve it with --perftest "
                              "ib_VERB_bw -b and the client's -s (or -a) and -n, as perftest's own server");
    // A results field (8 bytes; 4 for iterations from old peers we refuse above): ours are zero
    // (-b: our own figures), the client reports its own, which we keep for the printout.
    results_left = (results_left == 0 ? kResultFields : results_left) - 1;
    const std::size_t field_index = static_cast<std::size_t>(kResultFields - 1 - results_left);
    std::array<std::byte, 3> rest{};
    if (Status s = tcp.read_exact(rest, read_timeout_ms()); !s) return fail(s.error().code, s.error().message);
    proto::Be64 field;
    std::memcpy(field.bytes.data(), head.data(), kProbe);
    std::memcpy(field.bytes.data() + kProbe, rest.data(), rest.size());
    results[static_cast<std::size_t>(kResultFields - 1 - results_left)] = field.get();
    if (results_left == 0)
      r.client_results = PerftestResults{results[0], results[1], double_from_wire(results[2]),
                                         double_from_wire(results[3]), double_from_wire(results[4])};
    if (results_left == 0 && duplex && r.server_results) r.duplex_sizes.emplace_back(*r.client_results, *r.server_results);
    const proto::Be64 answer = proto::Be64::of(ours[field_index]);
    if (Status s = tcp.write_all(std::as_bytes(std::span{answer.bytes})); !s) return fail(s.error().code, s.error().message);
  }
}

}  // namespace roce::client
