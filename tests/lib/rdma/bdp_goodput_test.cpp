// Go-back-N's BDP cap trial judged by goodput (WindowTuning::bdp_cap_judge, BdpJudge::Goodput; off by default): the
// packets acknowledged per unit of time while the cap holds, against the latest stretch without
// it. The SendWindow is pure arithmetic: progress, RTT samples and losses are fed by hand, with
// the time they came (an injected clock); every figure is counted packets over given nanoseconds.
#include <gtest/gtest.h>

#include "lib/rdma/send_window.hpp"

namespace roce::rdma::bdp_goodput_test {
namespace {

constexpr std::uint32_t kPmtu = 4096;
constexpr double kStaticCap = 64;  // packets one QP may have in flight without a window
constexpr Nanos kRtt = 10 * kMicro;

// With session 14's loss interval (256) and floor (6), whose figures these tests count with
// (since session 15 the defaults are 8192 and 5).
WindowTuning by_goodput() {
  WindowTuning t;
  t.bdp_cap_loss_interval = 256;
  t.bdp_cap_floor = 6;
  t.bdp_cap_judge = BdpJudge::Goodput;
  return t;
}

struct Path {
  SendWindow w;
  Nanos now = kMilli;
  explicit Path(const WindowTuning& t = by_goodput()) {
    w.start(t, kStaticCap, false);
    w.join();
    // A lone packet's round trip (the min RTT, 2 us), then 20 packets per 10 us without the cap:
    // rate x min RTT is 4 packets, the cap its floor of 6.
    ack(2 * kMicro, 1);
  }
  // `packets` acknowledged `gap` after the previous ACK, which is also the RTT sample's interval.
  void ack(Nanos gap, std::uint32_t packets) {
    now += gap;
    w.on_progress(now, packets);
    w.on_rtt_sample(now, std::min(gap, kRtt), packets, gap, kPmtu);
  }
  // `n` round trips at 20 packets per 10 us.
  void steady(int n) {
    for (int i = 0; i < n; ++i) ack(kRtt, 20);
  }
  // The same goodput with the ACKs bunched, as a deep window's come: 35 packets 10 us after
  // the previous ACK, then 5 packets 10 us later. The RTT samples' median reads 3.5 packets
  // per microsecond; the goodput is 2.
  void bunched(int pairs) {
    for (int i = 0; i < pairs; ++i) {
      ack(kRtt, 35);
      ack(kRtt, 5);
    }
  }
  // A loss after a long clean stretch, then the go-back of what was in flight at the static
  // cap (64 packets) at the steady rate.
  void lose() {
    w.on_loss(now, kRtt, false);
    for (int i = 0; i < 4; ++i) ack(kRtt, 16);
  }
};

TEST(BdpCapGoodput, TheTrialKeepsTheCapWhenGoodputHolds) {
  Path p;
  p.bunched(60);  // 2400 packets: the losses are rare (the interval alone would not cap)
  p.lose();
  ASSERT_TRUE(p.w.bdp_engaged());
  ASSERT_EQ(p.w.limit(), 6u);
  // With the cap the ACKs come evenly at the same goodput: the cap costs nothing. (The RTT
  // samples' median rate is 2 against the uncapped stretch's 3.5: judged by it, costly.)
  p.steady(14);
  EXPECT_TRUE(p.w.bdp_free());
  EXPECT_EQ(p.w.bdp_trials_free(), 1u);
  EXPECT_EQ(p.w.bdp_trials_costly(), 0u);
  EXPECT_NEAR(p.w.bdp_last_ratio(), 1.0, 0.01);
  // Free: the cap keeps holding across a clean stretch, decided again against the same reference.
  p.steady(200);
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 6u);
  EXPECT_EQ(p.w.bdp_trials_costly(), 0u);
}

TEST(BdpCapGoodput, TheTrialDropsTheCapWhenGoodputFalls) {
  Path p;
  p.steady(120);
  p.lose();
  ASSERT_EQ(p.w.limit(), 6u);
  // With the cap, three round trips in four carry the full rate and the fourth waits 30 us more
  // for its ACK: 0.59 of the goodput. (The RTT samples' median is the full rate: judged by it, free.)
  for (int i = 0; i < 4; ++i) {
    p.steady(3);
    p.ack(kRtt + 30 * kMicro, 20);
  }
  EXPECT_FALSE(p.w.bdp_free());
  EXPECT_EQ(p.w.bdp_trials_costly(), 1u);
  EXPECT_NEAR(p.w.bdp_last_ratio(), 260.0 / 220 / 2, 0.01);  // decided at 260 packets, in 220 us
  // Costly: the next rare loss tries a grown cap (session 11); this one no longer holds.
  EXPECT_GT(p.w.limit(), 6u);
}

TEST(BdpCapGoodput, AFreeCapWhoseGoodputFallsLetsGo) {
  Path p;
  p.steady(120);
  p.lose();
  p.steady(14);
  ASSERT_TRUE(p.w.bdp_free());
  for (int i = 0; i < 13; ++i) p.ack(2 * kRtt, 20);  // the path's round trip doubled: half the goodput
  EXPECT_FALSE(p.w.bdp_free());
  EXPECT_FALSE(p.w.bdp_engaged());
}

TEST(BdpCapGoodput, ADescheduledPollerCountsTowardNeither) {
  // One stretch of 5 ms without progress in the trial (the poller was descheduled) and the ACK
  // after it count toward neither side: what arrived meanwhile came at once, with or without
  // the cap. The other 260 packets came in 130 us: the full rate.
  const WindowTuning t;
  ASSERT_LT(t.bdp_cap_gap_ceiling, 5 * kMilli);
  Path p;
  p.steady(120);
  p.lose();
  p.steady(6);
  p.ack(5 * kMilli, 20);
  p.steady(7);
  EXPECT_TRUE(p.w.bdp_free());
  EXPECT_NEAR(p.w.bdp_last_ratio(), 1.0, 0.01);
}

TEST(BdpCapGoodput, TheGoBackAfterTheLossIsNotTheCapsCost) {
  Path p;
  p.steady(120);
  p.w.on_loss(p.now, kRtt, false);
  // The 64 packets in flight at the loss come back slowly (a NAK's round trip, then the
  // resend four packets at a time): not counted. Then the full rate under the cap.
  for (int i = 0; i < 16; ++i) p.ack(kRtt, 4);
  p.steady(14);
  EXPECT_TRUE(p.w.bdp_free());
}

TEST(BdpCapGoodput, NoReferenceNoFreeCap) {
  WindowTuning t = by_goodput();
  t.bdp_cap_loss_interval = 50;  // a loss after 80 packets is rare here
  Path p(t);
  p.steady(4);  // 80 packets without the cap: less than half a decision's 256
  p.lose();
  p.steady(14);
  EXPECT_FALSE(p.w.bdp_free());
  EXPECT_EQ(p.w.bdp_trials_costly(), 1u);
}

}  // namespace
}  // namespace roce::rdma::bdp_goodput_test
