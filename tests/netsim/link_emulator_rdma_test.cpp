// Two dataplanes talking RC through the link emulator (A <-> emuX, emuY <-> B over net_ring
// pairs): the transport must deliver every byte exactly through loss, reordering and
// duplication, and DCQCN must slow the sender down when the emulator's bottleneck marks CE.
// The emulator is either stepped with the dataplanes or runs on its own lcore.
#include <gtest/gtest.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "netsim/link_emulator.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::link_emulator_rdma_test {
namespace {

using dp::Dataplane;
using netsim::Direction;
using netsim::LinkCounter;
using netsim::LinkEmulator;

enum class EmulatorRuns { Stepped, OnItsOwnLcore };

class ThroughEmulator : public ::testing::TestWithParam<EmulatorRuns> {
 public:
  // Builds A <-> emulator <-> B; A is side X.
  void build(const netsim::DirectionFaults& a_to_b, const netsim::DirectionFaults& b_to_a, const rdma::EngineConfig& engine = {},
             std::uint64_t seed = 1) {
    static int n = 0;
    const std::string s = std::to_string(n++);
    auto left = dp::make_ring_pair("le_a" + s, "le_x" + s);
    auto right = dp::make_ring_pair("le_y" + s, "le_b" + s);
    ASSERT_TRUE(left.ok() && right.ok());
    a_ = make_dp("lea" + s, std::to_string(left->a), {10, 0, 0, 1}, {2, 0, 0, 0, 0, 1}, engine);
    b_ = make_dp("leb" + s, std::to_string(right->b), {10, 0, 0, 2}, {2, 0, 0, 0, 0, 2}, engine);
    ASSERT_TRUE(a_ && b_);
    netsim::LinkEmulatorOptions o;
    o.name = "le_emu" + s;
    o.x.name = std::to_string(left->b);
    o.y.name = std::to_string(right->a);
    o.x_to_y = a_to_b;
    o.y_to_x = b_to_a;
    o.seed = seed;
    auto e = LinkEmulator::create(o);
    ASSERT_TRUE(e.ok()) << e.error().message;
    emu_ = std::move(*e);
    if (GetParam() == EmulatorRuns::OnItsOwnLcore) {
      const unsigned lcore = rte_get_next_lcore(-1, 1, 0);
      if (lcore >= RTE_MAX_LCORE) GTEST_SKIP() << "no worker lcore in this EAL (one core): cannot launch the emulator";
      ASSERT_TRUE(emu_->launch(lcore).ok());
      launched_ = true;
    }
    // ARP goes through the faulty link too: ask again until both sides know each other.
    long round = 0;
    ASSERT_TRUE(step_until([&] {
      if (round++ % 2000 == 0) {
        a_->worker(0).request_arp({10, 0, 0, 2});
        b_->worker(0).request_arp({10, 0, 0, 1});
      }
      return a_->arp().lookup({10, 0, 0, 2}) && b_->arp().lookup({10, 0, 0, 1});
    }));
  }

  void TearDown() override {
    if (!a_ || !b_ || !emu_) return;
    if (launched_) {
      emu_->stop();
      emu_->wait();
      launched_ = false;
    }
    // Let the last ACKs and every held frame through (stepping the emulator by hand from here),
    // then check that no pool lost an mbuf.
    step_until([&] { return false; }, 3000);
    step_until([&] { return emu_->frames_held() == 0; });
    for (Dataplane* d : {a_.get(), b_.get()}) {
      d->flush();
      for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
    }
    emu_->poll(emu_->now());  // takes what the flushes sent
    step_until([&] { return emu_->frames_held() == 0; });
    for (int i = 0; i < 10; ++i) {
      a_->poll_once();
      b_->poll_once();
    }
    EXPECT_EQ(emu_->frames_held(), 0u);
    for (Dataplane* d : {a_.get(), b_.get()}) {
      for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
      EXPECT_EQ(d->mbufs_in_use(), 0u) << "mbufs leaked from the pool of " << d->port().name;
    }
    EXPECT_EQ(emu_->mbufs_in_use(), 0u) << "duplicates leaked from the emulator's pool";
    emu_.reset();
  }

  std::unique_ptr<Dataplane> make_dp(const std::string& name, const std::string& port, proto::Ipv4Addr ip,
                                     proto::MacAddr mac, const rdma::EngineConfig& engine) {
    dp::DataplaneOptions o;
    o.name = name;
    o.port.name = port;
    o.ip = rdma::IpAddress::ipv4(ip);
    o.mac = mac;
    o.mbufs = 4095;
    o.engine = engine;
    auto d = Dataplane::create(o);
    EXPECT_TRUE(d.ok()) << d.error().message;
    return d.ok() ? std::move(*d) : nullptr;
  }

  bool step_until(const std::function<bool()>& done, long max_rounds = 50'000'000) {
    const Nanos limit = a_->now() + 60 * kSecond;
    for (long i = 0; i < max_rounds && a_->now() < limit; ++i) {
      if (done()) return true;
      a_->poll_once();
      if (!launched_) emu_->poll(emu_->now());
      b_->poll_once();
    }
    return done();
  }

  std::string link_stats() const {
    return "a->b: " + netsim::to_string(emu_->stats(Direction::XtoY)) + "; b->a: " + netsim::to_string(emu_->stats(Direction::YtoX));
  }

  std::unique_ptr<Dataplane> a_, b_;
  std::unique_ptr<LinkEmulator> emu_;
  bool launched_ = false;
};

std::string counters_of(const Endpoint& e) {
  std::string s;
  const rdma::Counters& c = e.qp->counters();
  for (std::size_t k = 0; k < rdma::kCounterCount; ++k)
    if (c.values()[k]) s += std::string(rdma::counter_name(static_cast<rdma::Counter>(k))) + "=" + std::to_string(c.values()[k]) + " ";
  return s;
}

constexpr int kRemoteAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// WRITE, READ back and SEND of each size, every byte checked.
void write_read_send(ThroughEmulator& t, Endpoint& a, Endpoint& b, std::uint64_t seed,
                     std::initializer_list<std::uint32_t> sizes) {
  std::mt19937_64 rng(seed);
  const std::size_t max = 1 << 20;
  std::vector<std::byte> src(max), remote(max), back(max), recv(max);
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*a.engine, a.pd, back, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*b.engine, b.pd, remote, kRemoteAccess);
  auto* vm = reg(*b.engine, b.pd, recv, IBV_ACCESS_LOCAL_WRITE);
  std::uint64_t id = 0;
  for (std::uint32_t len : sizes) {
    for (auto& x : src) x = static_cast<std::byte>(rng());
    ibv_sge g = sge(src.data(), len, sm);
    ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, id++, &g, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
    ibv_sge r = sge(back.data(), len, bm);
    ASSERT_EQ(post(a, IBV_WR_RDMA_READ, id++, &r, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
    ibv_sge v = sge(recv.data(), static_cast<std::uint32_t>(max), vm);
    ASSERT_EQ(post_recv(b, id, &v, 1), 0);
    ASSERT_EQ(post(a, IBV_WR_SEND, id++, &g, 1), 0);
    std::vector<ibv_wc> wcs, rwcs;
    ASSERT_TRUE(t.step_until([&] {
      for (auto& w : drain(a)) wcs.push_back(w);
      for (auto& w : drain(b)) rwcs.push_back(w);
      return wcs.size() == 3 && rwcs.size() == 1;
    })) << "len " << len << ": " << wcs.size() << " send and " << rwcs.size() << " receive completions; "
        << counters_of(a) << " / " << counters_of(b) << " / " << t.link_stats();
    for (const ibv_wc& w : wcs) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
    EXPECT_EQ(rwcs[0].status, IBV_WC_SUCCESS) << describe(rwcs[0]);
    EXPECT_EQ(rwcs[0].byte_len, len);
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, remote.begin())) << "WRITE " << len;
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, back.begin())) << "READ " << len;
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, recv.begin())) << "SEND " << len;
  }
}

TEST_P(ThroughEmulator, WriteReadSendAreByteExactThroughLossReorderingAndDuplication) {
  netsim::DirectionFaults f;
  f.loss = 0.02;
  f.reorder = 0.02;
  f.reorder_delay = 30 * kMicro;
  f.duplicate = 0.02;
  f.delay = 5 * kMicro;
  f.jitter = 2 * kMicro;
  build(f, f, {}, 2024);
  if (IsSkipped()) return;
  QpOptions o;
  o.timeout = 12;
  Endpoint a = make_endpoint(a_->worker(0).engine(), o);
  Endpoint b = make_endpoint(b_->worker(0).engine(), o);
  connect_pair(a, b, o);
  write_read_send(*this, a, b, 7, {0, 1, 1000, 1024, 4097, 65536, 300001, 1 << 20});

  std::printf("  %s\n  a: %s\n", link_stats().c_str(), counters_of(a).c_str());
  for (Direction d : {Direction::XtoY, Direction::YtoX}) {
    const netsim::LinkStats s = emu_->stats(d);
    EXPECT_GT(s.get(LinkCounter::Lost), 0u) << netsim::to_string(d);
    EXPECT_GT(s.get(LinkCounter::Duplicated), 0u) << netsim::to_string(d);
    EXPECT_GT(s.get(LinkCounter::Reordered), 0u) << netsim::to_string(d);
  }
  EXPECT_GT(a.qp->counters().get(rdma::Counter::RetransmittedPkts), 0u);
  EXPECT_GT(b.qp->counters().get(rdma::Counter::DuplicateRequest), 0u);
}

// The sender's DCQCN line rate is 10 Gb/s; the emulator's bottleneck runs at 1 Gb/s and marks
// ECT frames as its queue grows. The receiver answers marks with CNPs, and the sender's
// reaction point cuts Rc below line rate.
TEST_P(ThroughEmulator, EcnMarksAtTheBottleneckMakeDcqcnCutTheSenderRate) {
  constexpr double kLine = 10e9;
  netsim::DirectionFaults bottleneck;
  bottleneck.rate_bps = 1e9;
  bottleneck.queue_bytes = 2'000'000;
  bottleneck.red = {20'000, 200'000, 0.2};
  rdma::EngineConfig cc;
  cc.tuning.congestion.enabled = true;
  cc.tuning.congestion.rp = cc::paper_params(kLine);
  build(bottleneck, {}, cc, 5);
  if (IsSkipped()) return;
  QpOptions o;
  o.mtu = IBV_MTU_4096;
  Endpoint a = make_endpoint(a_->worker(0).engine(), o);
  Endpoint b = make_endpoint(b_->worker(0).engine(), o);
  connect_pair(a, b, o);
  std::vector<std::byte> src(4 << 20), dst(4 << 20);
  std::mt19937_64 rng(3);
  for (auto& x : src) x = static_cast<std::byte>(rng());
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*b.engine, b.pd, dst, kRemoteAccess);
  const int kWrites = 8;
  const std::uint32_t kBytes = 1 << 20;
  for (int i = 0; i < kWrites; ++i) {
    ibv_sge g = sge(src.data() + static_cast<std::size_t>(i % 4) * kBytes, kBytes, sm);
    ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, static_cast<std::uint64_t>(i), &g, 1,
                   reinterpret_cast<std::uint64_t>(dst.data()) + static_cast<std::uint64_t>(i % 4) * kBytes, dm->rkey()),
              0);
  }
  const rdma::QpCongestion* rp = a.qp->congestion();
  ASSERT_NE(rp, nullptr);
  std::vector<ibv_wc> wcs;
  double min_rc = kLine;  // Rc recovers once the marks stop, so the cut is seen while it lasts
  ASSERT_TRUE(step_until([&] {
    min_rc = std::min(min_rc, rp->reaction_point().rc_bps());
    for (auto& w : drain(a)) wcs.push_back(w);
    return wcs.size() == static_cast<std::size_t>(kWrites);
  })) << counters_of(a) << " / " << counters_of(b) << " / " << link_stats();
  for (const ibv_wc& w : wcs) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));

  const netsim::LinkStats s = emu_->stats(Direction::XtoY);
  std::printf("  %s\n  sender: %s lowest Rc=%.3f Gb/s, at the end %.3f Gb/s\n  receiver: %s\n", link_stats().c_str(),
              counters_of(a).c_str(), min_rc / 1e9, rp->reaction_point().rc_bps() / 1e9, counters_of(b).c_str());
  EXPECT_GT(s.get(LinkCounter::Marked), 0u);
  EXPECT_GT(b.qp->counters().get(rdma::Counter::EcnCeReceived), 0u);
  EXPECT_GT(b.qp->counters().get(rdma::Counter::CnpSent), 0u);
  EXPECT_GT(a.qp->counters().get(rdma::Counter::CnpReceived), 0u);
  EXPECT_GT(rp->reaction_point().counters().rate_decreases, 0u);
  // The first CNP cuts with alpha = 1, halving Rc; later ones cut further.
  EXPECT_LE(min_rc, kLine / 2);
}

INSTANTIATE_TEST_SUITE_P(Emulator, ThroughEmulator, ::testing::Values(EmulatorRuns::Stepped, EmulatorRuns::OnItsOwnLcore),
                         [](const auto& info) { return info.param == EmulatorRuns::Stepped ? "Stepped" : "OnItsOwnLcore"; });

}  // namespace
}  // namespace roce::test::link_emulator_rdma_test
