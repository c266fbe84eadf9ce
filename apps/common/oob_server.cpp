#include "apps/common/oob_server.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <thread>

#include "apps/common/oob/perftest.hpp"
#include "apps/common/oob/pingpong.hpp"
#include "apps/common/oob/refusal.hpp"

namespace roce::app {

namespace {

constexpr std::size_t kProbe = 5;
constexpr char kDone[kProbe] = {'d', 'o', 'n', 'e', '\0'};

bool looks_like_record(std::span<const std::byte> first) {
  // Both records start with a 4-hex-digit LID and a colon ("0000:"); perftest's version does not.
  return first.size() == kProbe && std::to_integer<char>(first[4]) == ':';
}

}  // namespace

bool OobServer::wait_input(TcpStream& tcp, const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    if (!handshake_done_ && std::chrono::steady_clock::now() >= handshake_deadline_) return true;  // the read times out
    if (tcp.wait_readable(200)) return true;
  }
  return false;
}

int OobServer::read_timeout_ms() const {
  if (handshake_done_) return cfg_.oob_timeout_ms;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(handshake_deadline_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

Result<OobServer::ServedQp*> OobServer::add_qp(const QpParams& p, const RemoteQp& peer, std::uint32_t out_reads, bool echo) {
  auto lq = conn_.create(p);
  if (!lq) return lq.error();
  auto q = std::make_unique<ServedQp>();
  q->local = *lq;
  q->mine.out_reads = static_cast<std::uint16_t>(out_reads);
  q->mine.qpn = lq->qpn;
  q->mine.psn = lq->psn;
  q->mine.rkey = cfg_.exposed.lkey;
  q->mine.vaddr = reinterpret_cast<std::uint64_t>(cfg_.exposed.ptr) + cfg_.write_echo_size.value_or(0);
  q->mine.gid = conn_.local_gid();
  q->receiver = std::make_unique<ReceiveServer>(q->local, cfg_.recv_region, cfg_.recv_depth, echo);
  ServedQp* raw = q.get();
  // Receives go up before the QP leaves INIT, so a SEND never meets an empty queue.
  q->driver_id = drivers_.add(q->local.worker, [raw](Engine& e, Nanos now) {
    raw->receiver->poll(e, now);
    if (raw->echo) raw->echo->poll(e, now);
  });
  if (Status s = conn_.connect(q->local, peer, p); !s) {
    drivers_.remove(q->local.worker, q->driver_id);
    conn_.destroy(q->local);
    return s.error();
  }
  qps_.push_back(std::move(q));
  return raw;
}

OobServer::~OobServer() {
  SessionReport discarded;
  teardown(discarded);
}

void OobServer::teardown(SessionReport& r) {
  for (auto& q : qps_) {
    drivers_.remove(q->local.worker, q->driver_id);
    r.received_messages += q->receiver->received();
    r.received_bytes += q->receiver->bytes();
    conn_.destroy(q->local);
  }
  qps_.clear();
  by_remote_qpn_.clear();
}

Result<SessionReport> OobServer::serve(TcpStream& tcp, const std::atomic<bool>& stop) {
  handshake_deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.handshake_timeout_ms);
  handshake_done_ = false;
  const std::string peer = tcp.peer_endpoint();
  auto r = serve_exchange(tcp, stop);
  if (r || r.error().code == ECANCELED) return r;
  std::string why = r.error().message;
  if (!handshake_done_) {
    if (r.error().code == ETIMEDOUT) why = "handshake not finished in time: " + why;
    send_refusal(tcp, why);
  }
  return make_error(r.error().code, peer + ": " + why);
}

Result<SessionReport> OobServer::serve_exchange(TcpStream& tcp, const std::atomic<bool>& stop) {
  std::array<std::byte, kProbe> first{};
  if (!wait_input(tcp, stop)) return make_error(ECANCELED, "stopped");
  if (Status s = tcp.read_exact(first, read_timeout_ms()); !s) return s.error();
  return looks_like_record(first) ? serve_pingpong(tcp, first, stop) : serve_perftest(tcp, first, stop);
}

Result<SessionReport> OobServer::serve_pingpong(TcpStream& tcp, std::span<const std::byte> first,
                                                const std::atomic<bool>& stop) {
  SessionReport r;
  r.peer = tcp.peer_address();
  r.tool = "ibv_rc_pingpong";
  std::array<std::byte, kPingpongRecordBytes> rec{};
  std::memcpy(rec.data(), first.data(), first.size());
  if (Status s = tcp.read_exact(std::span{rec}.subspan(first.size()), read_timeout_ms()); !s) return s.error();
  auto peer = parse_pingpong(rec);
  if (!peer) return peer.error();
  QpParams p = cfg_.qp;
  p.max_rd_atomic = 1;  // what ibv_rc_pingpong sets
  auto qp = add_qp(p, RemoteQp{peer->qpn, peer->psn, peer->gid}, 1, true);
  if (!qp) return qp.error();
  PingpongDest mine;
  mine.qpn = (*qp)->local.qpn;
  mine.psn = (*qp)->local.psn;
  mine.gid = conn_.local_gid();
  const auto out = format_pingpong(mine);
  if (Status s = tcp.write_all(out); !s) return s.error();
  std::array<std::byte, kProbe> done{};
  if (Status s = tcp.read_exact(done, read_timeout_ms()); !s) return s.error();
  handshake_done_ = true;
  r.qps = 1;
  r.mtu = p.mtu;
  // The client closes the TCP connection and ping-pongs; echo until it goes quiet.
  const ServedQp* q = *qp;
  std::uint64_t last = 0;
  auto quiet_since = std::chrono::steady_clock::now();
  while (!stop.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::uint64_t got = drivers_.inspect(q->local.worker, [q] { return q->receiver->received(); });
    const auto now = std::chrono::steady_clock::now();
    if (got != last) {
      last = got;
      quiet_since = now;
    } else if (now - quiet_since > std::chrono::nanoseconds(cfg_.pingpong_idle_timeout)) {
      break;
    }
  }
  teardown(r);
  return r;
}

Result<SessionReport> OobServer::serve_perftest(TcpStream& tcp, std::span<const std::byte> first,
                                                const std::atomic<bool>& stop) {
  SessionReport r;
  r.peer = tcp.peer_address();
  r.tool = "perftest";
  // The version: 16 bytes, of which `first` holds 5.
  std::array<char, 16> version{};
  std::memcpy(version.data(), first.data(), first.size());
  if (Status s = tcp.read_exact(std::as_writable_bytes(std::span{version}).subspan(first.size()), read_timeout_ms()); !s)
    return s.error();
  version.back() = '\0';
  r.remote_version = version.data();
  if (compare_versions(r.remote_version, "5.31") < 0)
    return make_error(EPROTO, "perftest " + r.remote_version + " is older than 5.31, whose exchange this server speaks");
  std::array<char, 16> mine_version{};
  std::strncpy(mine_version.data(), PerftestSession::kVersion, mine_version.size() - 1);
  if (Status s = tcp.write_all(std::as_bytes(std::span{mine_version})); !s) return s.error();
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

  // Once the results exchange has begun, its five 8-byte fields (size, iterations, peak, average,
  // message rate) come in a row: a field whose fifth byte happens to be ':' (a double's mantissa
  // can be anything) is not a record then. perftest syncs with one more record pair afterwards.
  constexpr int kResultFields = 5;
  int results_left = 0;
  for (;;) {
    if (!wait_input(tcp, stop)) {
      teardown(r);
      return make_error(ECANCELED, "stopped");
    }
    std::array<std::byte, kProbe> head{};
    if (Status s = tcp.read_exact(head, read_timeout_ms()); !s) {
      teardown(r);
      // perftest's latency tests close the connection without "done": that is their end.
      if (s.error().code == ECONNRESET && r.qps > 0) return r;
      return s.error();
    }
    if (std::memcmp(head.data(), kDone, kProbe) == 0) {
      tcp.write_all(std::as_bytes(std::span{kDone}));
      teardown(r);
      return r;
    }
    if (results_left == 0 && looks_like_record(head)) {
      std::array<std::byte, kPerftestRecordBytes> rec{};
      std::memcpy(rec.data(), head.data(), kProbe);
      if (Status s = tcp.read_exact(std::span{rec}.subspan(kProbe), read_timeout_ms()); !s) return s.error();
      auto peer = parse_perftest(rec);
      if (!peer) return peer.error();
      ServedQp* q = nullptr;
      if (auto it = by_remote_qpn_.find(peer->qpn); it != by_remote_qpn_.end()) {
        q = it->second;
      } else {
        auto added = add_qp(p, RemoteQp{peer->qpn, peer->psn, peer->gid}, p.max_rd_atomic, cfg_.echo_sends);
        if (!added) return added.error();
        q = *added;
        if (cfg_.write_echo_size) {
          auto echo = std::make_unique<WriteEcho>(q->local, *cfg_.write_echo_size, cfg_.exposed,
                                                  RemoteBuffer{peer->vaddr, peer->rkey});
          // Hand it over on the worker's thread: the QP's driver already runs there.
          drivers_.inspect(q->local.worker, [&] {
            q->echo = std::move(echo);
            return 0;
          });
        }
        by_remote_qpn_[peer->qpn] = q;
        ++r.qps;
      }
      const std::string out = format_perftest(q->mine);
      if (Status s = tcp.write_all(std::as_bytes(std::span{out})); !s) return s.error();
      handshake_done_ = true;
      continue;
    }
    // A results field (8 bytes; 4 for iterations from old peers we refuse above): ours are zero,
    // the client reports its own figures.
    results_left = (results_left == 0 ? kResultFields : results_left) - 1;
    std::array<std::byte, 3> rest{};
    if (Status s = tcp.read_exact(rest, read_timeout_ms()); !s) return s.error();
    const std::array<std::byte, 8> zero{};
    if (Status s = tcp.write_all(zero); !s) return s.error();
  }
}

}  // namespace roce::app
