// Profile `mlx` (dcqcn.md 4.7 and C2): firmware fixed point with the Isekai reading of
// DCE_TCP_G, port speed 100,000 Mb/s, defaults of section 2.2.
#include <gtest/gtest.h>

#include "lib/cc/reaction_point.hpp"
#include "tests/cc/rel_near.hpp"

namespace roce::cc::rp_mlx_test {
namespace {

using test::kMbps;

RpParams c2_params() { return mlx_params(100'000 * kMbps); }

TEST(ReactionPointMlx, FirstCnpAllocatesTheLimiterAtPortSpeedWithInitialAlpha) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  EXPECT_TRUE(rp.cc_active());
  EXPECT_EQ(rp.rc_bps(), 100'000 * kMbps);
  EXPECT_EQ(rp.rt_bps(), 100'000 * kMbps);
  EXPECT_EQ(rp.state().alpha_fx, 1023u);
  EXPECT_EQ(rp.state().alpha_deadline, from_us(1));
  EXPECT_EQ(rp.state().decrease_deadline, from_us(4));
  EXPECT_EQ(rp.state().increase_deadline, from_us(300));
  EXPECT_EQ(rp.counters().rate_decreases, 0u) << "the cut waits for the monitor period";
}

// Chosen tie order: alpha before the decrease check, so the cut at 4 us sees four decays.
TEST(ReactionPointMlx, C2AlphaDecaysBeforeTheFirstCheckAndTheCutIsIntegerMath) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  const std::uint32_t alpha[] = {1018, 1013, 1008};
  for (int us = 1; us <= 3; ++us) {
    EXPECT_EQ(rp.fire_next_timer(from_us(us)), RpAction::AlphaUpdate);
    EXPECT_EQ(rp.state().alpha_fx, alpha[us - 1]);
  }
  EXPECT_EQ(rp.fire_next_timer(from_us(4)), RpAction::AlphaUpdate);
  EXPECT_EQ(rp.state().alpha_fx, 1003u);
  EXPECT_EQ(rp.rc_bps(), 100'000 * kMbps);
  EXPECT_EQ(rp.fire_next_timer(from_us(4)), RpAction::RateDecrease);
  // cut = min(100000 * 1003 >> 11, 100000 * 50 / 100) = min(48974, 50000)
  EXPECT_EQ(rp.rc_bps(), 51'026 * kMbps);
  EXPECT_EQ(rp.rt_bps(), 100'000 * kMbps) << "no increase since the last decrease: no clamp";
  EXPECT_EQ(rp.state().increase_deadline, from_us(304));
}

TEST(ReactionPointMlx, C2CutWithAlpha1023IsTheSpecValue) {
  RpParams p = c2_params();
  p.mlx.dce_tcp_rtt = from_us(10);  // no alpha update before the first check
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.advance(from_us(4));
  EXPECT_EQ(rp.state().alpha_fx, 1023u);
  EXPECT_EQ(rp.rc_bps(), 50'049 * kMbps);
}

TEST(ReactionPointMlx, C2MinDecFacBoundsTheCut) {
  RpParams p = c2_params();
  p.mlx.rpg_min_dec_fac = 80;  // at most a 20 % cut
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.advance(from_us(4));
  EXPECT_EQ(rp.rc_bps(), 80'000 * kMbps);
}

TEST(ReactionPointMlx, C2SecondCnpInTheSamePeriodDoesNotCutTwice) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  rp.on_cnp(from_us(2));
  EXPECT_EQ(rp.counters().cnp_coalesced, 1u);
  rp.advance(from_us(4));
  EXPECT_EQ(rp.counters().rate_decreases, 1u);
  // The CNP at 2 us put a sample into alpha at 3 us: 1013 -> 1008 + 5 = 1013, then 1008 at 4 us.
  EXPECT_EQ(rp.state().alpha_fx, 1008u);
  EXPECT_EQ(rp.rc_bps(), 50'782 * kMbps);
  rp.on_cnp(from_us(5));
  rp.on_cnp(from_us(6));
  rp.on_cnp(from_us(7));
  rp.advance(from_us(12));
  EXPECT_EQ(rp.counters().rate_decreases, 2u) << "three CNPs in (4, 8] make one cut, none at 12";
  EXPECT_EQ(rp.counters().cnp_coalesced, 3u);
}

TEST(ReactionPointMlx, PeriodicCheckWithoutCnpChangesNothing) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  rp.advance(from_us(4));
  const double rc = rp.rc_bps();
  EXPECT_EQ(rp.fire_next_timer(from_us(8)), RpAction::AlphaUpdate);
  for (int i = 0; i < 3; ++i) rp.fire_next_timer(from_us(8));
  EXPECT_EQ(rp.fire_next_timer(from_us(8)), RpAction::DecreaseCheckIdle);
  EXPECT_EQ(rp.rc_bps(), rc);
}

// dcqcn.md T3 negative test: under clamp_tgt_rate_ati with no increase since the last
// decrease, Rt stays at line rate after the second CNP (the paper profile gives Rt = 50).
TEST(ReactionPointMlx, T3ClampAtiKeepsTheTargetWithoutAnIncreaseInBetween) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  rp.advance(from_us(50));
  rp.on_cnp(from_us(50));
  rp.advance(from_us(52));
  EXPECT_EQ(rp.counters().rate_decreases, 2u);
  EXPECT_EQ(rp.rt_bps(), 100'000 * kMbps);
  EXPECT_LT(rp.rc_bps(), 51'026 * kMbps);
}

TEST(ReactionPointMlx, ClampAtiFollowsRcAfterATimerIncrease) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  rp.advance(from_us(304));  // cut at 4 us, then one timer increase (fast recovery)
  EXPECT_EQ(rp.counters().increases_fast_recovery, 1u);
  EXPECT_EQ(rp.rc_bps(), (51'026 + 100'000) / 2 * kMbps);
  rp.on_cnp(from_us(305));
  rp.advance(from_us(308));
  EXPECT_EQ(rp.rt_bps(), 75'513 * kMbps);
  EXPECT_EQ(rp.state().timer_stage, 0u);
}

TEST(ReactionPointMlx, ClampTgtRateAlwaysFollowsRc) {
  RpParams p = c2_params();
  p.mlx.clamp_tgt_rate = true;
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.advance(from_us(4));
  EXPECT_EQ(rp.rt_bps(), 100'000 * kMbps);
  rp.on_cnp(from_us(50));
  rp.advance(from_us(52));
  EXPECT_EQ(rp.rt_bps(), 51'026 * kMbps);
}

TEST(ReactionPointMlx, ByteCounterCountsInUnitsOf64Bytes) {
  ReactionPoint rp(c2_params());
  rp.on_cnp(0);
  rp.advance(from_us(4));
  rp.on_bytes_sent(from_us(5), 32767ull * 64 - 1);
  EXPECT_EQ(rp.counters().byte_counter_events, 0u);
  rp.on_bytes_sent(from_us(5), 1);
  EXPECT_EQ(rp.counters().byte_counter_events, 1u);
  // (T,BC) before the increment (0,0): fast recovery.
  EXPECT_EQ(rp.rc_bps(), (51'026 + 100'000) / 2 * kMbps);
}

TEST(ReactionPointMlx, IncreaseRuleCountsStagesBeforeTheIncrement) {
  RpParams p = c2_params();
  p.mlx.rpg_threshold = 1;
  p.mlx.release_at_max_rate = false;
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.advance(from_us(4));  // Rc 51026, Rt 100000
  rp.advance(from_us(304));  // T 0 -> 1: FR
  rp.advance(from_us(604));  // T 1 -> 2: max(1, 0) >= F: AI, Rt capped
  EXPECT_EQ(rp.counters().increases_fast_recovery, 1u);
  EXPECT_EQ(rp.counters().increases_additive, 1u);
  EXPECT_EQ(rp.rt_bps(), 100'000 * kMbps);
}

TEST(ReactionPointMlx, LimiterIsReleasedAtMaxRateAndTheNextCnpIsAFirstCnp) {
  RpParams p = c2_params();
  p.mlx.rpg_time_reset = from_us(10);
  ReactionPoint rp(p);
  rp.on_cnp(0);
  rp.advance(from_us(4));
  rp.advance(from_ms(1));
  EXPECT_FALSE(rp.cc_active());
  EXPECT_EQ(rp.counters().limiter_released, 1u);
  EXPECT_EQ(rp.next_deadline(), kNever);
  EXPECT_GE(rp.rc_bps(), 99'999 * kMbps);
  const std::uint64_t alpha_updates = rp.counters().alpha_updates;
  rp.advance(from_ms(2));
  EXPECT_EQ(rp.counters().alpha_updates, alpha_updates);
  rp.on_cnp(from_ms(2));
  EXPECT_EQ(rp.state().alpha_fx, 1023u);
  EXPECT_EQ(rp.rc_bps(), 100'000 * kMbps);
  EXPECT_EQ(rp.state().decrease_deadline, from_ms(2) + from_us(4));
}

TEST(ReactionPointMlx, RateToSetOnFirstCnp) {
  RpParams p = c2_params();
  p.mlx.rate_to_set_on_first_cnp_mbps = 85'000;
  p.mlx.cut_on_first_cnp = false;  // Isekai: the first CNP only sets the rate
  ReactionPoint rp(p);
  rp.on_cnp(0);
  EXPECT_EQ(rp.rc_bps(), 85'000 * kMbps);
  rp.advance(from_us(8));
  EXPECT_EQ(rp.counters().rate_decreases, 0u);
  EXPECT_EQ(rp.rc_bps(), 85'000 * kMbps);
}

}  // namespace
}  // namespace roce::cc::rp_mlx_test
