// The send window's caps (congestion cap, random-loss need, go-back-N's BDP cap) are computed
// where they are read, from what the latest RTT sample left (SendWindow::on_rtt_sample). They
// must equal what the sample itself computed in session 15's eager form, kept here as the
// oracle: at the sharers' static total of that sample and the BDP cap's growth it left, the
// congestion cap clipped by the static total of every clamping event since. queue_high() must
// be the standing round trip (the smallest of the latest queue_samples) above the queue target.
// The window is fed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "lib/rdma/send_window.hpp"

namespace roce::rdma {
namespace {

constexpr std::uint32_t kPmtu = 1024;
constexpr Nanos kRtt = 10 * kMicro;

// Session 15's on_rtt_sample, the caps' part: the values each sample computed and stored.
struct EagerCaps {
  WindowTuning t;
  double max_rate = 0, per_ns = 0;
  Nanos min_rtt = 0, knee = 0;
  double cap = 0, need = 0, bdp = 0, grown = 0, measured = 0;
  double clip = 0;  // the congestion cap as clamp() left it: min(cap, static totals since)

  void start(double total) { cap = need = clip = total; }
  // `sharers` and `total`: the window's before the sample; `growth`: its growth after it.
  void sample(Nanos rtt, std::uint32_t delivered, Nanos interval, std::uint32_t pmtu, std::uint32_t sharers, double total,
              double growth) {
    if (rtt <= 0) return;
    if (min_rtt == 0 || rtt < min_rtt) min_rtt = rtt;
    const double rate =
        static_cast<double>(delivered) * pmtu * 8 * 1e9 / static_cast<double>(std::max(interval, rtt)) * sharers;
    max_rate = std::max(rate, max_rate * 0.99);
    if (rate >= 0.9 * max_rate) knee = knee == 0 ? rtt : std::min(rtt, knee + knee / 256 + 1);
    const double bps = std::max(max_rate, t.line_rate_bps);
    per_ns = bps * 1e-9 * 0.125 / pmtu;
    const auto mr = static_cast<double>(min_rtt);
    cap = std::clamp(t.bdp_headroom * per_ns * mr, static_cast<double>(t.bdp_floor_packets), total);
    measured = per_ns * mr;
    bdp = std::clamp(t.bdp_cap_headroom * per_ns * mr, std::min(t.bdp_cap_floor, total), total);
    grown = std::clamp(growth * t.bdp_cap_headroom * per_ns * mr, std::min(t.bdp_cap_floor, total), total);
    need = std::clamp(t.need_headroom * per_ns * static_cast<double>(knee ? knee : rtt), std::min(t.random_loss_floor, total),
                      total);
    clip = cap;
  }
  void clamped(double total) { clip = std::min(clip, total); }
};

// Every cap the window exposes against the oracle's, exactly (the same operations in the same
// order). bdp() is the base cap while losses are frequent, the grown one otherwise.
void expect_caps(const SendWindow& w, const EagerCaps& e, int step) {
  ASSERT_EQ(w.knee_rtt(), e.knee) << "step " << step;
  ASSERT_EQ(w.bdp_measured(), e.measured) << "step " << step;
  ASSERT_EQ(w.cap(), e.clip) << "step " << step;
  ASSERT_EQ(w.need(), e.need) << "step " << step;
  ASSERT_TRUE(w.bdp() == e.bdp || w.bdp() == e.grown) << "step " << step << ": " << w.bdp() << " not " << e.bdp << " or " << e.grown;
}

// Random events of every kind on a window of `qps` QPs, each checked against the oracle.
void run_events(const WindowTuning& t, double static_cap, std::uint32_t seed) {
  SendWindow w;
  w.start(t, static_cap, false);
  EagerCaps e;
  e.t = t;
  e.start(std::max(static_cap, 1.0));
  const auto total = [&] { return std::max(static_cap, 1.0) * w.sharers(); };
  w.join();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> kind(0, 99);
  std::uniform_int_distribution<Nanos> quick(2 * kMicro, 20 * kMicro), queued(250 * kMicro, 900 * kMicro);
  std::uniform_int_distribution<std::uint32_t> packets(0, 24);
  Nanos now = kMilli;
  std::uint32_t joined = 1;
  int samples = 0, losses = 0;
  for (int step = 0; step < 4000; ++step) {
    const int k = kind(rng);
    if (k < 40) {  // an RTT sample (a stretch of queued ones now and then)
      const Nanos r = (step / 200) % 3 == 2 ? queued(rng) : quick(rng);
      const std::uint32_t d = packets(rng);
      const Nanos interval = r + quick(rng) / 4;
      now += r;
      const std::uint32_t sharers = w.sharers();
      const double before_total = total();
      w.on_rtt_sample(now, r, d, interval, kPmtu);
      e.sample(r, d, interval, kPmtu, sharers, before_total, w.bdp_growth());
      e.clamped(total());
      ++samples;
    } else if (k < 70) {  // progress (held while a queue stands after a congestion loss)
      const std::uint32_t p = packets(rng);
      now += quick(rng) / 4;
      const bool clamps = w.enabled() && p > 0 && !(w.queue_high() && w.congested(now));
      w.on_progress(now, p);
      if (clamps) e.clamped(total());
    } else if (k < 78) {  // a loss: random, or the local ACK timer's
      now += quick(rng);
      if (w.on_loss(now, std::max<Nanos>(w.min_rtt(), kMicro), k == 77)) e.clamped(total());
      ++losses;
    } else if (k < 88) {  // a QP gains send work
      if (joined < 6) {
        w.join();
        ++joined;
      }
    } else if (k < 98) {  // ... or runs out of it
      if (joined > 0) {
        w.leave();
        --joined;
      }
    } else {  // time passes: the congestion cap and the BDP cap's memory may lapse
      now += 50 * kMilli;
    }
    expect_caps(w, e, step);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(samples, 1000);
  EXPECT_GT(losses, 100);
}

TEST(SendWindowCaps, LazyCapsEqualTheSamplesEagerCapsAfterEveryEventFullWindow) {
  WindowTuning t;
  t.enabled = true;  // random losses cut too: cap() and need() bound the window, on_loss reads need()
  for (std::uint32_t seed = 1; seed <= 4; ++seed) run_events(t, 16, seed);
}

TEST(SendWindowCaps, LazyCapsEqualTheSamplesEagerCapsAfterEveryEventGrownCapsByGoodput) {
  WindowTuning t;
  t.enabled = true;
  t.bdp_cap_judge = BdpJudge::Goodput;  // growth changes between samples too
  t.bdp_cap_trial_packets = 32;
  t.bdp_cap_shrink = true;
  t.bdp_cap_loss_interval = 64;
  t.line_rate_bps = 1e9;
  for (std::uint32_t seed = 11; seed <= 14; ++seed) run_events(t, 64, seed);
}

TEST(SendWindowCaps, LazyCapsEqualTheSamplesEagerCapsAfterEveryEventDefaultTuning) {
  for (std::uint32_t seed = 21; seed <= 22; ++seed) run_events(WindowTuning{}, 3, seed);  // a static total below the floors
}

// A trial of the BDP cap counts the samples the cap bounded, each judged by the caps of the
// previous sample (a sample's own caps are for the samples after it), though the caps are
// computed from the min RTT that the sample itself may lower: here the trial's 16th sample
// would be bounded by the caps at its own min RTT but not by the previous sample's, and so is
// not the trial's; the next one is.
TEST(SendWindowCaps, ATrialJudgesASampleByThePreviousSamplesCaps) {
  constexpr std::uint32_t kBigPmtu = 4096;
  WindowTuning t;
  t.bdp_cap_loss_interval = 256;
  t.bdp_cap_floor = 6;
  SendWindow w;
  w.start(t, 64, false);
  w.join();
  Nanos now = kMilli;
  const auto sample = [&](Nanos rtt, std::uint32_t packets) {
    now += rtt;
    w.on_progress(now, packets);
    w.on_rtt_sample(now, rtt, packets, rtt, kBigPmtu);
  };
  const auto decisions = [&] { return w.bdp_trials_free() + w.bdp_trials_costly(); };
  sample(2 * kMicro, 1);  // the min RTT: 2 us
  for (int i = 0; i < 40; ++i) sample(kRtt, 20);  // 20 packets per 10 us: rate x min RTT 4, the cap its floor 6
  w.on_loss(now, kRtt, false);  // a rare loss: the trial starts
  ASSERT_TRUE(w.bdp_engaged());
  for (std::uint32_t i = 1; i < t.bdp_cap_trial_samples - 1; ++i) sample(kRtt, 20);
  sample(kRtt, 2000);  // the trial's 15th: 100 times the rate, and the cap the static cap after it
  ASSERT_EQ(w.bdp(), 64);
  ASSERT_EQ(decisions(), 0u);
  sample(100, 1);  // a min RTT of 100 ns: its own caps 20 packets, the previous ones 64
  EXPECT_LT(w.bdp(), 64);
  EXPECT_EQ(decisions(), 0u);
  sample(kRtt, 20);  // bounded by the 100 ns sample's caps: the trial's 16th
  EXPECT_EQ(decisions(), 1u);
}

// Two QPs of 4 packets each share the window (the full window).
struct Shared {
  SendWindow w;
  Nanos now = kMilli;
  Shared() {
    WindowTuning t;
    t.enabled = true;
    w.start(t, 4, false);
    w.join();
    w.join();
  }
  // 2 packets of a QP in 10 us, two sharers: 3.2768 Gbit/s, 0.0004 packets a ns; 4 packets x
  // min RTT of 10 us.
  void sample() {
    now += kRtt;
    w.on_rtt_sample(now, kRtt, 2, kRtt, kPmtu);
  }
};

TEST(SendWindowCaps, BeforeAnySampleTheCapsAreTheStaticTotalOfTheStart) {
  Shared s;
  EXPECT_DOUBLE_EQ(s.w.bdp_measured(), 0);
  EXPECT_DOUBLE_EQ(s.w.bdp(), 0);
  // start() saw one sharer: 4 packets.
  EXPECT_DOUBLE_EQ(s.w.cap(), 4);
  EXPECT_DOUBLE_EQ(s.w.need(), 4);
}

TEST(SendWindowCaps, ASampleSetsEachCapFromRateTimesMinRtt) {
  Shared s;
  s.sample();
  EXPECT_DOUBLE_EQ(s.w.bdp_measured(), 4);
  EXPECT_DOUBLE_EQ(s.w.cap(), 6);   // bdp_headroom 1.5 x 4, within [4, 8]
  EXPECT_DOUBLE_EQ(s.w.need(), 5);  // need_headroom 1.25 x 4 (the knee: this sample's 10 us)
  EXPECT_DOUBLE_EQ(s.w.bdp(), 6);   // 1 x 4, raised to bdp_cap_floor 6
}

TEST(SendWindowCaps, TheCapsKeepTheSharersOfTheirSampleTheCongestionCapTheSmallestSince) {
  Shared s;
  s.sample();
  s.w.leave();  // one sharer: 4 packets in all
  // No event since: nothing clipped yet, and need and the BDP cap keep the sample's total of 8.
  EXPECT_DOUBLE_EQ(s.w.cap(), 6);
  EXPECT_DOUBLE_EQ(s.w.need(), 5);
  EXPECT_DOUBLE_EQ(s.w.bdp(), 6);
  s.w.on_progress(s.now, 1);
  EXPECT_DOUBLE_EQ(s.w.cap(), 4);  // clipped by the event
  EXPECT_DOUBLE_EQ(s.w.need(), 5);
  s.w.join();  // 8 again: the clip stays until the next sample
  EXPECT_DOUBLE_EQ(s.w.cap(), 4);
  s.w.on_progress(s.now, 1);
  EXPECT_DOUBLE_EQ(s.w.cap(), 4);
  s.sample();
  EXPECT_DOUBLE_EQ(s.w.cap(), 6);
}

// Go-back-N's default window (cut by congestion only) starts engaged, in slow start from
// initial_packets: each acknowledged packet adds 1 / sharers up to the static total of the
// sharers at the time, which also bounds it after a QP leaves. on_progress takes that total once
// for its loop and its clamp there (docs/perf-changes.md section 73): these are the values the
// loop asking effective_cap() at every step gave.
TEST(SendWindowCaps, ProgressGrowsACongestionOnlyWindowByOneOverSharersUpToTheStaticTotal) {
  WindowTuning t;  // enabled off, go_back_n_congestion on
  t.initial_packets = 3;
  SendWindow w;
  w.start(t, 8, false);
  w.join();
  w.join();  // two sharers: 16 packets in all
  EXPECT_EQ(w.sharers(), 2u);
  EXPECT_EQ(w.packets(), 3);
  Nanos now = kMilli;
  w.on_progress(now, 10);
  EXPECT_EQ(w.packets(), 8);  // 3 + 10 x 0.5
  w.on_progress(now += kRtt, 30);
  EXPECT_EQ(w.packets(), 16);  // stops at the total: 16 more of 0.5
  w.leave();                   // one sharer: 8 in all; leave() leaves an engaged window alone
  EXPECT_EQ(w.packets(), 16);
  w.on_progress(now += kRtt, 1);
  EXPECT_EQ(w.packets(), 8);  // clamped to the total of the one sharer
  w.join();
  w.on_progress(now += kRtt, 4);
  EXPECT_EQ(w.packets(), 10);  // growing again, by 0.5 a packet
}

TEST(SendWindowCaps, QueueHighIsTheStandingRoundTripAboveTheTarget) {
  for (std::uint32_t samples : {1u, 3u, 8u, 12u}) {
    SendWindow w;
    WindowTuning t;
    t.queue_samples = samples;
    w.start(t, 64, false);
    w.join();
    std::mt19937 rng(samples);
    std::uniform_int_distribution<Nanos> unqueued(10 * kMicro, 19 * kMicro), queued(220 * kMicro, 600 * kMicro);
    Nanos now = kMilli;
    int high = 0, low = 0;
    for (int i = 0; i < 400; ++i) {
      // Stretches of 20 unqueued and of 20 queued samples (above the target of 10 + 200 us),
      // each with one outlier of the other kind.
      const bool queue = ((i / 20) % 2 == 1) != (i % 20 == 7);
      const Nanos r = queue ? queued(rng) : unqueued(rng);
      now += r;
      w.on_rtt_sample(now, r, 4, r, kPmtu);
      const Nanos target = w.min_rtt() + std::max<Nanos>(t.queue_delay_target, 2 * w.min_rtt());
      ASSERT_EQ(w.queue_high(), w.standing_rtt() > target) << "queue_samples " << samples << ", sample " << i;
      (w.queue_high() ? high : low)++;
    }
    EXPECT_GT(high, 0) << samples;
    EXPECT_GT(low, 0) << samples;
  }
}

}  // namespace
}  // namespace roce::rdma
