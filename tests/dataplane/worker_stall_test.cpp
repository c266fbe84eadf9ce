// A stall of the polling lcore is not a loss on the network: after one, the transport's
// retransmission timers wait until the worker has read what arrived meanwhile.
#include <gtest/gtest.h>

#include "tests/dataplane/clocked_write_pair.hpp"

namespace roce::test::worker_stall_test {
namespace {

constexpr Nanos kStall = 5 * kMilli;  // far beyond the early retransmission timer below

class WorkerStall : public ClockedWritePair {
 protected:
  void SetUp() override {
    PairOptions o;
    o.engine.tuning.early_retransmit_min = 100 * kMicro;
    start("stall", o, std::byte{5});
  }
  // What the early timer resent: a go-back, or (go-back-N's first try, docs/loss.md) a tail probe.
  std::uint64_t early() const {
    return a_.qp->counters().get(rdma::Counter::EarlyRetransmits) + a_.qp->counters().get(rdma::Counter::TailProbes);
  }
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

// The ACK that waited in the queue through the stall answers a packet sent before it: that round
// trip holds the stall (5 ms) and is no RTT sample (the worker tells the engine before it reads
// the queue: Engine::note_stall). Taken, such samples lifted srtt to milliseconds on a busy host
// and with it every probe's wait (docs/loss.md part 1, "Session 19 (gbn19)").
TEST_F(WorkerStall, TheRoundTripAcrossTheStallIsNoRttSample) {
  post_write(1);
  complete();
  const Nanos srtt = a_.qp->completer().srtt();
  ASSERT_GT(srtt, 0);
  ASSERT_LT(srtt, 100 * kMicro);
  post_write(2);
  poll_a();               // the WRITE goes out
  pair_->b->poll_once();  // b answers at once: the ACK waits in a's queue
  const std::uint64_t stalls = pair_->a->worker(0).stats().stalls;
  poll_a(kStall);         // a wakes 5 ms later and reads it
  EXPECT_EQ(pair_->a->worker(0).stats().stalls, stalls + 1);
  const std::vector<ibv_wc> wcs = drain(a_);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(a_.qp->completer().srtt(), srtt);
}

}  // namespace
}  // namespace roce::test::worker_stall_test
