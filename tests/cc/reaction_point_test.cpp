// Paper profile against dcqcn.md section 9 (T1-T6) with the shared settings: C = 100 Gb/s,
// g = 1/256, K = T = 55 us, F = 5, R_AI = 40 Mb/s, R_HAI = 200 Mb/s, R_min = 0, alpha0 = 1.
#include <gtest/gtest.h>

#include <cmath>

#include "lib/cc/reaction_point.hpp"
#include "tests/cc/rel_near.hpp"

namespace roce::cc::reaction_point_test {
namespace {

using test::kGbps;

RpParams spec_params() {
  RpParams p = paper_params(100 * kGbps);
  p.min_rate_bps = 0;
  return p;
}

double decay(int k) { return std::pow(255.0 / 256.0, k); }

TEST(ReactionPointPaper, StartsAtLineRateWithNoTimers) {
  ReactionPoint rp(spec_params());
  EXPECT_EQ(rp.rc_bps(), 100 * kGbps);
  EXPECT_EQ(rp.rt_bps(), 100 * kGbps);
  EXPECT_EQ(rp.alpha(), 1.0);
  EXPECT_FALSE(rp.cc_active());
  EXPECT_EQ(rp.next_deadline(), kNever);
  EXPECT_EQ(rp.advance(from_ms(10)), 0);
  rp.on_bytes_sent(from_ms(10), 50'000'000);  // before the first CNP the byte counter is off
  EXPECT_EQ(rp.state().bytes_acc, 0u);
  EXPECT_EQ(rp.rc_bps(), 100 * kGbps);
}

TEST(ReactionPointPaper, T1OneCnpHalvesTheRate) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  EXPECT_EQ(rp.rc_bps(), 50 * kGbps);
  EXPECT_EQ(rp.rt_bps(), 100 * kGbps);
  EXPECT_EQ(rp.alpha(), 1.0);
  EXPECT_EQ(rp.state().timer_stage, 0u);
  EXPECT_EQ(rp.state().byte_stage, 0u);
  EXPECT_EQ(rp.state().alpha_deadline, from_us(55));
  EXPECT_EQ(rp.state().increase_deadline, from_us(55));
  EXPECT_EQ(rp.next_deadline(), from_us(55));
  EXPECT_EQ(rp.counters().rate_decreases, 1u);
}

TEST(ReactionPointPaper, T2TimerRecoveryHasFiveFastRecoveryStepsThenCappedAdditive) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  const double expected_rc[] = {75, 87.5, 93.75, 96.875, 98.4375, 99.21875, 99.609375, 99.8046875, 99.90234375,
                                99.951171875};
  double sent_bytes = 0;
  for (int k = 1; k <= 10; ++k) {
    // The fluid sender: each microsecond, the bytes Rc allows. The byte counter must not fire.
    for (int us = 55 * (k - 1) + 1; us <= 55 * k; ++us) {
      const double bytes = rp.rc_bps() * 1e-6 / 8;
      sent_bytes += bytes;
      rp.on_bytes_sent(from_us(us) - 1, static_cast<std::uint64_t>(bytes));
    }
    EXPECT_EQ(rp.advance(from_us(55 * k)), 2) << "alpha and increase timers at " << 55 * k << " us";
    EXPECT_REL(rp.rc_bps(), expected_rc[k - 1] * kGbps) << "t=" << 55 * k;
    EXPECT_EQ(rp.rt_bps(), 100 * kGbps) << "Rt is capped at C in AI";
    EXPECT_REL(rp.alpha(), decay(k));
    EXPECT_EQ(rp.state().timer_stage, static_cast<std::uint32_t>(k));
  }
  EXPECT_REL(rp.alpha(), 0.9616170416164264);
  EXPECT_EQ(rp.counters().increases_fast_recovery, 5u);
  EXPECT_EQ(rp.counters().increases_additive, 5u);
  EXPECT_EQ(rp.counters().increases_hyper, 0u);
  EXPECT_EQ(rp.counters().byte_counter_events, 0u);
  sent_bytes += rp.rc_bps() * 10e-6 / 8;
  EXPECT_NEAR(sent_bytes, 6'313'110, 1.0);
}

TEST(ReactionPointPaper, T3SecondCnpBeforeAnyIncreaseGivesAdditiveBelowLineRate) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  rp.on_cnp(from_us(50));
  EXPECT_EQ(rp.rt_bps(), 50 * kGbps);
  EXPECT_EQ(rp.rc_bps(), 25 * kGbps);
  EXPECT_EQ(rp.alpha(), 1.0);
  EXPECT_EQ(rp.next_deadline(), from_us(105));
  const double fr[] = {37.5, 43.75, 46.875, 48.4375, 49.21875};
  for (int k = 1; k <= 5; ++k) {
    rp.advance(from_us(50 + 55 * k));
    EXPECT_REL(rp.rc_bps(), fr[k - 1] * kGbps);
    EXPECT_EQ(rp.rt_bps(), 50 * kGbps);
    EXPECT_REL(rp.alpha(), decay(k));
  }
  const double ai_rt[] = {50.04, 50.08, 50.12};
  const double ai_rc[] = {49.629375, 49.8546875, 49.98734375};
  for (int k = 0; k < 3; ++k) {
    rp.advance(from_us(380 + 55 * k));
    EXPECT_REL(rp.rt_bps(), ai_rt[k] * kGbps);
    EXPECT_REL(rp.rc_bps(), ai_rc[k] * kGbps);
  }
}

// Both increase events injected through the public API: timer events by advancing to the
// increase deadline, byte-counter events by reporting exactly B bytes sent.
TEST(ReactionPointPaper, T4EventInjectionWalksFastRecoveryAdditiveHyper) {
  RpParams p = spec_params();
  p.paper.fast_recovery_steps = 2;
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.on_cnp(from_us(1));
  ASSERT_EQ(rp.rt_bps(), 50 * kGbps);
  ASSERT_EQ(rp.rc_bps(), 25 * kGbps);
  struct Step {
    char ev;
    std::uint32_t t, bc;
    IncreaseKind kind;
    double rt, rc;
  };
  const Step steps[] = {
      {'T', 1, 0, IncreaseKind::FastRecovery, 50, 37.5},  {'T', 2, 0, IncreaseKind::FastRecovery, 50, 43.75},
      {'T', 3, 0, IncreaseKind::Additive, 50.04, 46.895}, {'B', 3, 1, IncreaseKind::Additive, 50.08, 48.4875},
      {'B', 3, 2, IncreaseKind::Additive, 50.12, 49.30375}, {'B', 3, 3, IncreaseKind::Hyper, 50.32, 49.811875},
      {'T', 4, 3, IncreaseKind::Hyper, 50.52, 50.1659375}, {'T', 5, 3, IncreaseKind::Hyper, 50.72, 50.44296875},
      {'B', 5, 4, IncreaseKind::Hyper, 51.12, 50.781484375},
  };
  Nanos now = from_us(1);
  for (const Step& s : steps) {
    const RpCounters before = rp.counters();
    if (s.ev == 'T') {
      now = rp.state().increase_deadline;
      while (rp.fire_next_timer(now) != RpAction::IncreaseTimer) {
      }
    } else {
      rp.on_bytes_sent(now, p.paper.byte_counter);
    }
    SCOPED_TRACE(std::string(1, s.ev) + " to (" + std::to_string(s.t) + "," + std::to_string(s.bc) + ")");
    EXPECT_EQ(rp.state().timer_stage, s.t);
    EXPECT_EQ(rp.state().byte_stage, s.bc);
    EXPECT_REL(rp.rt_bps(), s.rt * kGbps);
    EXPECT_REL(rp.rc_bps(), s.rc * kGbps);
    const RpCounters& after = rp.counters();
    switch (s.kind) {
      case IncreaseKind::FastRecovery: EXPECT_EQ(after.increases_fast_recovery, before.increases_fast_recovery + 1); break;
      case IncreaseKind::Additive: EXPECT_EQ(after.increases_additive, before.increases_additive + 1); break;
      case IncreaseKind::Hyper: EXPECT_EQ(after.increases_hyper, before.increases_hyper + 1); break;
    }
  }
}

TEST(ReactionPointPaper, T5CnpAfterAlphaDecayCutsWithTheDecayedAlpha) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  rp.advance(from_us(550));
  EXPECT_EQ(rp.rc_bps(), 99.951171875 * kGbps);
  EXPECT_REL(rp.alpha(), 0.9616170416164264);
  rp.on_cnp(from_us(560));
  EXPECT_EQ(rp.rt_bps(), 99.951171875 * kGbps);
  EXPECT_REL(rp.rc_bps(), 51.89379677273377 * kGbps);
  EXPECT_REL(rp.alpha(), 0.9617669750476122);
  EXPECT_EQ(rp.state().timer_stage, 0u);
  EXPECT_EQ(rp.state().byte_stage, 0u);
  EXPECT_EQ(rp.next_deadline(), from_us(615));
}

// Packets of 4096 bytes leave back to back at Rc, the first at t = 0, and each is counted when
// it leaves (as a pacer and on_bytes_sent() do). Each byte-counter event must come within one
// packet time (at the Rc before the event) of the fluid time, and the rates must be exact.
TEST(ReactionPointPaper, T6ByteCounterOnlyRecoveryMatchesFluidTimes) {
  RpParams p = spec_params();
  p.paper.increase_interval = kNever;
  ReactionPoint rp(p);
  rp.on_cnp(0);
  const double fluid_us[] = {1600, 2666.667, 3580.952, 4434.286, 5260.092, 6072.791};
  const double rc[] = {75, 87.5, 93.75, 96.875, 98.4375, 99.21875};
  constexpr std::uint32_t kPacket = 4096;
  double t_ns = 0;
  int events = 0;
  while (events < 6) {
    const double gap = kPacket * 8 / rp.rc_bps() * 1e9;
    const double packet_us = gap / 1000;
    rp.on_bytes_sent(static_cast<Nanos>(std::floor(t_ns)), kPacket);
    if (rp.counters().byte_counter_events > static_cast<std::uint64_t>(events)) {
      EXPECT_NEAR(t_ns / 1000, fluid_us[events], packet_us + 0.001) << "BC" << events + 1;
      EXPECT_EQ(rp.rc_bps(), rc[events] * kGbps) << "BC" << events + 1;
      EXPECT_EQ(rp.rt_bps(), 100 * kGbps);
      ++events;
    }
    t_ns += gap;
  }
  EXPECT_EQ(rp.state().timer_stage, 0u);
  EXPECT_EQ(rp.counters().increases_fast_recovery, 5u);
  EXPECT_EQ(rp.counters().increases_additive, 1u) << "(T,BC) = (0,6) is additive, never hyper";
  EXPECT_EQ(rp.counters().increases_hyper, 0u);
}

TEST(ReactionPointPaper, CnpAtADeadlineIsHandledBeforeTheTimers) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  rp.on_cnp(from_us(55));  // the timers due at 55 us must not raise Rc first
  EXPECT_EQ(rp.rt_bps(), 50 * kGbps);
  EXPECT_EQ(rp.rc_bps(), 25 * kGbps);
  EXPECT_EQ(rp.counters().alpha_updates, 0u);
  EXPECT_EQ(rp.counters().increase_timer_events, 0u);
  EXPECT_EQ(rp.next_deadline(), from_us(110));
}

TEST(ReactionPointPaper, CnpFiresEarlierTimersFirst) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  rp.on_cnp(from_us(56));  // the 55 us timers are overdue: FR to 75 first, then the cut
  EXPECT_EQ(rp.rt_bps(), 75 * kGbps);
  EXPECT_REL(rp.rc_bps(), 75 * kGbps * (1 - 0.99609375 / 2));
}

TEST(ReactionPointPaper, AlphaAndIncreaseAtTheSameDeadlineFireAlphaFirst) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  EXPECT_EQ(rp.fire_next_timer(from_us(55)), RpAction::AlphaUpdate);
  EXPECT_EQ(rp.rc_bps(), 50 * kGbps);
  EXPECT_EQ(rp.fire_next_timer(from_us(55)), RpAction::IncreaseTimer);
  EXPECT_EQ(rp.rc_bps(), 75 * kGbps);
  EXPECT_EQ(rp.fire_next_timer(from_us(55)), RpAction::None);
}

TEST(ReactionPointPaper, LateAdvanceCatchesUpEveryPeriodInOrder) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  EXPECT_EQ(rp.advance(from_us(550) + 999), 20);
  EXPECT_EQ(rp.rc_bps(), 99.951171875 * kGbps);
  EXPECT_EQ(rp.next_deadline(), from_us(605));
}

TEST(ReactionPointPaper, AlphaUpdateBeforeCutFlagUsesTheNewAlpha) {
  RpParams p = spec_params();
  ReactionPoint paper(p);
  p.paper.alpha_update_before_cut = true;
  ReactionPoint ns3(p);
  for (ReactionPoint* rp : {&paper, &ns3}) {
    rp->on_cnp(0);
    rp->advance(from_us(55));  // alpha = 255/256, Rc = 75
    rp->on_cnp(from_us(60));
  }
  const double a = 0.99609375;
  const double a_new = (1 - 1.0 / 256) * a + 1.0 / 256;
  EXPECT_REL(paper.rc_bps(), 75 * kGbps * (1 - a / 2));
  EXPECT_REL(ns3.rc_bps(), 75 * kGbps * (1 - a_new / 2));
  EXPECT_REL(paper.alpha(), a_new);
  EXPECT_REL(ns3.alpha(), a_new);
}

TEST(ReactionPointPaper, CutNeverGoesBelowMinRate) {
  RpParams p = spec_params();
  p.min_rate_bps = 30 * kGbps;
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.on_cnp(from_us(1));
  EXPECT_EQ(rp.rc_bps(), 30 * kGbps);
  EXPECT_EQ(rp.rt_bps(), 50 * kGbps);
}

TEST(ReactionPointPaper, ByteCounterCarriesTheRemainderAndFiresOncePerB) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  rp.on_bytes_sent(1, 25'000'000);  // 2.5 B: two events, 5 MB carried
  EXPECT_EQ(rp.counters().byte_counter_events, 2u);
  EXPECT_EQ(rp.state().bytes_acc, 5'000'000u);
  EXPECT_EQ(rp.rc_bps(), 87.5 * kGbps);
}

TEST(ReactionPointPaper, StopCancelsTimersAndTheNextCnpStartsAfresh) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  rp.stop();
  EXPECT_EQ(rp.next_deadline(), kNever);
  EXPECT_EQ(rp.advance(from_ms(1)), 0);
  rp.on_cnp(from_ms(1));
  EXPECT_EQ(rp.rt_bps(), 50 * kGbps);
  EXPECT_EQ(rp.rc_bps(), 25 * kGbps);
  EXPECT_EQ(rp.next_deadline(), from_ms(1) + from_us(55));
}

TEST(ReactionPointPaper, SnapshotReportsTheRateState) {
  ReactionPoint rp(spec_params());
  rp.on_cnp(0);
  const QpRateSnapshot s = rp.snapshot(0x42);
  EXPECT_EQ(s.qpn, 0x42u);
  EXPECT_EQ(s.rc_bps, 50 * kGbps);
  EXPECT_EQ(s.rt_bps, 100 * kGbps);
  EXPECT_EQ(s.alpha, 1.0);
  EXPECT_TRUE(s.cc_active);
  CcCounters port;
  port.add(rp.counters());
  port.count(classify_cnp(false, true));
  port.count(classify_cnp(true, false));
  EXPECT_EQ(port.cnp_received, 1u);
  EXPECT_EQ(port.rate_decreases, 1u);
  EXPECT_EQ(port.cnp_ignored_unknown_qp, 1u);
  EXPECT_EQ(port.cnp_ignored_cc_disabled, 1u);
  EXPECT_EQ(classify_cnp(true, true), CnpDisposition::Apply);
}

TEST(RpParams, AZeroPeriodThatSlipsPastCheckDisablesTheTimerInsteadOfSpinning) {
  RpParams p = spec_params();
  p.paper.alpha_interval = 0;
  ASSERT_NE(check(p), std::nullopt);
  ReactionPoint rp(p);
  rp.on_cnp(0);
  EXPECT_EQ(rp.state().alpha_deadline, kNever);
  EXPECT_EQ(rp.advance(from_us(55)), 1) << "only the increase timer";
}

TEST(RpParams, CheckRejectsUnusableValues) {
  EXPECT_EQ(check(paper_params(100 * kGbps)), std::nullopt);
  EXPECT_EQ(check(mlx_params(100 * kGbps)), std::nullopt);
  EXPECT_EQ(check(hpcc_params(100 * kGbps)), std::nullopt);
  RpParams p = paper_params(100 * kGbps);
  p.paper.g = 0;
  EXPECT_NE(check(p), std::nullopt);
  p = paper_params(100 * kGbps);
  p.paper.alpha_interval = 0;
  EXPECT_NE(check(p), std::nullopt);
  p = paper_params(100 * kGbps);
  p.min_rate_bps = 200 * kGbps;
  EXPECT_NE(check(p), std::nullopt);
  p = mlx_params(100 * kGbps);
  p.mlx.rpg_threshold = 0;
  EXPECT_NE(check(p), std::nullopt);
  p = mlx_params(100.5e6);
  EXPECT_NE(check(p), std::nullopt);
  EXPECT_EQ(profile_from_string("hpcc"), Profile::Hpcc);
  EXPECT_EQ(profile_from_string("dcqcn"), std::nullopt);
  EXPECT_EQ(increase_rule_from_string("isekai_mlx"), IncreaseRule::IsekaiMlx);
  EXPECT_EQ(to_string(RpAction::IncreaseBytes), "bytes");
  EXPECT_EQ(to_string(RpTimer::RateDecrease), "rate_decrease");
}

}  // namespace
}  // namespace roce::cc::reaction_point_test
