// Profile `hpcc` against dcqcn.md C1: run.py --cc dcqcn at 100G (t_alpha 1, t_dec 4,
// t_inc 300 us, g 1/256, F 1, AI 20 Mb/s, HAI 200 Mb/s, MinRate 1 Gb/s), one CNP at t = 0.
#include <gtest/gtest.h>

#include <cmath>

#include "lib/cc/reaction_point.hpp"
#include "tests/cc/rel_near.hpp"

namespace roce::cc::rp_hpcc_test {
namespace {

using test::kGbps;

TEST(ReactionPointHpcc, C1DefaultsAreRunPyDcqcnAt100G) {
  const RpParams p = hpcc_params(100 * kGbps);
  EXPECT_EQ(p.hpcc.rai_bps, 20e6);
  EXPECT_EQ(p.hpcc.rhai_bps, 200e6);
  EXPECT_EQ(p.min_rate_bps, 1 * kGbps);
  EXPECT_EQ(p.hpcc.fast_recovery_times, 1u);
}

TEST(ReactionPointHpcc, C1FirstCutAfterFourAlphaDecaysThenFrAiHaiHai) {
  ReactionPoint rp(hpcc_params(100 * kGbps));
  rp.on_cnp(0);
  rp.advance(from_us(4));
  EXPECT_REL(rp.alpha(), 0.9844663145486265);
  EXPECT_EQ(rp.rc_bps(), 100 * kGbps) << "the check is 1 ns after the alpha update";
  rp.advance(from_us(4) + 1);
  EXPECT_EQ(rp.rt_bps(), 100 * kGbps) << "stage 0 and no clamp: Rt stays";
  EXPECT_REL(rp.rc_bps(), 50.77668427256867 * kGbps);
  EXPECT_EQ(rp.state().increase_deadline, from_us(304) + 1);
  const double rc[] = {75.38834213628434, 87.69417106814217, 93.84708553407108, 96.92354276703554};
  for (int k = 0; k < 4; ++k) {
    rp.advance(from_us(304 + 300 * k));
    EXPECT_REL(rp.rc_bps(), (k == 0 ? 50.77668427256867 : rc[k - 1]) * kGbps) << "just before " << 304 + 300 * k;
    rp.advance(from_us(304 + 300 * k) + 1);
    EXPECT_REL(rp.rc_bps(), rc[k] * kGbps) << "at " << 304 + 300 * k << " us + 1 ns";
    EXPECT_EQ(rp.rt_bps(), 100 * kGbps);
  }
  EXPECT_EQ(rp.counters().increases_fast_recovery, 1u);
  EXPECT_EQ(rp.counters().increases_additive, 1u);
  EXPECT_EQ(rp.counters().increases_hyper, 2u);
  EXPECT_EQ(rp.counters().rate_decreases, 1u);
  EXPECT_REL(rp.alpha(), std::pow(255.0 / 256.0, 1204));
}

TEST(ReactionPointHpcc, LaterCnpsSetBothFlagsAndCutAtTheNextCheck) {
  ReactionPoint rp(hpcc_params(100 * kGbps));
  rp.on_cnp(0);
  rp.advance(from_us(4) + 1);
  const double rc = rp.rc_bps();
  rp.on_cnp(from_us(5));
  rp.on_cnp(from_us(6));
  EXPECT_EQ(rp.counters().cnp_coalesced, 1u);
  rp.advance(from_us(6));  // alpha at 6 us takes the CNP sample
  const double a = rp.alpha();
  rp.advance(from_us(8) + 1);
  EXPECT_EQ(rp.counters().rate_decreases, 2u);
  EXPECT_LT(a, 1.0);
  EXPECT_EQ(rp.rt_bps(), 100 * kGbps);
  EXPECT_LT(rp.rc_bps(), rc);
}

TEST(ReactionPointHpcc, ZeroOffsetPutsTheFirstCheckOnTheAlphaDeadline) {
  RpParams p = hpcc_params(100 * kGbps);
  p.hpcc.first_check_offset = 0;
  ReactionPoint rp(p);
  rp.on_cnp(0);
  EXPECT_EQ(rp.state().decrease_deadline, from_us(4));
  rp.advance(from_us(4));
  EXPECT_REL(rp.rc_bps(), 50.77668427256867 * kGbps) << "alpha first at the tie, as with the offset";
}

TEST(ReactionPointHpcc, NoByteCounter) {
  ReactionPoint rp(hpcc_params(100 * kGbps));
  rp.on_cnp(0);
  rp.advance(from_us(4) + 1);
  rp.on_bytes_sent(from_us(5), 1'000'000'000);
  EXPECT_EQ(rp.counters().byte_counter_events, 0u);
}

}  // namespace
}  // namespace roce::cc::rp_hpcc_test
