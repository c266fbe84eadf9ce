// A step that holds the engine's frames (Worker::poll with `send` false: the verbs device's
// program thread keeping an ACK for its program's answer) still sends the worker's own frames:
// the ARP answer to a peer's request and a solicitation of its own. Held, an answer waited for
// the next full step; roce-verbsd's control thread steps only this way while a program holds
// rings, and a peer's ARP waits ran out (the verbs_pair "service: rping" flake, docs/verbs.md).
#include <gtest/gtest.h>

#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::worker_held_step_test {
namespace {

class WorkerHeldStep : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = DataplanePair::create("held", PairOptions{});
    ASSERT_TRUE(pair_);
    a_ = make_endpoint(pair_->a->worker(0).engine(), QpOptions{});
    b_ = make_endpoint(pair_->b->worker(0).engine(), QpOptions{});
    connect_pair(a_, b_, QpOptions{});
    src_.assign(64, std::byte{7});
    dst_.assign(64, std::byte{0});
    src_mr_ = reg(*a_.engine, a_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    dst_mr_ = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  void TearDown() override {
    if (pair_) pair_->expect_no_mbuf_leak();
  }

  std::unique_ptr<DataplanePair> pair_;
  Endpoint a_, b_;
  std::vector<std::byte> src_, dst_;
  const rdma::MemoryRegion *src_mr_ = nullptr, *dst_mr_ = nullptr;
};

TEST_F(WorkerHeldStep, ArpAnswerLeavesWhileTheAckStaysHeld) {
  dp::Worker& a = pair_->a->worker(0);
  dp::Worker& b = pair_->b->worker(0);
  // One iteration of a puts an ARP request for b and a WRITE asking for an ACK on b's queue.
  a.request_arp({10, 0, 0, 2});
  ibv_sge g = sge(src_.data(), 64, src_mr_);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dst_mr_->rkey(), IBV_SEND_SIGNALED), 0);
  a.poll(pair_->a->now());
  a.flush();
  const std::uint64_t replies0 = b.stats().arp_replies, b_sent0 = b.stats().tx_packets;
  const std::uint64_t a_rx0 = a.stats().rx_packets;

  ASSERT_EQ(b.poll(pair_->b->now(), false), 2u);
  EXPECT_EQ(b.stats().arp_replies - replies0, 1u);
  EXPECT_EQ(b.stats().tx_packets - b_sent0, 1u) << "the ARP answer, and nothing of the engine's";
  EXPECT_TRUE(b.engine().has_tx_work()) << "the WRITE's ACK is still held";
  EXPECT_EQ(a.poll(pair_->a->now()), 1u) << "b's ARP answer did not leave in its held step";
  EXPECT_EQ(a.stats().rx_packets - a_rx0, 1u);
  EXPECT_TRUE(drain(a_).empty()) << "no ACK yet: b held it";

  // b's next full step sends the ACK, and a completes its WRITE.
  b.poll(pair_->b->now());
  std::vector<ibv_wc> wcs;
  ASSERT_TRUE(pair_->step_until([&] {
    auto got = drain(a_);
    wcs.insert(wcs.end(), got.begin(), got.end());
    return !wcs.empty();
  }));
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
}

TEST_F(WorkerHeldStep, SolicitationOfAHeldStepLeaves) {
  dp::Worker& a = pair_->a->worker(0);
  dp::Worker& b = pair_->b->worker(0);
  const std::uint64_t asked0 = b.stats().arp_requests_sent, answered0 = a.stats().arp_replies;
  b.request_arp({10, 0, 0, 1});  // as Dataplane::resolve does from the program's thread
  ASSERT_EQ(b.poll(pair_->b->now(), false), 0u);
  EXPECT_EQ(b.stats().arp_requests_sent - asked0, 1u);
  EXPECT_EQ(a.poll(pair_->a->now()), 1u) << "b's ARP request did not leave in its held step";
  EXPECT_EQ(a.stats().arp_replies - answered0, 1u);
}

}  // namespace
}  // namespace roce::test::worker_held_step_test
