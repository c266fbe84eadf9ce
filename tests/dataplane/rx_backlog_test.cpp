// Marks from the RX queue's backlog (dataplane/rx_backlog.hpp), counted: the depth a run of full
// bursts (or the PMD's count) gives, RED's curve with a credit instead of a random draw, which
// frames of a burst are marked, and, end to end, a queue that fills past Kmin before it is read:
// the frames read deeper than Kmin are marked, the receiving QPs see them as CE and send CNPs,
// the sender's rate is cut; a queue that stays at Kmin gives no mark and no CNP.
#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include <cstring>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "dataplane/rx_backlog.hpp"
#include "lib/cc/params.hpp"
#include "protocol/builder.hpp"
#include "protocol/ecn_mark.hpp"
#include "tests/dataplane/ecn_frame.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::rx_backlog_test {
namespace {

using dp::BacklogConfig;
using dp::BacklogMarker;
using namespace roce::proto;

std::string fresh(const std::string& stem) {
  static int n = 0;
  return stem + std::to_string(n++);
}

BacklogConfig red(std::uint32_t kmin, std::uint32_t kmax, double pmax) {
  BacklogConfig c;
  c.mark = true;
  c.kmin_frames = kmin;
  c.kmax_frames = kmax;
  c.pmax = pmax;
  return c;
}

TEST(RxBacklog, ARunOfFullBurstsIsTheDepthAndAShortBurstEndsIt) {
  BacklogMarker m(red(64, 256, 0.1));
  EXPECT_EQ(m.on_burst(32, 32, std::nullopt), 32u);
  EXPECT_EQ(m.on_burst(32, 32, std::nullopt), 64u);
  EXPECT_EQ(m.on_burst(32, 32, std::nullopt), 96u);
  EXPECT_EQ(m.on_burst(5, 32, std::nullopt), 101u) << "the short burst's frames waited behind the run";
  EXPECT_EQ(m.on_burst(32, 32, std::nullopt), 32u) << "the short burst emptied the queue";
  EXPECT_EQ(m.on_burst(0, 32, std::nullopt), 32u);
  EXPECT_EQ(m.on_burst(0, 32, std::nullopt), 0u);
  EXPECT_EQ(m.on_burst(0, 0, std::nullopt), 0u) << "a burst that asked for nothing is not full";
  EXPECT_EQ(m.on_burst(4, 4, std::nullopt), 4u) << "full is what the loop asked for";
  EXPECT_EQ(m.counters().max_depth, 101u);
  EXPECT_EQ(m.counters().bursts_above_kmin, 2u);  // 96 and 101
}

TEST(RxBacklog, ThePmdsCountIsTheDepthWhereItHasOne) {
  BacklogMarker m(red(64, 256, 0.1));
  EXPECT_EQ(m.on_burst(32, 32, 100u), 132u);
  EXPECT_EQ(m.on_burst(32, 32, 100u), 132u) << "not a run: the count says how deep";
  EXPECT_EQ(m.on_burst(7, 32, 0u), 7u);
}

TEST(RxBacklog, NothingAtOrBelowKminEveryFrameAboveKmaxAndTheCreditInBetween) {
  BacklogMarker m(red(64, 192, 0.5));
  EXPECT_EQ(m.step_at(0), 0u);
  EXPECT_EQ(m.step_at(64), 0u);
  EXPECT_GT(m.step_at(65), 0u);
  EXPECT_EQ(m.step_at(128), 65536u / 4) << "half way to Kmax: Pmax / 2";
  EXPECT_EQ(m.step_at(192), 65536u / 2);
  EXPECT_EQ(m.step_at(193), 65536u);
  // 32 frames at depth 128 (a quarter each): 8 marks, every fourth frame.
  m.on_burst(32, 32, 96u);
  unsigned marks = 0;
  for (int i = 0; i < 32; ++i) marks += m.take_mark();
  EXPECT_EQ(marks, 8u);
  // At depth 64 nothing, and the credit does not run on.
  m.on_burst(32, 32, 32u);
  EXPECT_FALSE(m.marking());
  for (int i = 0; i < 32; ++i) EXPECT_FALSE(m.take_mark());
  EXPECT_EQ(m.counters().ce_marked, 8u);
}

TEST(RxBacklog, TheToolsOptionParses) {
  const auto off = dp::parse_backlog_marks("off");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off.value().mark);
  const auto on = dp::parse_backlog_marks("on");
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on.value().mark);
  EXPECT_EQ(on.value().kmin_frames, BacklogConfig{}.kmin_frames);
  const auto set = dp::parse_backlog_marks("16,48,0.25");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set.value().kmin_frames, 16u);
  EXPECT_EQ(set.value().kmax_frames, 48u);
  EXPECT_EQ(set.value().pmax, 0.25);
  for (const char* bad : {"", "yes", "16,48", "48,16,0.5", "16,48,0", "16,48,1.5", "16,48,0.5x"})
    EXPECT_FALSE(dp::parse_backlog_marks(bad).ok()) << "'" << bad << "'";
}

// Bursts of six frames (not-ECT, ECT(0), CE, ECT(1), ECT(0), ECT(0)) with Kmin = Kmax = 6: the
// first burst (depth 6) is left alone, the next (depth 12) has its ECN-capable frames marked,
// the others untouched; a short burst behind it (depth 15) too; then the queue was empty.
TEST(RxBacklog, FramesReadDeeperThanKmaxAreMarkedIfEcnCapable) {
  rte_mempool* pool = rte_pktmbuf_pool_create(fresh("rxb_pool").c_str(), 63, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr) << rte_strerror(rte_errno);
  const std::vector<std::vector<std::byte>> frames = {frame_with(Ecn::NotEct), frame_with(Ecn::Ect0), frame_with(Ecn::Ce),
                                                      frame_with(Ecn::Ect1),   frame_with(Ecn::Ect0), frame_with(Ecn::Ect0)};
  dp::BacklogMarking marking(red(6, 6, 1.0), {});
  const auto ecn_of = [](rte_mbuf* m) {
    const ByteSpan f{rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
    return read_ecn(f, *locate_ecn(f));
  };
  const auto burst = [&](unsigned n, unsigned want) {
    std::vector<rte_mbuf*> rx;
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool);
      EXPECT_NE(m, nullptr);
      if (m == nullptr) break;
      std::memcpy(rte_pktmbuf_mtod(m, void*), frames[i].data(), frames[i].size());
      m->data_len = m->pkt_len = static_cast<std::uint16_t>(frames[i].size());
      rx.push_back(m);
    }
    marking.on_burst(rx.data(), static_cast<unsigned>(rx.size()), want);
    std::vector<Ecn> out;
    for (rte_mbuf* m : rx) out.push_back(ecn_of(m));
    rte_pktmbuf_free_bulk(rx.data(), static_cast<unsigned>(rx.size()));
    return out;
  };
  const std::vector<Ecn> as_sent = {Ecn::NotEct, Ecn::Ect0, Ecn::Ce, Ecn::Ect1, Ecn::Ect0, Ecn::Ect0};
  EXPECT_EQ(burst(6, 6), as_sent);
  EXPECT_EQ(burst(6, 6), (std::vector<Ecn>{Ecn::NotEct, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce}));
  EXPECT_EQ(burst(3, 6), (std::vector<Ecn>{Ecn::NotEct, Ecn::Ce, Ecn::Ce}));
  EXPECT_EQ(burst(6, 6), as_sent);
  EXPECT_EQ(marking.counters().ce_marked, 5u);  // four ECN-capable frames, then one
  EXPECT_EQ(marking.counters().bursts_above_kmin, 2u);
  rte_mempool_free(pool);
}

// a -> b over a ring pair, DCQCN on at both ends, one QP, go-back-N with only the static caps (a
// may have the whole WRITE in flight). b is not polled while a sends `packets` frames of one
// WRITE, so they wait in b's receive ring; then b reads them in bursts of 32 with Kmin = Kmax =
// 64, Pmax 1: every frame read deeper than 64 is marked.
struct BackloggedWrite {
  std::unique_ptr<dp::Dataplane> a, b;
  Endpoint ea, eb;
  std::uint64_t queued = 0;  // frames in b's receive ring when b started reading

  void run(dp::Mode mode, unsigned packets) {
    const std::string na = fresh("rxbA"), nb = fresh("rxbB");
    auto pair = dp::make_ring_pair(na, nb, 4096);
    ASSERT_TRUE(pair.ok()) << pair.error().message;
    rte_ring* b_rx = rte_ring_lookup((na + "_to_" + nb).c_str());
    ASSERT_NE(b_rx, nullptr);
    const auto make = [&](std::uint16_t port, std::uint8_t host) {
      dp::DataplaneOptions o;
      o.name = fresh("rxb");
      o.port.name = std::to_string(port);
      o.ip = rdma::IpAddress::ipv4({10, 0, 0, host});
      o.mac = proto::MacAddr{2, 0, 0, 0, 0, host};
      o.mode = mode;
      o.mbufs = 4095;
      o.engine.tuning.congestion.enabled = true;
      o.engine.tuning.congestion.rp = cc::paper_params(10e9);
      o.engine.tuning.window.go_back_n_congestion = false;  // the static caps alone
      o.backlog = red(64, 64, 1.0);
      auto d = dp::Dataplane::create(o);
      EXPECT_TRUE(d.ok()) << d.error().message;
      return d.ok() ? std::move(*d) : nullptr;
    };
    a = make(pair->a, 1);
    b = make(pair->b, 2);
    ASSERT_TRUE(a && b);
    a->learn(rdma::IpAddress::ipv4({10, 0, 0, 2}), {2, 0, 0, 0, 0, 2});
    b->learn(rdma::IpAddress::ipv4({10, 0, 0, 1}), {2, 0, 0, 0, 0, 1});
    QpOptions qo;  // 1 KiB MTU: a packet per KiB
    ea = make_endpoint(a->worker(0).engine(), qo);
    eb = make_endpoint(b->worker(0).engine(), qo);
    connect_pair(ea, eb, qo);
    std::vector<std::byte> src(packets * 1024u, std::byte{7}), dst(src.size());
    const auto* smr = reg(*ea.engine, ea.pd, src, IBV_ACCESS_LOCAL_WRITE);
    const auto* dmr = reg(*eb.engine, eb.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_sge g = sge(src.data(), static_cast<std::uint32_t>(src.size()), smr);
    ASSERT_EQ(post(ea, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dmr->rkey()), 0);
    // a's pacer lets the WRITE out over a few hundred microseconds; the limit only ends a run
    // that would never get there.
    const Nanos fill_limit = a->now() + 5 * kSecond;
    while (rte_ring_count(b_rx) < packets && a->now() < fill_limit) {
      a->poll_once();
      a->flush();
    }
    queued = rte_ring_count(b_rx);
    ASSERT_GE(queued, packets) << "a did not send the whole WRITE";
    std::size_t completed = 0;
    const Nanos limit = a->now() + 30 * kSecond;
    while (completed == 0 && a->now() < limit) {
      b->poll_once();
      a->poll_once();
      for (const ibv_wc& wc : drain(ea)) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
        ++completed;
      }
    }
    ASSERT_EQ(completed, 1u);
    EXPECT_EQ(dst, src);
  }
  const dp::WorkerStats& reader() const { return b->worker(0).stats(); }
  std::uint64_t marks(dp::Mode mode) const {
    return mode == dp::Mode::Pipeline ? b->io_stats()->rx_backlog_ce_marks : reader().rx_backlog_ce_marks;
  }
  std::uint64_t max_depth(dp::Mode mode) const {
    return mode == dp::Mode::Pipeline ? b->io_stats()->rx_backlog_max_frames : reader().rx_backlog_max_frames;
  }
  std::uint64_t count(const Endpoint& e, rdma::Counter c) const { return e.qp->counters().get(c); }
  std::uint64_t rate_cuts() const {
    const auto* cc = ea.qp->congestion();
    return cc ? cc->reaction_point().counters().rate_decreases : 0;
  }
};

class RxBacklogMarks : public ::testing::TestWithParam<dp::Mode> {};

TEST_P(RxBacklogMarks, AQueueDeeperThanKminGivesMarksAndTheMarksGiveCnps) {
  BackloggedWrite t;
  t.run(GetParam(), 160);
  ASSERT_FALSE(HasFatalFailure());
  // Read 32 at a time: the first 64 at depths 32 and 64, every frame after deeper than Kmin.
  // What a resends later arrives into an empty queue and is not marked.
  const std::uint64_t deeper = t.queued - 64;
  EXPECT_EQ(t.marks(GetParam()), deeper);
  EXPECT_EQ(t.max_depth(GetParam()), t.queued);
  EXPECT_EQ(t.count(t.eb, rdma::Counter::EcnCeReceived), deeper) << "every mark reached the QP";
  EXPECT_GT(t.count(t.eb, rdma::Counter::CnpSent), 0u);
  EXPECT_LE(t.count(t.eb, rdma::Counter::CnpSent), deeper);
  EXPECT_EQ(t.count(t.ea, rdma::Counter::CnpReceived), t.count(t.eb, rdma::Counter::CnpSent));
  EXPECT_GT(t.rate_cuts(), 0u) << "the sender's rate was not cut";
}

TEST_P(RxBacklogMarks, AQueueNoDeeperThanKminGivesNone) {
  BackloggedWrite t;
  t.run(GetParam(), 64);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(t.queued, 64u) << "a sent more than the WRITE (a timer fired): the depth is not the one meant";
  EXPECT_EQ(t.marks(GetParam()), 0u);
  EXPECT_EQ(t.max_depth(GetParam()), 64u);
  EXPECT_EQ(t.count(t.eb, rdma::Counter::EcnCeReceived), 0u);
  EXPECT_EQ(t.count(t.eb, rdma::Counter::CnpSent), 0u);
  EXPECT_EQ(t.rate_cuts(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, RxBacklogMarks, ::testing::Values(dp::Mode::RunToCompletion, dp::Mode::Pipeline),
                         [](const auto& info) { return info.param == dp::Mode::Pipeline ? "Pipeline" : "RunToCompletion"; });

}  // namespace
}  // namespace roce::test::rx_backlog_test
