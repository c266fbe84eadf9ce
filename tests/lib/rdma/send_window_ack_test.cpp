// The send window's per-ACK entry (SendWindow::on_ack: the progress and then the RTT sample in
// one call) and the static total that join and leave keep instead of a product at every use.
// Both are the old arithmetic in fewer instructions: a window fed on_ack must be, after every
// event, the window fed on_progress and on_rtt_sample; the window before its first loss must be
// the static cap times the QPs that have send work, through any order of joins and leaves.
#include <gtest/gtest.h>

#include <random>

#include "lib/rdma/send_window.hpp"

namespace roce::rdma {
namespace {

constexpr std::uint32_t kAckPmtu = 1024;

// Everything a window shows, to the bit.
void expect_same_window(const SendWindow& a, const SendWindow& b, Nanos now, int step) {
  ASSERT_EQ(a.packets(), b.packets()) << "step " << step;
  ASSERT_EQ(a.limit(), b.limit()) << "step " << step;
  ASSERT_EQ(a.ack_spacing(), b.ack_spacing()) << "step " << step;
  ASSERT_EQ(a.sharers(), b.sharers()) << "step " << step;
  ASSERT_EQ(a.engaged(), b.engaged()) << "step " << step;
  ASSERT_EQ(a.congested(now), b.congested(now)) << "step " << step;
  ASSERT_EQ(a.queue_high(), b.queue_high()) << "step " << step;
  ASSERT_EQ(a.min_rtt(), b.min_rtt()) << "step " << step;
  ASSERT_EQ(a.knee_rtt(), b.knee_rtt()) << "step " << step;
  ASSERT_EQ(a.standing_rtt(), b.standing_rtt()) << "step " << step;
  ASSERT_EQ(a.cap(), b.cap()) << "step " << step;
  ASSERT_EQ(a.need(), b.need()) << "step " << step;
  ASSERT_EQ(a.bdp(), b.bdp()) << "step " << step;
  ASSERT_EQ(a.bdp_engaged(), b.bdp_engaged()) << "step " << step;
  ASSERT_EQ(a.bdp_split_cap(), b.bdp_split_cap()) << "step " << step;
  ASSERT_EQ(a.bdp_measured(), b.bdp_measured()) << "step " << step;
  ASSERT_EQ(a.bdp_free(), b.bdp_free()) << "step " << step;
  ASSERT_EQ(a.bdp_trials_free(), b.bdp_trials_free()) << "step " << step;
  ASSERT_EQ(a.bdp_trials_costly(), b.bdp_trials_costly()) << "step " << step;
  ASSERT_EQ(a.bdp_growth(), b.bdp_growth()) << "step " << step;
  ASSERT_EQ(a.bdp_last_ratio(), b.bdp_last_ratio()) << "step " << step;
  ASSERT_EQ(a.loss_interval(), b.loss_interval()) << "step " << step;
  ASSERT_EQ(a.spacing(20 * kMicro), b.spacing(20 * kMicro)) << "step " << step;
}

// Two windows through the same random events: joins, leaves, losses (a third of them
// timeouts), and ACKs, most with an RTT sample (rtt 0: none). `split` takes each ACK as the two
// calls, the other window as on_ack. The round trips rise into a queue now and then, so that
// the delay cut, the congestion cap and (with the BDP cap's trials) its verdicts all run.
void run_ack_events(const WindowTuning& t, bool selective, std::uint32_t seed) {
  SendWindow split, joined;
  split.start(t, 24, false, selective);
  joined.start(t, 24, false, selective);
  std::mt19937 rng(seed);
  Nanos now = kMicro;
  Nanos base = 10 * kMicro;
  for (int step = 0; step < 6000; ++step) {
    now += 1 + static_cast<Nanos>(rng() % (3 * kMicro));
    if (step % 700 == 350) base = 10 * kMicro + static_cast<Nanos>(rng() % (400 * kMicro));  // a queue comes or goes
    const std::uint32_t pick = rng() % 100;
    if (pick < 8) {
      split.join();
      joined.join();
    } else if (pick < 16) {
      split.leave();
      joined.leave();
    } else if (pick < 19) {
      const bool timeout = rng() % 3 == 0;
      EXPECT_EQ(split.on_loss(now, base, timeout), joined.on_loss(now, base, timeout)) << "step " << step;
    } else {
      const auto packets = static_cast<std::uint32_t>(rng() % 6);  // 0 too: no progress
      const Nanos rtt = rng() % 5 == 0 ? 0 : base + static_cast<Nanos>(rng() % (5 * kMicro));
      const auto delivered = static_cast<std::uint32_t>(1 + rng() % 40);
      const Nanos interval = static_cast<Nanos>(rng() % (60 * kMicro));
      split.on_progress(now, packets);
      split.on_rtt_sample(now, rtt, delivered, interval, kAckPmtu);
      joined.on_ack(now, packets, rtt, delivered, interval, kAckPmtu);
    }
    expect_same_window(split, joined, now, step);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(SendWindowAck, OnAckIsProgressThenSampleDefaultGoBackN) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) run_ack_events(WindowTuning{}, false, seed);
}

TEST(SendWindowAck, OnAckIsProgressThenSampleFullWindowAndBdpCapTrials) {
  WindowTuning t;
  t.enabled = true;
  t.bdp_cap_split = true;
  for (std::uint32_t seed = 1; seed <= 4; ++seed) run_ack_events(t, false, seed);
  t.bdp_cap_judge = BdpJudge::Goodput;
  t.bdp_cap_trial_packets = 32;
  t.bdp_cap_shrink = true;
  for (std::uint32_t seed = 5; seed <= 8; ++seed) run_ack_events(t, false, seed);
}

TEST(SendWindowAck, OnAckIsProgressThenSampleSelectiveRepeat) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) run_ack_events(WindowTuning{}, true, seed);
}

// The order matters, so the test can tell it: a go-back-N window in slow start whose ACK
// brings the first sample. Progress first grows the window under the static total; the
// sample then clips the congestion cap with the same total. Sampled first, the sample would
// see the window before its growth, and a sample that shows a queue after a congestion loss
// cuts a different window.
TEST(SendWindowAck, OnAckGrowsTheWindowBeforeTheSampleCutsIt) {
  WindowTuning t;
  t.queue_delay_target = 10 * kMicro;
  t.queue_samples = 1;
  SendWindow a, b;
  a.start(t, 64, false);
  b.start(t, 64, false);
  a.join();
  b.join();
  Nanos now = kMicro;
  for (int i = 0; i < 4; ++i) {  // a path of 10 us, then a timeout: congestion
    now += 10 * kMicro;
    a.on_ack(now, 1, 10 * kMicro, 1, 10 * kMicro, kAckPmtu);
    b.on_progress(now, 1);
    b.on_rtt_sample(now, 10 * kMicro, 1, 10 * kMicro, kAckPmtu);
  }
  ASSERT_TRUE(a.on_loss(now, 10 * kMicro, true));
  ASSERT_TRUE(b.on_loss(now, 10 * kMicro, true));
  now += 10 * kMicro;
  // A sample far above the target: the delay cut, after this ACK's growth.
  a.on_ack(now, 3, 200 * kMicro, 3, 200 * kMicro, kAckPmtu);
  b.on_progress(now, 3);
  b.on_rtt_sample(now, 200 * kMicro, 3, 200 * kMicro, kAckPmtu);
  EXPECT_TRUE(a.queue_high());
  EXPECT_EQ(a.packets(), b.packets());
  // The other order gives another window: what the comparison above would catch.
  SendWindow c;
  c.start(t, 64, false);
  c.join();
  now = kMicro;
  for (int i = 0; i < 4; ++i) {
    now += 10 * kMicro;
    c.on_progress(now, 1);
    c.on_rtt_sample(now, 10 * kMicro, 1, 10 * kMicro, kAckPmtu);
  }
  ASSERT_TRUE(c.on_loss(now, 10 * kMicro, true));
  now += 10 * kMicro;
  c.on_rtt_sample(now, 200 * kMicro, 3, 200 * kMicro, kAckPmtu);
  c.on_progress(now, 3);
  EXPECT_NE(c.packets(), a.packets());
}

// Before the first loss (the full window, WindowTuning::enabled) the window is the static cap
// times the QPs with send work, through joins and leaves in any order; the first to join and
// the last to leave change no sharer count. After the loss a leave keeps it within the new total.
TEST(SendWindowAck, JoinAndLeaveKeepTheWindowAtTheStaticCapTimesTheSharers) {
  WindowTuning t;
  t.enabled = true;
  SendWindow w;
  w.start(t, 8, false);
  EXPECT_EQ(w.packets(), 8);
  w.join();  // the first: still one sharer
  EXPECT_EQ(w.sharers(), 1u);
  EXPECT_EQ(w.packets(), 8);
  w.join();
  w.join();
  EXPECT_EQ(w.sharers(), 3u);
  EXPECT_EQ(w.packets(), 24);
  w.leave();
  EXPECT_EQ(w.packets(), 16);
  w.leave();
  EXPECT_EQ(w.packets(), 8);
  w.leave();  // the last: one sharer still
  EXPECT_EQ(w.sharers(), 1u);
  EXPECT_EQ(w.packets(), 8);
  w.leave();  // not joined: nothing
  EXPECT_EQ(w.packets(), 8);
  for (int i = 0; i < 5; ++i) w.join();
  EXPECT_EQ(w.sharers(), 5u);
  EXPECT_EQ(w.packets(), 40);
  // A timeout: one packet per sharer; progress grows it back toward the need, never past the
  // static total of the sharers it has then (no sample yet: the need is the start's total).
  ASSERT_TRUE(w.on_loss(2 * kMicro, 10 * kMicro, true));
  EXPECT_EQ(w.packets(), 5);
  w.leave();
  w.leave();
  for (int i = 0; i < 100; ++i) w.on_progress(3 * kMicro + i, 1);
  EXPECT_LE(w.packets(), 8);  // the need: start()'s total, one sharer's static cap (no sample yet)
  EXPECT_EQ(w.sharers(), 3u);
}

}  // namespace
}  // namespace roce::rdma
