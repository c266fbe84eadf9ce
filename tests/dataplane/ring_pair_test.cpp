// Two engines in one process over a net_ring pair: the real dataplane path (mbufs, ARP,
// bursts, TX buffering, ISA-L ICRC), stepped by hand from the test thread.
#include <gtest/gtest.h>
#include <rte_ethdev.h>

#include <random>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::ring_pair_test {
namespace {

using dp::Dataplane;

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// Seeded loss on the ring between the ports, applied where the frames come off it (an RX
// callback may drop and compact; a TX callback may not, since tx_burst's caller would then
// retry pointers it no longer owns).
struct Loss {
  std::mt19937_64 rng;
  double p;
  std::uint64_t dropped = 0;
};

std::uint16_t drop_some(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  auto* loss = static_cast<Loss*>(arg);
  std::uint16_t kept = 0;
  std::uniform_real_distribution<double> u(0, 1);
  for (std::uint16_t i = 0; i < n; ++i) {
    if (u(loss->rng) < loss->p) {
      rte_pktmbuf_free(pkts[i]);
      ++loss->dropped;
    } else {
      pkts[kept++] = pkts[i];
    }
  }
  return kept;
}

// How the dataplanes are laid out: one run-to-completion worker; a pipeline (IO lcore steering
// to two workers); two run-to-completion workers on two queues each, where QP pairs are
// connected crosswise so every frame reaches the queue of a worker that does not own its QP
// and must be handed over.
struct Layout {
  dp::Mode mode;
  unsigned workers;
  unsigned queues;
  const char* name;
  bool ipv6 = false;  // endpoints fd77::1 and fd77::2, resolved by neighbour discovery
};

rdma::IpAddress address_of(bool ipv6, std::uint8_t host) {
  if (ipv6) return rdma::IpAddress::ipv6({0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, host});
  return rdma::IpAddress::ipv4({10, 0, 0, host});
}

class RingPair : public ::testing::TestWithParam<Layout> {
 public:
  void SetUp() override {
    static int n = 0;
    const std::string sfx = std::to_string(n++);
    auto pair = dp::make_ring_pair("ringA" + sfx, "ringB" + sfx, 4096, GetParam().queues);
    ASSERT_TRUE(pair.ok()) << pair.error().message;
    ports_ = *pair;
    const rdma::IpAddress ip_a = address_of(GetParam().ipv6, 1), ip_b = address_of(GetParam().ipv6, 2);
    a_ = make_dp("a" + sfx, std::to_string(ports_.a), ip_a, {2, 0, 0, 0, 0, 1});
    b_ = make_dp("b" + sfx, std::to_string(ports_.b), ip_b, {2, 0, 0, 0, 0, 2});
    ASSERT_TRUE(a_ && b_);
    // ARP (or neighbour discovery) both ways over the rings before any QP needs a MAC.
    a_->worker(0).solicit(ip_b);
    b_->worker(0).solicit(ip_a);
    ASSERT_TRUE(step_until([&] { return a_->cached(ip_b) && b_->cached(ip_a); }));
  }
  void TearDown() override {
    if (!a_ || !b_) return;
    step_until([] { return false; }, 2000);  // let the last ACKs settle
    for (Dataplane* d : {a_.get(), b_.get()}) {
      d->flush();
      for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
    }
    // Everything that went out came back in and was freed: no mbuf leaked on any path.
    step_until([] { return false; }, 500);
    for (Dataplane* d : {a_.get(), b_.get()}) {
      for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
      EXPECT_EQ(d->mbufs_in_use(), 0u) << "mbufs leaked by " << d->port().name;
    }
    for (std::uint16_t q = 0; q < loss_cbs_.size(); ++q) rte_eth_remove_rx_callback(ports_.b, q, loss_cbs_[q]);
  }

  std::unique_ptr<Dataplane> make_dp(const std::string& name, const std::string& port, const rdma::IpAddress& ip,
                                     proto::MacAddr mac) {
    dp::DataplaneOptions o;
    o.name = name;
    o.port.name = port;
    o.ip = ip;
    o.mac = mac;
    o.mode = GetParam().mode;
    o.workers = GetParam().workers;
    o.mbufs = 4095;
    auto d = Dataplane::create(o);
    EXPECT_TRUE(d.ok()) << d.error().message;
    return d.ok() ? std::move(*d) : nullptr;
  }

  // Polls both dataplanes until `done` or `max_rounds` polls or 30 s of wall time.
  bool step_until(const std::function<bool()>& done, long max_rounds = 50'000'000) {
    const Nanos limit = a_->now() + 30 * kSecond;
    for (long i = 0; i < max_rounds && a_->now() < limit; ++i) {
      if (done()) return true;
      a_->poll_once();
      b_->poll_once();
    }
    return done();
  }

  std::string port_stats() {
    std::string s;
    for (Dataplane* d : {a_.get(), b_.get()})
      for (unsigned w = 0; w < d->worker_count(); ++w) {
        const auto& st = d->worker(w).stats();
        s += d->port().name + "/w" + std::to_string(w) + ": tx=" + std::to_string(st.tx_packets) +
             " tx_dropped=" + std::to_string(st.tx_dropped) + " rx=" + std::to_string(st.rx_packets) + " ";
      }
    for (Dataplane* d : {a_.get(), b_.get()})
      if (const auto* io = d->io_stats())
        s += d->port().name + "/io: rx=" + std::to_string(io->rx_packets) + " tx=" + std::to_string(io->tx_packets) +
             " tx_dropped=" + std::to_string(io->tx_dropped) + " ring_full=" + std::to_string(io->worker_ring_full) +
             " not_roce=" + std::to_string(io->not_roce) + " ";
    return s;
  }

  void add_loss(double p, std::uint64_t seed) {
    loss_ = std::make_unique<Loss>(Loss{std::mt19937_64(seed), p});
    for (std::uint16_t q = 0; q < GetParam().queues; ++q) {
      loss_cbs_.push_back(rte_eth_add_rx_callback(ports_.b, q, drop_some, loss_.get()));
      ASSERT_NE(loss_cbs_.back(), nullptr);
    }
  }

  // One QP pair per shard so both workers carry traffic. With several queues the far QP lives
  // on the other worker: a's worker i sends on queue i, which b's worker i polls, but the QP
  // belongs to b's worker i+1.
  std::vector<std::pair<Endpoint, Endpoint>> connect(unsigned count, const QpOptions& o) {
    std::vector<std::pair<Endpoint, Endpoint>> out;
    const unsigned cross = GetParam().queues > 1 ? 1 : 0;
    for (unsigned i = 0; i < count; ++i) {
      Endpoint ea = make_endpoint(a_->worker(i % a_->worker_count()).engine(), o);
      Endpoint eb = make_endpoint(b_->worker((i + cross) % b_->worker_count()).engine(), o);
      EXPECT_EQ(a_->owner_of(ea.qp->qpn()).value_or(dp::kMaxWorkers), i % a_->worker_count());
      connect_pair(ea, eb, o);
      out.emplace_back(ea, eb);
    }
    return out;
  }

  dp::RingPair ports_;
  std::unique_ptr<Dataplane> a_, b_;
  std::unique_ptr<Loss> loss_;
  std::vector<const rte_eth_rxtx_callback*> loss_cbs_;
};

std::string counters_of(const Endpoint& e) {
  std::string s;
  const rdma::Counters& c = e.qp->counters();
  for (std::size_t k = 0; k < rdma::kCounterCount; ++k)
    if (c.values()[k]) s += std::string(rdma::counter_name(static_cast<rdma::Counter>(k))) + "=" + std::to_string(c.values()[k]) + " ";
  return s;
}

void run_workload(RingPair* t, std::pair<Endpoint, Endpoint>& qp, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Endpoint& a = qp.first;
  Endpoint& b = qp.second;
  std::vector<std::byte> src(1 << 20), remote(1 << 20), back(1 << 20), recv(1 << 20);
  for (auto& x : src) x = static_cast<std::byte>(rng());
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*a.engine, a.pd, back, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*b.engine, b.pd, remote, kAll);
  auto* vm = reg(*b.engine, b.pd, recv, IBV_ACCESS_LOCAL_WRITE);
  const std::uint32_t sizes[] = {0, 1, 63, 64, 1000, 1024, 1025, 4096, 4097, 65536, 300001, 1 << 20};
  std::uint64_t id = 0;
  for (std::uint32_t len : sizes) {
    // WRITE, then READ it back, then SEND it.
    ibv_sge g = sge(src.data(), len, sm);
    ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, id++, &g, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
    ibv_sge r = sge(back.data(), len, bm);
    ASSERT_EQ(post(a, IBV_WR_RDMA_READ, id++, &r, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
    ibv_sge v = sge(recv.data(), 1 << 20, vm);
    ASSERT_EQ(post_recv(b, id, &v, 1), 0);
    ASSERT_EQ(post(a, IBV_WR_SEND, id++, &g, 1), 0);
    std::vector<ibv_wc> wcs, rwcs;
    ASSERT_TRUE(t->step_until([&] {
      for (auto& w : drain(a)) wcs.push_back(w);
      for (auto& w : drain(b)) rwcs.push_back(w);
      return wcs.size() == 3 && rwcs.size() == 1;
    })) << "len " << len << ": " << wcs.size() << " send and " << rwcs.size() << " receive completions; "
        << counters_of(a) << " / " << counters_of(b) << " / " << t->port_stats();
    for (const ibv_wc& w : wcs) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
    EXPECT_EQ(rwcs[0].byte_len, len);
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, remote.begin())) << "WRITE " << len;
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, back.begin())) << "READ " << len;
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, recv.begin())) << "SEND " << len;
  }
  // Atomics: 100 fetch-adds then a compare-swap.
  std::vector<std::byte> res(8);
  auto* resm = reg(*a.engine, a.pd, res, IBV_ACCESS_LOCAL_WRITE);
  auto* word = reinterpret_cast<std::uint64_t*>(remote.data());
  *word = 0;
  for (int i = 0; i < 100; ++i) {
    ibv_sge g = sge(res.data(), 8, resm);
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = reinterpret_cast<std::uint64_t>(word);
    wr.wr.atomic.rkey = rm->rkey();
    wr.wr.atomic.compare_add = 3;
    ibv_send_wr* bad;
    ASSERT_EQ(a.engine->post_send(a.qp, &wr, &bad), 0);
    std::vector<ibv_wc> w;
    ASSERT_TRUE(t->step_until([&] {
      for (auto& c : drain(a)) w.push_back(c);
      return !w.empty();
    }));
    ASSERT_EQ(w[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(res.data()), 3u * static_cast<unsigned>(i));
  }
  EXPECT_EQ(*word, 300u);
}

TEST_P(RingPair, EveryOperationOfManySizesIsByteExact) {
  QpOptions o;
  auto qps = connect(2, o);
  for (std::size_t i = 0; i < qps.size(); ++i) run_workload(this, qps[i], 10 + i);
  EXPECT_EQ(a_->worker(0).stats().mbuf_alloc_failures, 0u);
  if (GetParam().queues > 1) {
    for (Dataplane* d : {a_.get(), b_.get()})
      for (unsigned w = 0; w < d->worker_count(); ++w) {
        EXPECT_GT(d->worker(w).stats().rx_handed_off, 0u) << d->port().name << "/w" << w;
        EXPECT_GT(d->worker(w).stats().rx_from_inbox, 0u) << d->port().name << "/w" << w;
        EXPECT_EQ(d->worker(w).stats().rx_handoff_dropped, 0u) << d->port().name << "/w" << w;
      }
  }
}

TEST_P(RingPair, GoBackNRecoversFromLossOnTheRing) {
  add_loss(0.01, 99);
  QpOptions o;
  o.timeout = 12;
  auto qps = connect(2, o);
  for (std::size_t i = 0; i < qps.size(); ++i) run_workload(this, qps[i], 20 + i);
  EXPECT_GT(loss_->dropped, 0u);
  std::uint64_t retransmitted = 0;
  for (auto& q : qps) retransmitted += q.first.qp->counters().get(rdma::Counter::RetransmittedPkts);
  EXPECT_GT(retransmitted, 0u);
}

// Over IPv6 the frames carry a 40-byte header (ICRC masked differently) and the peers find
// each other by neighbour discovery; the pipeline's IO lcore steers that to worker 0.
class RingPairIpv6 : public RingPair {};

TEST_P(RingPairIpv6, NeighborDiscoveryAnsweredAndBadSolicitationsCounted) {
  const dp::WorkerStats& sb = b_->worker(0).stats();
  EXPECT_EQ(sb.ndp_advertisements, 1u);
  EXPECT_EQ(sb.ndp_solicitations_sent, 1u);
  // A solicitation with a broken checksum: counted, not answered.
  rte_mbuf* m = rte_pktmbuf_alloc(a_->pool());
  ASSERT_NE(m, nullptr);
  auto* f = rte_pktmbuf_mtod(m, std::byte*);
  dp::build_neighbor_solicitation({2, 0, 0, 0, 0, 1}, address_of(true, 1).v6, address_of(true, 2).v6,
                                  {f, dp::kNdFrameBytes});
  f[dp::kNdFrameBytes - 1] ^= std::byte{0x40};
  m->data_len = m->pkt_len = dp::kNdFrameBytes;
  ASSERT_EQ(rte_eth_tx_burst(ports_.a, 0, &m, 1), 1);
  ASSERT_TRUE(step_until([&] { return b_->worker(0).stats().ndp_invalid == 1; }));
  step_until([] { return false; }, 100);
  EXPECT_EQ(b_->worker(0).stats().ndp_advertisements, 1u);
  QpOptions o;
  auto qps = connect(1, o);
  run_workload(this, qps[0], 40);
}

INSTANTIATE_TEST_SUITE_P(Modes, RingPair,
                         ::testing::Values(Layout{dp::Mode::RunToCompletion, 1, 1, "RunToCompletion"},
                                           Layout{dp::Mode::Pipeline, 2, 1, "Pipeline"},
                                           Layout{dp::Mode::RunToCompletion, 2, 2, "TwoQueuesHandOff"},
                                           Layout{dp::Mode::RunToCompletion, 1, 1, "Ipv6", true}),
                         [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(Modes, RingPairIpv6,
                         ::testing::Values(Layout{dp::Mode::RunToCompletion, 1, 1, "RunToCompletion", true},
                                           Layout{dp::Mode::Pipeline, 2, 1, "Pipeline", true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace roce::test::ring_pair_test
