// A stall of the polling lcore is not a loss on the network: after one, the transport's
// retransmission timers wait until the worker has read what arrived meanwhile.
#include <gtest/gtest.h>

#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::worker_stall_test {
namespace {

constexpr Nanos kStall = 5 * kMilli;  // far beyond the early retransmission timer below

class WorkerStall : public ::testing::Test {
 protected:
  void SetUp() override {
    PairOptions o;
    o.engine.tuning.early_retransmit_min = 100 * kMicro;
    pair_ = DataplanePair::create("stall", o);
    ASSERT_TRUE(pair_);
    // Side a runs on a clock of its own, so the test decides when it stalls.
    t_ = pair_->a->now();
    a_ = make_endpoint(pair_->a->worker(0).engine(), QpOptions{});
    b_ = make_endpoint(pair_->b->worker(0).engine(), QpOptions{});
    connect_pair(a_, b_, QpOptions{});
    src_.assign(256, std::byte{5});
    dst_.assign(256, std::byte{0});
    src_mr_ = reg(*a_.engine, a_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    dst_mr_ = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  void TearDown() override {
    if (pair_) pair_->expect_no_mbuf_leak();
  }

  void poll_a(Nanos advance = kMicro) {
    t_ += advance;
    pair_->a->worker(0).poll(t_);
  }
  void post_write(std::uint64_t id) {
    ibv_sge g = sge(src_.data(), 256, src_mr_);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, id, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dst_mr_->rkey()), 0);
  }
  // Steps both sides until a's WRITE completes.
  void complete() {
    std::vector<ibv_wc> wcs;
    for (int i = 0; i < 100000 && wcs.empty(); ++i) {
      poll_a();
      pair_->b->poll_once();
      wcs = drain(a_);
    }
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  }
  // What the early timer resent: a go-back, or (go-back-N's first try, docs/loss.md) a tail probe.
  std::uint64_t early() const {
    return a_.qp->counters().get(rdma::Counter::EarlyRetransmits) + a_.qp->counters().get(rdma::Counter::TailProbes);
  }

  std::unique_ptr<DataplanePair> pair_;
  Nanos t_ = 0;
  Endpoint a_, b_;
  std::vector<std::byte> src_, dst_;
  const rdma::MemoryRegion *src_mr_ = nullptr, *dst_mr_ = nullptr;
};

TEST_F(WorkerStall, TimersWaitForTheAckThatArrivedDuringTheStall) {
  post_write(1);
  complete();  // a first RTT sample: the early timer is armed from here on
  post_write(2);
  poll_a();  // the WRITE goes out
  const std::uint64_t stalls = pair_->a->worker(0).stats().stalls;
  poll_a(kStall);  // a wakes up long after the timer's deadline; b has not answered yet
  EXPECT_EQ(pair_->a->worker(0).stats().stalls, stalls + 1);
  EXPECT_EQ(early(), 0u) << "resent before reading what arrived during the stall";
  pair_->b->poll_once();  // b answers: the ACK is waiting in a's queue
  complete();             // a reads it before its timers run
  EXPECT_EQ(early(), 0u);
}

TEST_F(WorkerStall, TimersRunOnceTheQueueHasBeenRead) {
  post_write(1);
  complete();
  post_write(2);
  poll_a();
  poll_a(kStall);
  EXPECT_EQ(early(), 0u);
  // Nothing came in (b is still silent): the burst is short, the queue is read, so the timers
  // run now and resend (the tail probe: the WRITE's one packet alone).
  poll_a();
  EXPECT_EQ(early(), 1u);
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::TailProbes), 1u);
  complete();
}

}  // namespace
}  // namespace roce::test::worker_stall_test
