// A worker whose RX bursts come back full lets a QP's plain ACK wait a few iterations
// (TransportTuning::ack_hold), so that one ACK covers several bursts of requests; a short burst
// (the link not busy: a round trip is being timed) gets its ACK in the same iteration.
#include <gtest/gtest.h>

#include <rte_ring.h>

#include "dataplane/ring_port.hpp"
#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::worker_ack_hold_test {
namespace {

constexpr std::uint32_t kMessages = 4 * dp::kBurst;  // 64 B WRITEs, each asking for an ACK

class WorkerAckHold : public ::testing::TestWithParam<std::uint32_t> {
 protected:
  void SetUp() override {
    PairOptions o;
    o.engine.tuning.ack_hold = rdma::AckHold{GetParam(), kSecond};  // only the turns bound acts
    // The requester's congestion window starts at 16 packets, less than a burst: without it the
    // requester sends a burst per iteration (a window-bound requester sends less than a burst
    // and is answered at once, as the lone WRITE at the end).
    o.engine.tuning.window.go_back_n_congestion = false;
    pair_ = DataplanePair::create("ackh", o);
    ASSERT_TRUE(pair_);
    a_ = make_endpoint(pair_->a->worker(0).engine(), QpOptions{});
    b_ = make_endpoint(pair_->b->worker(0).engine(), QpOptions{});
    connect_pair(a_, b_, QpOptions{});
    src_.assign(64, std::byte{5});
    dst_.assign(64 * kMessages, std::byte{0});
    src_mr_ = reg(*a_.engine, a_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    dst_mr_ = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  void TearDown() override {
    if (pair_) pair_->expect_no_mbuf_leak();
  }
  void post_writes(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) {
      ibv_sge g = sge(src_.data(), 64, src_mr_);
      const unsigned flags = i + 1 == n ? IBV_SEND_SIGNALED : 0;
      ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, i, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data() + 64 * i), dst_mr_->rkey(), flags), 0);
    }
  }
  std::uint64_t acks() const { return b_.qp->counters().get(rdma::Counter::AcksSent); }

  std::unique_ptr<DataplanePair> pair_;
  Endpoint a_, b_;
  std::vector<std::byte> src_, dst_;
  const rdma::MemoryRegion *src_mr_ = nullptr, *dst_mr_ = nullptr;
};

TEST_P(WorkerAckHold, FullBurstsShareAnAckAShortOneIsAnsweredAtOnce) {
  const std::uint32_t turns = GetParam();
  post_writes(kMessages);
  dp::Worker& requester = pair_->a->worker(0);
  dp::Worker& responder = pair_->b->worker(0);
  // The requester sends one burst per iteration: four full bursts wait on the responder's queue.
  const std::uint64_t sent0 = requester.stats().tx_packets;
  for (int i = 0; i < 4; ++i) requester.poll(pair_->a->now());
  requester.flush();
  ASSERT_EQ(requester.stats().tx_packets - sent0, kMessages);
  const std::uint64_t acks0 = acks();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(responder.poll(pair_->b->now()), dp::kBurst);
  // Without a hold, one ACK per full burst (the engine coalesces within a burst); with a hold
  // of `turns` iterations, an ACK goes every turns + 1 full bursts.
  const std::uint32_t every = turns + 1;
  EXPECT_EQ(acks() - acks0, kMessages / dp::kBurst / every);
  ASSERT_EQ(responder.poll(pair_->b->now()), 0u);  // an empty burst: what is held goes
  EXPECT_EQ(acks() - acks0, (kMessages / dp::kBurst + every - 1) / every);
  EXPECT_FALSE(responder.engine().has_tx_work());

  // The last ACK covered every WRITE: the requester completes the last (signaled) one.
  std::vector<ibv_wc> wcs;
  ASSERT_TRUE(pair_->step_until([&] {
    auto got = drain(a_);
    wcs.insert(wcs.end(), got.begin(), got.end());
    return !wcs.empty();
  }));
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  EXPECT_EQ(wcs[0].wr_id, kMessages - 1);
  EXPECT_EQ(b_.qp->counters().get(rdma::Counter::AcksSent) - acks0, (kMessages / dp::kBurst + every - 1) / every)
      << "no ACK beyond those";

  // A lone WRITE (a short burst: nothing else is queued) is answered in the iteration that takes it.
  const std::uint64_t acks1 = acks();
  post_writes(1);
  requester.poll(pair_->a->now());
  requester.flush();
  ASSERT_EQ(responder.poll(pair_->b->now()), 1u);
  EXPECT_EQ(acks() - acks1, 1u);
}

// An ACK built in an iteration whose RX burst was full reaches the port in that iteration, held
// or not: kept for the next iteration's hand-over it batched nothing and reached the requester
// a loop turn late (docs/loss.md, part 2, "Session 21 (gbn21)"). Nothing polls the requester
// in between, so every ACK frame the responder built is on the requester's RX ring.
TEST_P(WorkerAckHold, AnAckBuiltAfterAFullBurstIsHandedToThePortInThatIteration) {
  post_writes(kMessages);
  dp::Worker& requester = pair_->a->worker(0);
  dp::Worker& responder = pair_->b->worker(0);
  for (int i = 0; i < 4; ++i) requester.poll(pair_->a->now());
  requester.flush();
  rte_ring* to_a = dp::ring_port_rx_ring(pair_->ports.a, 0);
  ASSERT_NE(to_a, nullptr);
  const std::uint64_t acks0 = acks();
  const unsigned on_ring0 = rte_ring_count(to_a);
  std::uint64_t built = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(responder.poll(pair_->b->now()), dp::kBurst);
    EXPECT_EQ(rte_ring_count(to_a) - on_ring0, acks() - acks0) << "full burst " << i;
    built = acks() - acks0;
  }
  // An ACK goes every turns + 1 full bursts: within the four unless the hold is 4 turns.
  if (GetParam() + 1 <= 4) {
    EXPECT_GT(built, 0u);
  }
  ASSERT_EQ(responder.poll(pair_->b->now()), 0u);
  EXPECT_EQ(rte_ring_count(to_a) - on_ring0, acks() - acks0);
  ASSERT_TRUE(pair_->step_until([&] { return !drain(a_).empty(); }));
}

INSTANTIATE_TEST_SUITE_P(Turns, WorkerAckHold, ::testing::Values(0u, 1u, 2u, 4u));

// Sixteen QPs, each a WRITE in every full burst: their ACKs are held together, and when the
// burst comes back short they all go in that one iteration (an iteration that sent nothing
// must not shrink the next offer of frames below the ACKs waiting).
TEST(WorkerAckHoldMany, HeldAcksOfManyQpsGoInOneIteration) {
  constexpr unsigned kQps = 16;
  PairOptions o;
  o.engine.tuning.ack_hold = rdma::AckHold{4, kSecond};
  o.engine.tuning.window.go_back_n_congestion = false;
  auto pair = DataplanePair::create("ackm", o);
  ASSERT_TRUE(pair);
  std::vector<Endpoint> as, bs;
  std::vector<std::byte> src(64, std::byte{3}), dst(64 * kQps * 4, std::byte{0});
  for (unsigned q = 0; q < kQps; ++q) {
    as.push_back(make_endpoint(pair->a->worker(0).engine(), QpOptions{}, q ? as[0].pd : 0));
    bs.push_back(make_endpoint(pair->b->worker(0).engine(), QpOptions{}, q ? bs[0].pd : 0));
    connect_pair(as.back(), bs.back(), QpOptions{});
  }
  const rdma::MemoryRegion* src_mr = reg(*as[0].engine, as[0].pd, src, IBV_ACCESS_LOCAL_WRITE);
  const rdma::MemoryRegion* dst_mr = reg(*bs[0].engine, bs[0].pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  // Four WRITEs per QP (two full bursts), posted round by round: the requester interleaves the
  // QPs in its bursts.
  for (unsigned i = 0; i < 4; ++i)
    for (unsigned q = 0; q < kQps; ++q) {
      ibv_sge g = sge(src.data(), 64, src_mr);
      const auto at = reinterpret_cast<std::uint64_t>(dst.data() + 64 * (q * 4 + i));
      ASSERT_EQ(post(as[q], IBV_WR_RDMA_WRITE, i, &g, 1, at, dst_mr->rkey(), i == 3 ? IBV_SEND_SIGNALED : 0), 0);
    }
  dp::Worker& requester = pair->a->worker(0);
  dp::Worker& responder = pair->b->worker(0);
  const std::uint64_t sent0 = requester.stats().tx_packets;
  for (int i = 0; i < 4; ++i) requester.poll(pair->a->now());
  requester.flush();
  ASSERT_EQ(requester.stats().tx_packets - sent0, 4 * kQps);
  const std::uint64_t tx0 = responder.stats().tx_packets;
  ASSERT_EQ(responder.poll(pair->b->now()), dp::kBurst);
  ASSERT_EQ(responder.poll(pair->b->now()), dp::kBurst);
  EXPECT_EQ(responder.stats().tx_packets, tx0) << "every QP's ACK held";
  EXPECT_EQ(responder.engine().acks_held(), kQps);
  ASSERT_EQ(responder.poll(pair->b->now()), 0u);
  responder.flush();
  EXPECT_EQ(responder.stats().tx_packets - tx0, kQps) << "one ACK per QP, all in the iteration that found the queue empty";
  EXPECT_FALSE(responder.engine().has_tx_work());
  ASSERT_TRUE(pair->step_until([&] {
    for (Endpoint& a : as)
      if (a.qp->requester().drained(a.qp->context()) == false) return false;
    return true;
  }));
  for (Endpoint& a : as) {
    const auto wcs = drain(a);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  }
  EXPECT_EQ(dst, std::vector<std::byte>(dst.size(), std::byte{3}));
  pair->expect_no_mbuf_leak();
}

}  // namespace
}  // namespace roce::test::worker_ack_hold_test
