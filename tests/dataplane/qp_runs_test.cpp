// A received burst grouped by destination QP (dataplane/qp_runs.hpp): every QP's frames keep
// their order, the groups come in the order of their first frames, a burst with nothing to group
// or with a frame that may not move is left as it came; and end to end, a responder worker taking
// WRITEs of four QPs interleaved frame by frame places every one and answers each QP's run with
// one ACK, the same data as without the grouping.
#include "dataplane/qp_runs.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::qp_runs_test {
namespace {

using dp::group_qp_runs;
using dp::kNoQpRun;

std::vector<unsigned> grouped(const std::vector<std::uint32_t>& keys) {
  std::array<std::uint8_t, 32> order{};
  if (!group_qp_runs(keys.data(), static_cast<unsigned>(keys.size()), order.data())) return {};
  return std::vector<unsigned>(order.begin(), order.begin() + static_cast<long>(keys.size()));
}

TEST(QpRuns, InterleavedQpsBecomeRunsInTheOrderOfTheirFirstFrames) {
  EXPECT_EQ(grouped({7, 9, 7, 9, 8, 7}), (std::vector<unsigned>{0, 2, 5, 1, 3, 4}));
  EXPECT_EQ(grouped({5, 5, 6, 5}), (std::vector<unsigned>{0, 1, 3, 2}));
}

TEST(QpRuns, AFullBurstOfSixteenQpsKeepsEachQpsOrder) {
  std::vector<std::uint32_t> keys;
  for (unsigned i = 0; i < 32; ++i) keys.push_back(0x11 + i % 16);
  const std::vector<unsigned> o = grouped(keys);
  ASSERT_EQ(o.size(), 32u);
  for (unsigned g = 0; g < 16; ++g) {
    EXPECT_EQ(o[2 * g], g);
    EXPECT_EQ(o[2 * g + 1], g + 16);
  }
}

TEST(QpRuns, NothingToGroupLeavesTheBurst) {
  EXPECT_TRUE(grouped({3, 3, 3, 3}).empty());     // one QP
  EXPECT_TRUE(grouped({3, 3, 4, 4, 5}).empty());  // already in runs
  EXPECT_TRUE(grouped({3, 4}).empty());           // too short to matter
  EXPECT_TRUE(grouped(std::vector<std::uint32_t>(33, 1)).empty());  // more than a burst
}

TEST(QpRuns, AFrameThatMayNotMoveLeavesTheBurst) {
  // QP1's MADs (a data QP's first requests may follow a REP/RTU in the same burst) and frames
  // that are not RoCEv2 keep their places: the whole burst stays as it came.
  EXPECT_TRUE(grouped({7, 9, kNoQpRun, 7, 9}).empty());
}

constexpr unsigned kQps = 4;
constexpr std::uint32_t kPerQp = 24;  // 64 B WRITEs, each asking for an ACK

class QpRunsWorker : public ::testing::TestWithParam<bool> {};

TEST_P(QpRunsWorker, InterleavedWritesAllLandAndEachQpsRunSharesAnAck) {
  const bool group = GetParam();
  PairOptions o;
  o.group_qp_runs = group;
  // One packet per QP per transmit turn: the requester's bursts interleave the four QPs frame
  // by frame, as RSS interleaves many senders' QPs on one queue.
  o.engine.tuning.tx_quantum = 1;
  o.engine.tuning.ack_hold = rdma::AckHold{0, 0};
  o.engine.tuning.window.go_back_n_congestion = false;
  auto pair = DataplanePair::create(group ? "qpr1" : "qpr0", o);
  ASSERT_TRUE(pair);
  std::vector<std::byte> src(64, std::byte{0});
  std::vector<std::byte> dst(64 * kPerQp * kQps, std::byte{0});
  std::array<Endpoint, kQps> a, b;
  const rdma::PdHandle pa = pair->a->worker(0).engine().alloc_pd(), pb = pair->b->worker(0).engine().alloc_pd();
  for (unsigned q = 0; q < kQps; ++q) {
    a[q] = make_endpoint(pair->a->worker(0).engine(), QpOptions{}, pa);
    b[q] = make_endpoint(pair->b->worker(0).engine(), QpOptions{}, pb);
    connect_pair(a[q], b[q], QpOptions{});
  }
  const rdma::MemoryRegion* smr = reg(*a[0].engine, pa, src, IBV_ACCESS_LOCAL_WRITE);
  const rdma::MemoryRegion* dmr = reg(*b[0].engine, pb, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  for (std::uint32_t i = 0; i < kPerQp; ++i) {
    for (unsigned q = 0; q < kQps; ++q) {
      src.assign(64, std::byte(static_cast<unsigned char>(1 + q * kPerQp + i)));
      ibv_sge g = sge(src.data(), 64, smr);
      // Inline: the source buffer is refilled for the next WRITE before this one is sent.
      const unsigned flags = IBV_SEND_INLINE | (i + 1 == kPerQp ? IBV_SEND_SIGNALED : 0);
      std::byte* at = dst.data() + 64 * (q * kPerQp + i);
      ASSERT_EQ(post(a[q], IBV_WR_RDMA_WRITE, i, &g, 1, reinterpret_cast<std::uint64_t>(at), dmr->rkey(), flags), 0);
    }
  }
  unsigned done = 0;
  ASSERT_TRUE(pair->step_until([&] {
    for (unsigned q = 0; q < kQps; ++q) {
      ibv_wc wc{};
      while (a[q].cq->poll(1, &wc) == 1) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
        ++done;
      }
    }
    return done == kQps;
  }));
  for (unsigned q = 0; q < kQps; ++q)
    for (std::uint32_t i = 0; i < kPerQp; ++i)
      EXPECT_EQ(dst[64 * (q * kPerQp + i) + 63], std::byte(static_cast<unsigned char>(1 + q * kPerQp + i))) << q << " " << i;
  const dp::WorkerStats& st = pair->b->worker(0).stats();
  std::uint64_t acks = 0;
  for (unsigned q = 0; q < kQps; ++q) {
    acks += b[q].qp->counters().get(rdma::Counter::AcksSent);
    // Each QP's frames reached its responder in PSN order: none out of sequence, no NAK.
    EXPECT_EQ(b[q].qp->counters().get(rdma::Counter::OutOfSeqRequest), 0u);
    EXPECT_EQ(b[q].qp->counters().get(rdma::Counter::NaksSent), 0u);
  }
  if (group) {
    EXPECT_GT(st.rx_bursts_grouped, 0u);
    // Every QP's frames of a burst are one run and share one ACK: at most one ACK per QP per
    // burst that held its frames, fewer than one per QP per four frames.
    EXPECT_LT(acks, kQps * kPerQp / 4);
  } else {
    EXPECT_EQ(st.rx_bursts_grouped, 0u);
  }
  pair->expect_no_mbuf_leak();
}

INSTANTIATE_TEST_SUITE_P(GroupedOrNot, QpRunsWorker, ::testing::Bool());

}  // namespace
}  // namespace roce::test::qp_runs_test
