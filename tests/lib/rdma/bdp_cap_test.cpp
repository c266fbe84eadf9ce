// Go-back-N's BDP cap where it is free (WindowTuning::bdp_cap_when_free): after a loss that
// the loss interval alone would not cap, the cap holds for a trial of RTT samples; it keeps
// holding when the rate it leaves is the rate without it, and lets go when it costs rate. The
// SendWindow is pure arithmetic: the samples and losses are fed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "lib/rdma/send_window.hpp"

namespace roce::rdma {
namespace {

constexpr std::uint32_t kPmtu = 4096;
constexpr double kStaticCap = 64;  // packets one QP may have in flight without a window
constexpr Nanos kRtt = 10 * kMicro;
constexpr std::uint32_t kPerRtt = 20;  // packets a sample delivers at the path's full rate

// The trial is for losses rarer than bdp_cap_loss_interval: these tests count with session 14's
// interval (256 packets) and floor (6 packets); since session 15 the defaults are 8192 and 5.
WindowTuning session14() {
  WindowTuning t;
  t.bdp_cap_loss_interval = 256;
  t.bdp_cap_floor = 6;
  return t;
}

struct Path {
  SendWindow w;
  Nanos now = kMilli;
  explicit Path(const WindowTuning& t = session14()) {
    w.start(t, kStaticCap, false);
    w.join();
    // A lone packet's round trip (the min RTT, 2 us), then full-rate samples without the cap:
    // 20 packets per 10 us, so rate x min RTT is 4 packets and the cap its floor of 6.
    sample(2 * kMicro, 1);
    for (int i = 0; i < 40; ++i) sample(kRtt, kPerRtt);
  }
  void sample(Nanos rtt, std::uint32_t packets) {
    now += rtt;
    w.on_progress(now, packets);
    w.on_rtt_sample(now, rtt, packets, rtt, kPmtu);
  }
  // Packets delivered without a loss: rare losses (more than bdp_cap_loss_interval apart).
  void clean(std::uint32_t packets) {
    for (std::uint32_t d = 0; d < packets; d += kPerRtt) sample(kRtt, kPerRtt);
  }
  void lose() { w.on_loss(now, kRtt, false); }
  // A trial's samples at `fraction` of the full rate.
  void trial(double fraction) {
    for (std::uint32_t i = 0; i < WindowTuning{}.bdp_cap_trial_samples; ++i)
      sample(kRtt, static_cast<std::uint32_t>(kPerRtt * fraction));
  }
};

// A trial is judged against the median of the latest bdp_cap_trial_samples samples taken
// without the cap, kept in a ring (SendWindow::on_sample_free_cap: the count held below twice
// the ring's size, no division per sample): after many times the ring's length of uncapped
// samples, each of a different rate, the verdict's ratio is exactly the trial's rate over the
// median (std::nth_element's, at n / 2) of the latest ones.
TEST(BdpCapWhenFree, ATrialsReferenceIsTheLatestUncappedSamples) {
  for (const std::uint32_t n : {16u, 5u, 32u}) {
    WindowTuning t = session14();
    t.bdp_cap_trial_samples = n;
    Path p(t);
    const auto rate = [](std::uint32_t packets) {
      return static_cast<double>(packets) * kPmtu * 8 * 1e9 / static_cast<double>(kRtt) * 1;
    };
    std::vector<double> uncapped;
    for (std::uint32_t i = 0; i < 25 * n + 3; ++i) {
      const std::uint32_t d = 14 + (i * 7) % 11 + i % 3;
      p.sample(kRtt, d);
      uncapped.push_back(rate(d));
    }
    p.lose();
    ASSERT_TRUE(p.w.bdp_engaged()) << n;  // the trial
    constexpr std::uint32_t kTrial = 19;
    for (std::uint32_t i = 0; i < n; ++i) p.sample(kRtt, kTrial);
    std::vector<double> latest(uncapped.end() - n, uncapped.end());
    std::nth_element(latest.begin(), latest.begin() + n / 2, latest.end());
    EXPECT_EQ(p.w.bdp_last_ratio(), rate(kTrial) / latest[n / 2]) << n;
    EXPECT_EQ(p.w.bdp_trials_free() + p.w.bdp_trials_costly(), 1u) << n;
  }
}

// The QP's start-up is no reference (docs/loss.md, part 1, "Session 20 (gbn20)" and "Session 21
// (gbn21)"): its first round trips run at 0.6 of the rate it runs at later (the one-thread rig:
// 33-46 Gbit/s against 45-82), and a first loss within them used to judge a trial at 0.8 of the
// full rate free (0.8 / 0.6), a cap the reference, frozen while it held, could not overturn.
// Now that trial has no verdict and the cap lets go untried (no growth, no backoff); the next
// rare loss, with bdp_cap_trial_samples samples at the full rate behind it, finds 0.8 costly.
TEST(BdpCapWhenFree, AFirstLossAmongTheStartUpSamplesGivesNoVerdict) {
  SendWindow w;
  w.start(session14(), kStaticCap, false);
  w.join();
  Nanos now = kMilli;
  const auto sample = [&](Nanos rtt, std::uint32_t packets) {
    now += rtt;
    w.on_progress(now, packets);
    w.on_rtt_sample(now, rtt, packets, rtt, kPmtu);
  };
  const std::uint32_t n = WindowTuning{}.bdp_cap_trial_samples;
  sample(2 * kMicro, 1);  // a lone packet's round trip: rate x min RTT under the floor of 6
  // The start-up: fewer samples than a trial's, each over a deep window (5 round trips' worth of
  // packets at 0.6 of the rate), so the first loss is rare by the interval (600 packets > 256).
  for (std::uint32_t i = 0; i < n / 2 + 2; ++i) sample(5 * kRtt, 5 * kPerRtt * 6 / 10);
  w.on_loss(now, kRtt, false);
  ASSERT_GT(w.loss_interval(), session14().bdp_cap_loss_interval);
  ASSERT_TRUE(w.bdp_engaged());  // the trial
  EXPECT_EQ(w.limit(), 6u);
  for (std::uint32_t i = 0; i < n; ++i) sample(kRtt, kPerRtt * 8 / 10);
  EXPECT_EQ(w.bdp_trials_free() + w.bdp_trials_costly(), 0u);
  EXPECT_EQ(w.bdp_trials_unjudged(), 1u);
  EXPECT_FALSE(w.bdp_free());
  EXPECT_FALSE(w.bdp_engaged());  // let go: the static cap again
  EXPECT_EQ(w.limit(), static_cast<std::uint32_t>(kStaticCap));
  EXPECT_DOUBLE_EQ(w.bdp_growth(), 1);  // untried, not grown as after a costly verdict
  // A rare loss later, the reference full of samples at the rate the QP runs at.
  for (std::uint32_t i = 0; i < 100; ++i) sample(kRtt, kPerRtt);
  w.on_loss(now, kRtt, false);
  ASSERT_TRUE(w.bdp_engaged());
  EXPECT_EQ(w.limit(), 6u);  // the first try, at 1 x (the floor)
  for (std::uint32_t i = 0; i < n; ++i) sample(kRtt, kPerRtt * 8 / 10);
  EXPECT_EQ(w.bdp_trials_costly(), 1u);
  EXPECT_EQ(w.bdp_trials_free(), 0u);
  EXPECT_DOUBLE_EQ(w.bdp_last_ratio(), 0.8);
  EXPECT_FALSE(w.bdp_free());
}

TEST(BdpCapWhenFree, APathThatNeverLosesKeepsTheStaticCap) {
  Path p;
  EXPECT_FALSE(p.w.bdp_engaged());
  EXPECT_DOUBLE_EQ(p.w.bdp(), 6);
}

TEST(BdpCapWhenFree, ARareLossStartsATrialAndAFreeCapKeepsHolding) {
  Path p;
  p.clean(2000);
  p.lose();
  ASSERT_GT(p.w.loss_interval(), session14().bdp_cap_loss_interval);  // the interval alone would not cap
  EXPECT_TRUE(p.w.bdp_engaged());  // the trial
  EXPECT_EQ(p.w.limit(), 6u);
  p.trial(1.0);  // the same rate with 6 in flight: the wire's round trip, not a loop's
  EXPECT_TRUE(p.w.bdp_free());
  EXPECT_EQ(p.w.bdp_trials_free(), 1u);
  // Free: it holds across a long clean stretch, where the interval alone releases it.
  p.clean(20000);
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 6u);
}

TEST(BdpCapWhenFree, ACapThatCostsRateLetsGoAndIsTriedAgainLessOften) {
  WindowTuning t = session14();
  t.bdp_cap_growth = 1;  // the backoff alone (ACostlyCapGrowsBeforeItBacksOff: with the growth)
  Path p(t);
  p.clean(2000);
  p.lose();
  p.trial(0.7);  // a quarter of the rate lost, as on a one-thread polling loop
  EXPECT_FALSE(p.w.bdp_free());
  EXPECT_FALSE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.bdp_trials_costly(), 1u);
  EXPECT_GT(p.w.limit(), 6u);
  // After 1, 2, 4 .. costly verdicts, as many rare losses pass before the next trial.
  p.clean(2000);
  p.lose();
  EXPECT_TRUE(p.w.bdp_engaged());  // the first costly verdict skips no loss
  p.trial(0.7);
  EXPECT_EQ(p.w.bdp_trials_costly(), 2u);
  p.clean(2000);
  p.lose();
  EXPECT_FALSE(p.w.bdp_engaged());  // skipped
  p.clean(2000);
  p.lose();
  EXPECT_TRUE(p.w.bdp_engaged());
}

TEST(BdpCapWhenFree, ACostlyCapGrowsBeforeItBacksOff) {
  Path p;  // rate x min RTT is 4 packets: the caps tried are 6 (the floor), 9, 13.5 and 16
  p.clean(2000);
  p.lose();
  EXPECT_EQ(p.w.limit(), 6u);
  p.trial(0.7);
  EXPECT_FALSE(p.w.bdp_engaged());
  EXPECT_DOUBLE_EQ(p.w.bdp_growth(), 1.5);
  p.clean(2000);
  p.lose();  // no loss skipped while the cap can grow
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 6u);  // 1.5 x 4 packets
  p.trial(0.7);
  p.clean(2000);
  p.lose();
  EXPECT_EQ(p.w.limit(), 9u);
  p.trial(0.8);
  p.clean(2000);
  p.lose();
  EXPECT_EQ(p.w.limit(), 13u);
  p.trial(0.8);
  p.clean(2000);
  p.lose();
  EXPECT_EQ(p.w.limit(), 16u);  // the largest: 4 x rate x min RTT
  p.trial(0.8);
  EXPECT_EQ(p.w.bdp_trials_costly(), 5u);
  // Costly at the largest cap: now the trials back off (the first costly verdict there skips no loss).
  p.clean(2000);
  p.lose();
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 16u);
  p.trial(0.8);
  p.clean(2000);
  p.lose();
  EXPECT_FALSE(p.w.bdp_engaged());  // skipped
}

TEST(BdpCapWhenFree, AGrownCapThatIsFreeKeepsHolding) {
  Path p;  // without the shrink (AGrownCapShrinksWhenThePathNeedsLess: with it)
  p.clean(2000);
  p.lose();
  p.trial(0.7);
  p.clean(2000);
  p.lose();
  p.trial(0.7);
  p.clean(2000);
  p.lose();
  ASSERT_EQ(p.w.limit(), 9u);
  p.trial(1.0);  // what the rate needs: a little more than rate x min RTT
  EXPECT_TRUE(p.w.bdp_free());
  EXPECT_EQ(p.w.bdp_trials_free(), 1u);
  p.clean(20000);
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 9u);
}

// Grows the cap to its largest, 4 x rate x min RTT (16 packets), with costly verdicts, then
// holds it with a free one.
WindowTuning shrinking() {
  WindowTuning t = session14();
  t.bdp_cap_shrink = true;
  return t;
}

void grow_to_the_largest_free_cap(Path& p) {
  for (int i = 0; i < 5; ++i) {  // costly at 6, 6, 9, 13 and 16
    p.clean(2000);
    p.lose();
    p.trial(i < 2 ? 0.7 : 0.8);
  }
  p.clean(2000);
  p.lose();
  ASSERT_EQ(p.w.limit(), 16u);
  p.trial(1.0);
  ASSERT_TRUE(p.w.bdp_free());
}

TEST(BdpCapWhenFree, AGrownCapShrinksWhenThePathNeedsLess) {
  Path p(shrinking());
  grow_to_the_largest_free_cap(p);
  // The path now carries its full rate with less in flight. After two free decisions in a row
  // the cap tries one growth step less (4 / 1.5 = 2.67 x 4 packets, then 1.78 x, 1.19 x and
  // 1 x: the floor of 6), and keeps it after two free decisions there.
  EXPECT_EQ(p.w.limit(), 16u);
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 10u);
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 10u);  // one free decision: not kept yet
  EXPECT_EQ(p.w.bdp_shrinks(), 0u);
  p.trial(1.0);
  EXPECT_EQ(p.w.bdp_shrinks(), 1u);
  EXPECT_EQ(p.w.limit(), 7u);
  p.trial(1.0);
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 6u);
  p.trial(1.0);
  p.trial(1.0);
  EXPECT_DOUBLE_EQ(p.w.bdp_growth(), 1.0);
  p.trial(1.0);
  p.trial(1.0);
  EXPECT_EQ(p.w.bdp_shrinks(), 4u);
  EXPECT_EQ(p.w.bdp_shrinks_costly(), 0u);
  EXPECT_TRUE(p.w.bdp_free());
  // At 1 x it stays: a clean stretch neither lets it go nor moves it.
  p.clean(20000);
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 6u);
}

TEST(BdpCapWhenFree, ASmallerCapThatCostsRateGoesBackAndIsTriedLessOften) {
  Path p(shrinking());
  grow_to_the_largest_free_cap(p);
  const std::uint32_t costly = p.w.bdp_trials_costly();
  p.trial(1.0);
  ASSERT_EQ(p.w.limit(), 10u);
  p.trial(0.8);  // the path still needs 16: back to it, still free, no costly trial counted
  EXPECT_EQ(p.w.bdp_shrinks_costly(), 1u);
  EXPECT_TRUE(p.w.bdp_free());
  EXPECT_EQ(p.w.bdp_trials_costly(), costly);
  EXPECT_DOUBLE_EQ(p.w.bdp_growth(), 4.0);  // (the rate measured fell with the samples: 13 packets)
  p.trial(1.0);
  p.trial(1.0);  // two free decisions at 16; the next try down waits one more
  EXPECT_EQ(p.w.limit(), 16u);
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 10u);
  p.trial(0.8);  // costly again: now it waits two more
  EXPECT_EQ(p.w.bdp_shrinks_costly(), 2u);
  for (int i = 0; i < 3; ++i) p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 16u);
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 10u);
  EXPECT_EQ(p.w.bdp_shrinks(), 0u);
}

TEST(BdpCapWhenFree, ACapThatShrankAndThenCostsRateStepsBackUpAndHolds) {
  Path p(shrinking());
  grow_to_the_largest_free_cap(p);
  const std::uint32_t costly = p.w.bdp_trials_costly();
  for (int i = 0; i < 3; ++i) p.trial(1.0);  // 16 -> 10, kept; now trying 7
  ASSERT_EQ(p.w.bdp_shrinks(), 1u);
  ASSERT_EQ(p.w.limit(), 7u);
  p.trial(0.8);  // 7 costs rate: back to 10
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 10u);
  p.trial(0.8);  // now 10 costs rate too (the path needs more again): up to 16, still held
  EXPECT_DOUBLE_EQ(p.w.bdp_growth(), 4.0);
  EXPECT_TRUE(p.w.bdp_free());
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.bdp_shrinks_costly(), 2u);
  EXPECT_EQ(p.w.bdp_trials_costly(), costly);
  p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 16u);
}

TEST(BdpCapWhenFree, OffAGrownCapDoesNotShrink) {
  Path p;  // the default
  grow_to_the_largest_free_cap(p);
  for (int i = 0; i < 4; ++i) p.trial(1.0);
  EXPECT_EQ(p.w.limit(), 16u);
  EXPECT_EQ(p.w.bdp_shrinks(), 0u);
}

TEST(BdpCapWhenFree, AGrownCapMustBeNearlyFree) {
  Path p;
  p.clean(2000);
  p.lose();
  p.trial(0.9);  // rate x min RTT at 0.9 of the rate: free
  EXPECT_TRUE(p.w.bdp_free());
  Path q;
  for (int i = 0; i < 2; ++i) {
    q.clean(2000);
    q.lose();
    q.trial(0.7);
  }
  q.clean(2000);
  q.lose();
  ASSERT_EQ(q.w.limit(), 9u);
  q.trial(0.9);  // grown: it resends more than 4 per lost anyway, so 0.9 of the rate is costly
  EXPECT_FALSE(q.w.bdp_free());
  EXPECT_EQ(q.w.bdp_trials_costly(), 3u);
}

TEST(BdpCapWhenFree, WhileLossesAreFrequentTheCapIsNotGrown) {
  Path p;
  for (int i = 0; i < 3; ++i) {  // costly verdicts at 6, 6 and 9
    p.clean(2000);
    p.lose();
    p.trial(0.7);
  }
  p.clean(2000);
  p.lose();
  ASSERT_EQ(p.w.limit(), 13u);
  // Frequent losses: the cap pays there whatever it costs (1 and 5 %), so it stays rate x min RTT.
  for (int i = 0; i < 20; ++i) {
    p.clean(40);
    p.lose();
  }
  EXPECT_TRUE(p.w.bdp_engaged());
  EXPECT_EQ(p.w.limit(), 6u);
}

TEST(BdpCapWhenFree, AFreeCapThatStartsToCostRateLetsGo) {
  Path p;
  p.clean(2000);
  p.lose();
  p.trial(1.0);
  ASSERT_TRUE(p.w.bdp_free());
  p.trial(0.6);  // decided again against the rate measured without the cap
  EXPECT_FALSE(p.w.bdp_free());
  EXPECT_FALSE(p.w.bdp_engaged());
}

TEST(BdpCapWhenFree, OffTheCapHoldsOnlyWhileLossesAreFrequent) {
  WindowTuning t = session14();
  t.bdp_cap_when_free = false;
  Path p(t);
  p.clean(2000);
  p.lose();
  EXPECT_FALSE(p.w.bdp_engaged());
  // Frequent losses hold it, as before.
  for (int i = 0; i < 20; ++i) {
    p.clean(40);
    p.lose();
  }
  EXPECT_TRUE(p.w.bdp_engaged());
}

}  // namespace
}  // namespace roce::rdma
