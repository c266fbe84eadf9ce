#include "bench/suite/rig.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_pause.h>

#include <ctime>
#include <cstdio>
#include <cstring>

#include "bench/suite/frames.hpp"
#include "dataplane/ring_port.hpp"
#include "lib/rdma/qp_bring_up.hpp"

namespace roce::bench {
namespace {

using namespace roce::dp;
using namespace roce::netsim;

constexpr proto::MacAddr kMacA{0x02, 0, 0, 0, 0x0C, 0x01};
constexpr proto::MacAddr kMacB{0x02, 0, 0, 0, 0x0C, 0x02};
constexpr proto::Ipv4Addr kIpA{10, 0, 12, 1};
constexpr proto::Ipv4Addr kIpB{10, 0, 12, 2};

bool share_pool = true;
bool per_direction_polls = true;
bool time_parts = false;

std::unique_ptr<Dataplane> make_side(const std::string& name, std::uint16_t port, proto::MacAddr mac, proto::Ipv4Addr ip,
                                     std::uint32_t mbufs, rte_mempool* pool, const rdma::TransportTuning& tuning) {
  DataplaneOptions o;
  o.pool = pool;
  o.engine.tuning = tuning;
  o.name = name;
  o.port.name = std::to_string(port);
  o.mac = mac;
  o.ip = rdma::IpAddress::ipv4(ip);
  o.mbufs = mbufs;
  auto d = Dataplane::create(o);
  if (!d.ok()) {
    std::fprintf(stderr, "dataplane %s: %s\n", name.c_str(), d.error().message.c_str());
    return nullptr;
  }
  return std::move(*d);
}

}  // namespace

void rig_share_pool(bool on) { share_pool = on; }
void rig_per_direction_polls(bool on) { per_direction_polls = on; }
void rig_time_parts(bool on) { time_parts = on; }

bool bring_up(rdma::Engine& e, rdma::QueuePair* qp, std::uint32_t peer_qpn, proto::Ipv4Addr peer_ip, const QpSetOptions& o,
              std::uint32_t rq_psn, std::uint32_t sq_psn) {
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (!rdma::modify_to_init(e, qp, IBV_QPT_RC, kAccess, 0).ok()) return false;
  if (!qp->set_selective_repeat(o.selective_repeat).ok()) return false;
  rdma::PeerPath path;
  path.mtu = o.mtu;
  path.dest_qpn = peer_qpn;
  path.rq_psn = rq_psn;
  path.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4(peer_ip));
  path.min_rnr_timer = 1;
  rdma::SendSide send;
  send.sq_psn = sq_psn;
  send.timeout = o.timeout;
  return rdma::modify_to_rts(e, qp, IBV_QPT_RC, path, send).ok();
}

rdma::QueuePair* make_qp(rdma::Engine& e, rdma::PdHandle pd, rdma::CompletionQueue* cq, std::uint32_t depth) {
  rdma::QpInit init;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = ibv_qp_cap{depth, depth, 1, 1, 0};
  auto qp = e.create_qp(pd, init);
  if (!qp.ok()) {
    std::fprintf(stderr, "create_qp: %s\n", qp.error().message.c_str());
    return nullptr;
  }
  return *qp;
}

rdma::QueuePair* make_write_target_qp(rdma::Engine& e, rdma::PdHandle pd, std::uint32_t peer_qpn, std::uint32_t payload) {
  auto cq = e.create_cq(4096);
  if (!cq.ok()) return nullptr;
  rdma::QpInit init;
  init.send_cq = *cq;
  init.recv_cq = *cq;
  init.cap = ibv_qp_cap{256, 16, 1, 1, 0};
  auto qp = e.create_qp(pd, init);
  if (!qp.ok()) return nullptr;
  rdma::PeerPath path;
  path.mtu = payload <= 1024 ? IBV_MTU_1024 : IBV_MTU_4096;
  path.dest_qpn = peer_qpn;
  path.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4(kPeerIp));
  path.max_dest_rd_atomic = 1;
  if (!rdma::modify_to_init(e, *qp, IBV_QPT_RC, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0).ok() ||
      !rdma::modify_to_rtr(e, *qp, IBV_QPT_RC, path).ok())
    return nullptr;
  return *qp;
}

std::unique_ptr<Rig> Rig::create(const RigOptions& o) {
  std::unique_ptr<Rig> r(new Rig);
  r->time_parts_ = time_parts;
  auto p1 = make_ring_pair("bsa" + o.tag, "bsb" + o.tag);
  if (!p1.ok()) return nullptr;
  std::uint16_t port_b = p1->b;
  if (o.loss >= 0) {
    auto p2 = make_ring_pair("bsc" + o.tag, "bsd" + o.tag);
    if (!p2.ok()) return nullptr;
    LinkEmulatorOptions e;
    e.name = "bsemu" + o.tag;
    e.x.name = std::to_string(p1->b);
    e.y.name = std::to_string(p2->a);
    e.x_to_y.loss = o.loss;
    e.y_to_x.loss = o.loss;
    for (DirectionFaults* f : {&e.x_to_y, &e.y_to_x}) {
      f->rate_bps = o.rate_bps;
      f->delay = o.delay;
    }
    e.seed = o.seed;
    auto emu = LinkEmulator::create(e);
    if (!emu.ok()) {
      std::fprintf(stderr, "link emulator: %s\n", emu.error().message.c_str());
      return nullptr;
    }
    r->emu_ = std::move(*emu);
    r->per_direction_ = per_direction_polls && r->emu_->per_direction_exact();
    port_b = p2->b;
  }
  if (share_pool) {
    // Both sides' mbufs in one pool, as many as their two pools held (the data room as Dataplane's).
    r->pool_ = rte_pktmbuf_pool_create(("bspool" + o.tag).c_str(), 2 * o.mbufs + 1, 256, 0, DataplaneOptions{}.mbuf_data_room,
                                       SOCKET_ID_ANY);
    if (r->pool_ == nullptr) {
      std::fprintf(stderr, "rig pool: %s\n", rte_strerror(rte_errno));
      return nullptr;
    }
  }
  r->a_ = make_side("bsA" + o.tag, p1->a, kMacA, kIpA, o.mbufs, r->pool_, o.tuning);
  r->b_ = make_side("bsB" + o.tag, port_b, kMacB, kIpB, o.mbufs, r->pool_, o.tuning);
  if (!r->a_ || !r->b_) return nullptr;
  r->a_->arp().learn(kIpB, kMacB);
  r->b_->arp().learn(kIpA, kMacA);
  r->pda_ = r->ea().alloc_pd();
  r->pdb_ = r->eb().alloc_pd();
  auto ca = r->ea().create_cq(1u << 16);
  auto cb = r->eb().create_cq(1u << 16);
  if (!ca.ok() || !cb.ok()) return nullptr;
  r->cqa_ = *ca;
  r->cqb_ = *cb;
  return r;
}

Rig::~Rig() {
  stop_b();
  // The emulator sends mbufs of the sides' pools: drain it before they go.
  if (a_ && b_) settle();
  if (a_) a_->worker(0).release_stash();
  if (b_) b_->worker(0).release_stash();
  emu_.reset();
  a_.reset();
  b_.reset();
  rte_mempool_free(pool_);
}

std::vector<QpPair> Rig::connect(const QpSetOptions& o) {
  std::vector<QpPair> out;
  for (unsigned i = 0; i < o.count; ++i) {
    QpPair p{make_qp(ea(), pda_, cqa_, o.depth), make_qp(eb(), pdb_, cqb_, o.depth)};
    if (!p.a || !p.b) return {};
    const std::uint32_t psn_a = next_psn_, psn_b = next_psn_ + 0x100000;
    next_psn_ += 0x1000;
    if (!bring_up(ea(), p.a, p.b->qpn(), kIpB, o, psn_b, psn_a) || !bring_up(eb(), p.b, p.a->qpn(), kIpA, o, psn_a, psn_b)) {
      std::fprintf(stderr, "QP bring-up failed\n");
      return {};
    }
    out.push_back(p);
  }
  return out;
}

// Without a bottleneck queue the emulator is polled one direction at a time: A's frames after
// A's poll, B's after B's, each reaching its receiver at the same step as with two full polls
// (LinkEmulator::poll(Direction)), for half the emulator's bursts: a real link costs the hosts'
// loop nothing, and here the emulator's work is a part of every round trip (docs/loss.md,
// "Session 22 (loop22)").
void Rig::poll_link(Direction d) {
  if (!emu_) return;
  if (per_direction_) emu_->poll(d, emu_->now());
  else emu_->poll(emu_->now());
}

void Rig::step() {
  const bool timed = time_parts_ && !b_remote();
  const std::uint64_t t0 = timed ? rte_rdtsc() : 0;
  a_->poll_once();
  if (b_remote()) return;
  const std::uint64_t t1 = timed ? rte_rdtsc() : 0;
  poll_link(Direction::XtoY);
  const std::uint64_t t2 = timed ? rte_rdtsc() : 0;
  b_->poll_once();
  const std::uint64_t t3 = timed ? rte_rdtsc() : 0;
  poll_link(Direction::YtoX);
  if (!timed) return;
  const std::uint64_t t4 = rte_rdtsc();
  if (t4 - t0 > LoopCount::kPreempted) return;
  parts_.a += t1 - t0;
  parts_.link += (t2 - t1) + (t4 - t3);
  parts_.b += t3 - t2;
  ++parts_.steps;
}

namespace {
Nanos thread_cpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<Nanos>(t.tv_sec) * kSecond + t.tv_nsec;
}
}  // namespace

int Rig::b_main(void* arg) {
  Rig& r = *static_cast<Rig*>(arg);
  LoopCount& n = r.b_loop_;
  const dp::WorkerStats& ws = r.b_->worker(0).stats();
  const Nanos c0 = thread_cpu();
  const std::uint64_t rx0 = ws.rx_packets, tx0 = ws.tx_packets;
  while (!r.b_quit_.load(std::memory_order_acquire)) {
    const std::uint64_t frames = ws.rx_packets + ws.tx_packets;
    const std::uint64_t t0 = rte_rdtsc();
    if (r.emu_) r.emu_->poll(r.emu_->now());
    r.b_->poll_once();
    n.add(ws.rx_packets + ws.tx_packets != frames, rte_rdtsc() - t0);
  }
  if (r.emu_) r.emu_->poll(r.emu_->now());
  n.rx += ws.rx_packets - rx0;
  n.tx += ws.tx_packets - tx0;
  n.cpu += thread_cpu() - c0;
  return 0;
}

bool Rig::start_b(unsigned lcore) {
  if (b_remote()) return true;
  b_quit_.store(false, std::memory_order_release);
  if (rte_eal_remote_launch(&Rig::b_main, this, lcore) != 0) {
    std::fprintf(stderr, "rig: cannot launch side B on lcore %u\n", lcore);
    return false;
  }
  b_lcore_ = static_cast<int>(lcore);
  return true;
}

void Rig::stop_b() {
  if (!b_remote()) return;
  b_quit_.store(true, std::memory_order_release);
  rte_eal_wait_lcore(static_cast<unsigned>(b_lcore_));
  b_lcore_ = -1;
}

void Rig::settle() {
  const Nanos until = now() + 2 * kMilli;
  while (now() < until || ea().has_tx_work() || eb().has_tx_work()) {
    step();
    if (now() > until + 200 * kMilli) break;
  }
  a_->flush();
  b_->flush();
  for (int i = 0; i < 100; ++i) step();
}

bool register_region(Dataplane& d, rdma::PdHandle pd, Region& r, std::span<std::byte> bytes) {
  r.bytes = bytes;
  auto mr = d.memory().register_region(pd, r.bytes.data(), r.bytes.size(),
                                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!mr.ok()) {
    std::fprintf(stderr, "register_region: %s\n", mr.error().message.c_str());
    return false;
  }
  r.mr = *mr;
  return true;
}

Health health_of(const rdma::Engine& e) {
  Health h;
  for (std::size_t i = 1; i < static_cast<std::size_t>(proto::ParseError::Count); ++i)
    h.parse_drops += e.parse_drops(static_cast<proto::ParseError>(i));
  for (std::size_t i = 0; i < static_cast<std::size_t>(rdma::EngineDrop::Count); ++i) h.drops += e.drops(static_cast<rdma::EngineDrop>(i));
  const rdma::Counters c = e.total_counters();
  h.errors = c.get(rdma::Counter::RemoteAccessErrors) + c.get(rdma::Counter::WcErrors) + c.get(rdma::Counter::OpcodeSequenceErrors);
  h.naks = c.get(rdma::Counter::NaksSent);
  h.retransmitted = c.get(rdma::Counter::RetransmittedPkts);
  h.timeouts = c.get(rdma::Counter::RetransmitTimeouts);
  h.early_retransmits = c.get(rdma::Counter::EarlyRetransmits);
  h.window_cuts = c.get(rdma::Counter::WindowCuts);
  h.tail_probes = c.get(rdma::Counter::TailProbes);
  h.loss_events = c.get(rdma::Counter::LossEvents);
  h.held = c.get(rdma::Counter::OutOfOrderBuffered);
  h.placed = c.get(rdma::Counter::ReorderPlaced);
  h.pool_exhausted = c.get(rdma::Counter::ReorderPoolExhausted);
  h.pool_bytes = e.reorder_pool().bytes();
  h.sacks_sent = c.get(rdma::Counter::SacksSent);
  return h;
}

}  // namespace roce::bench
