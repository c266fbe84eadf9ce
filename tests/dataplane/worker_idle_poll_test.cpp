// The worker's idle iteration made cheap (docs/perf-changes.md, loop13): a ring port's empty
// RX ring is not polled through the PMD, the engine's timers are entered only once a deadline
// has come, transmit only with send work. Each must still do its job when there is work.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "tests/dataplane/clocked_write_pair.hpp"

namespace roce::test::worker_idle_poll_test {
namespace {

TEST(RingPortRxRing, NamesTheRingEachQueueReads) {
  static int serial = 0;
  const std::string na = "idlera" + std::to_string(serial), nb = "idlerb" + std::to_string(serial);
  ++serial;
  auto pair = dp::make_ring_pair(na, nb, 1024, 2);
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  for (std::uint16_t q = 0; q < 2; ++q) {
    const std::string sfx = "_q" + std::to_string(q);
    EXPECT_EQ(dp::ring_port_rx_ring(pair->a, q), rte_ring_lookup((nb + "_to_" + na + sfx).c_str()));
    EXPECT_EQ(dp::ring_port_rx_ring(pair->b, q), rte_ring_lookup((na + "_to_" + nb + sfx).c_str()));
    EXPECT_NE(dp::ring_port_rx_ring(pair->a, q), nullptr);
  }
  EXPECT_EQ(dp::ring_port_rx_ring(pair->a, 2), nullptr) << "no such queue";
  EXPECT_EQ(dp::ring_port_rx_ring(RTE_MAX_ETHPORTS - 1, 0), nullptr) << "no such port";
  rte_eth_dev_close(pair->a);
  rte_eth_dev_close(pair->b);
}

// Counts the PMD's RX calls on a port (an RX callback runs once per rx_burst that reached the
// PMD, whatever it returned).
std::uint16_t count_call(std::uint16_t, std::uint16_t, rte_mbuf**, std::uint16_t n, std::uint16_t, void* calls) {
  ++*static_cast<unsigned*>(calls);
  return n;
}

class IdlePair : public ClockedWritePair {
 protected:
  void start(dp::Mode mode) {
    PairOptions o;
    o.mode = mode;
    o.engine.tuning.early_retransmit_min = 100 * kMicro;
    ClockedWritePair::start("idle", o, std::byte{7});
  }
  std::uint64_t a_sent() const { return a_.qp->counters().get(rdma::Counter::SentPkts); }
};

// Side b's port is polled by its worker (run to completion) or its IO loop (pipeline).
class WorkerIdlePoll : public IdlePair, public ::testing::WithParamInterface<dp::Mode> {
 protected:
  void SetUp() override { start(GetParam()); }
};

// Side a stepped by hand on its own clock (run to completion).
class WorkerIdleTimers : public IdlePair {
 protected:
  void SetUp() override { start(dp::Mode::RunToCompletion); }
};

TEST_P(WorkerIdlePoll, AnEmptyRingIsNotPolledAndAFrameOnItIs) {
  pair_->step_until([] { return false; }, 20);  // whatever ARP left in flight is read
  unsigned calls = 0;
  const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(pair_->ports.b, 0, count_call, &calls);
  ASSERT_NE(cb, nullptr);
  const std::uint64_t received = GetParam() == dp::Mode::Pipeline ? pair_->b->io_stats()->rx_packets : pair_->b->worker(0).stats().rx_packets;
  for (int i = 0; i < 100; ++i) pair_->b->poll_once();
  EXPECT_EQ(calls, 0u) << "the PMD was asked for frames while its ring was empty";
  post_write(1);
  pair_->a->poll_once();  // the WRITE is on b's ring now
  pair_->b->poll_once();
  EXPECT_EQ(calls, 1u);
  const std::uint64_t got = GetParam() == dp::Mode::Pipeline ? pair_->b->io_stats()->rx_packets : pair_->b->worker(0).stats().rx_packets;
  EXPECT_EQ(got, received + 1) << "the frame waiting on the ring was not read";
  ASSERT_TRUE(pair_->step_until([&] { return !drain(a_).empty(); }));
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cb);
}

TEST_F(WorkerIdleTimers, TimerRunsAtItsDeadlineNotBefore) {
  post_write(1);
  complete();  // an RTT sample: the early timer is armed from here on
  post_write(2);
  poll_a();  // the WRITE goes; b stays silent
  rdma::Engine& e = pair_->a->worker(0).engine();
  const std::uint64_t sent = a_sent();
  const Nanos due = e.next_deadline();
  ASSERT_GT(due, t_);
  ASSERT_LT(due - t_, 100 * kMilli);
  // Iterations closer together than a stall (200 us), up to the last nanosecond before it.
  while (due - 1 - t_ > 100 * kMicro) poll_a(100 * kMicro);
  EXPECT_FALSE(e.timers_pending(due - 1));
  poll_a_at(due - 1);
  EXPECT_EQ(a_sent(), sent) << "a timer ran before its deadline";
  EXPECT_TRUE(e.timers_pending(due));
  poll_a_at(due);
  EXPECT_EQ(a_sent(), sent + 1) << "the timer due now did not resend";
  complete();
}

TEST_F(WorkerIdleTimers, AFrameThePortRefusedLeavesOnAnIterationWithNothingToBuild) {
  // Hold b's RX ring full with placeholders (b does not poll while they are there).
  rte_ring* to_b = dp::ring_port_rx_ring(pair_->ports.b, 0);
  ASSERT_NE(to_b, nullptr);
  std::vector<void*> fill(rte_ring_free_count(to_b), nullptr);
  ASSERT_EQ(rte_ring_enqueue_bulk(to_b, fill.data(), static_cast<unsigned>(fill.size()), nullptr), fill.size());
  post_write(1);
  poll_a();  // built, refused by the full ring, kept pending
  ASSERT_FALSE(pair_->a->worker(0).engine().has_tx_work()) << "the WRITE was not built";
  ASSERT_EQ(rte_ring_dequeue_bulk(to_b, fill.data(), static_cast<unsigned>(fill.size()), nullptr), fill.size());
  EXPECT_EQ(rte_ring_count(to_b), 0u);
  poll_a();  // nothing to build: the pending frame still goes (well before the flush timer)
  EXPECT_EQ(rte_ring_count(to_b), 1u) << "the frame the port refused stayed pending";
  complete();
}

INSTANTIATE_TEST_SUITE_P(Modes, WorkerIdlePoll, ::testing::Values(dp::Mode::RunToCompletion, dp::Mode::Pipeline),
                         [](const auto& info) { return info.param == dp::Mode::Pipeline ? std::string("Pipeline") : std::string("RunToCompletion"); });

}  // namespace
}  // namespace roce::test::worker_idle_poll_test
