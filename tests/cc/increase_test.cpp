#include <gtest/gtest.h>

#include "lib/cc/increase.hpp"
#include "tests/cc/rel_near.hpp"

namespace roce::cc::increase_test {
namespace {

using test::kGbps;
constexpr auto T = IncreaseSource::Timer;
constexpr auto B = IncreaseSource::ByteCounter;
constexpr auto FR = IncreaseKind::FastRecovery;
constexpr auto AI = IncreaseKind::Additive;
constexpr auto HAI = IncreaseKind::Hyper;

TEST(DecideIncrease, PaperRuleGivesFStepsOfFastRecoveryAndMultipliesHyper) {
  EXPECT_EQ(decide_increase(IncreaseRule::Paper, 5, 0, T, 5).kind, FR);
  EXPECT_EQ(decide_increase(IncreaseRule::Paper, 6, 0, T, 5).kind, AI);
  EXPECT_EQ(decide_increase(IncreaseRule::Paper, 0, 6, B, 5).kind, AI);
  EXPECT_EQ(decide_increase(IncreaseRule::Paper, 6, 5, B, 5).kind, AI);
  const auto h = decide_increase(IncreaseRule::Paper, 9, 7, T, 5);
  EXPECT_EQ(h.kind, HAI);
  EXPECT_EQ(h.hyper_steps, 2u);
}

TEST(DecideIncrease, IsekaiRuleLooksAtTheCountsBeforeTheIncrement) {
  EXPECT_EQ(decide_increase(IncreaseRule::IsekaiMlx, 1, 0, T, 1).kind, FR);   // before (0,0)
  EXPECT_EQ(decide_increase(IncreaseRule::IsekaiMlx, 2, 0, T, 1).kind, AI);   // before (1,0)
  EXPECT_EQ(decide_increase(IncreaseRule::IsekaiMlx, 2, 2, B, 1).kind, AI);   // before (2,1)
  const auto h = decide_increase(IncreaseRule::IsekaiMlx, 5, 3, B, 1);         // before (5,2)
  EXPECT_EQ(h.kind, HAI);
  EXPECT_EQ(h.hyper_steps, 1u);
}

TEST(DecideIncrease, HpccRuleIsFastRecoveryBelowFAdditiveAtFHyperAbove) {
  EXPECT_EQ(decide_increase(IncreaseRule::Hpcc, 1, 0, T, 1).kind, FR);
  EXPECT_EQ(decide_increase(IncreaseRule::Hpcc, 2, 0, T, 1).kind, AI);
  EXPECT_EQ(decide_increase(IncreaseRule::Hpcc, 3, 0, T, 1).kind, HAI);
  EXPECT_EQ(decide_increase(IncreaseRule::Hpcc, 9, 0, T, 1).hyper_steps, 1u);
}

TEST(ApplyIncrease, CapsTargetAndCurrentAtLineRate) {
  const Rates r = apply_increase({99 * kGbps, 100 * kGbps}, {HAI, 3}, 40e6, 200e6, 100 * kGbps);
  EXPECT_EQ(r.rt, 100 * kGbps);
  EXPECT_EQ(r.rc, 99.5 * kGbps);
  const Rates fr = apply_increase({25 * kGbps, 50 * kGbps}, {FR, 0}, 40e6, 200e6, 100 * kGbps);
  EXPECT_EQ(fr.rt, 50 * kGbps);
  EXPECT_EQ(fr.rc, 37.5 * kGbps);
}

TEST(ApplyIncrease, IntegerStepRoundsDown) {
  const RatesMbps r = apply_increase_mbps({51'025, 100'000}, {FR, 0}, 5, 50, 100'000);
  EXPECT_EQ(r.rc, 75'512u);
  const RatesMbps ai = apply_increase_mbps({50'000, 60'000}, {AI, 0}, 5, 50, 100'000);
  EXPECT_EQ(ai.rt, 60'005u);
  EXPECT_EQ(ai.rc, 55'002u);
}

TEST(IncreaseNames, EveryEnumHasAName) {
  EXPECT_EQ(to_string(IncreaseKind::Hyper), "hyper");
  EXPECT_EQ(to_string(IncreaseSource::ByteCounter), "byte_counter");
  EXPECT_EQ(to_string(IncreaseRule::Hpcc), "hpcc");
  EXPECT_EQ(to_string(Profile::Mlx), "mlx");
}

}  // namespace
}  // namespace roce::cc::increase_test
