#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/mtu.hpp"
#include "protocol/psn.hpp"

namespace roce::proto::psn_test {
namespace {

// Exhaustive over a window around every boundary of the 24-bit space.
TEST(Psn, ArithmeticIsModulo2To24AroundEveryBoundary) {
  for (std::uint32_t base : {0u, 1u, 0x7FFFFFu, 0x800000u, 0xFFFFFEu, 0xFFFFFFu}) {
    for (std::int32_t d = -4096; d <= 4096; ++d) {
      const std::uint32_t a = psn_add(base, d);
      ASSERT_LE(a, kPsnMask);
      ASSERT_EQ(psn_diff(a, base), d) << base << " " << d;
      ASSERT_EQ(psn_after(a, base), d > 0);
      ASSERT_EQ(psn_before(a, base), d < 0);
      ASSERT_EQ(psn_add(a, -d), base);
    }
  }
}

TEST(Psn, HalfWindowSplitsAheadAndBehind) {
  EXPECT_EQ(psn_diff(0x7FFFFF, 0), 0x7FFFFF);
  EXPECT_EQ(psn_diff(0x800000, 0), -0x800000);
  EXPECT_TRUE(psn_after(0, 0xFFFFFF));
  EXPECT_EQ(psn_next(0xFFFFFF), 0u);
}

TEST(Syndrome, EveryCodeRoundTrips) {
  for (unsigned raw = 0; raw < 128; ++raw) {
    const Syndrome s{static_cast<std::uint8_t>(raw)};
    const auto v = s.value();
    switch (s.type()) {
      case AckType::Ack: EXPECT_EQ(Syndrome::ack(v), s); break;
      case AckType::RnrNak:
        EXPECT_EQ(Syndrome::rnr_nak(v), s);
        EXPECT_EQ(s.rnr_wait_ns(), kRnrTimerNs[v]);
        break;
      case AckType::Nak: EXPECT_EQ(Syndrome::nak(static_cast<NakCode>(v)), s); break;
      case AckType::Reserved: break;
    }
    EXPECT_FALSE(to_string(s).empty());
  }
}

TEST(Syndrome, CreditAndRnrTablesMatchTheSpec) {
  EXPECT_EQ(*Syndrome::ack(0).credits(), 0u);
  EXPECT_EQ(*Syndrome::ack(0x0D).credits(), 96u);
  EXPECT_EQ(*Syndrome::ack(0x1E).credits(), 32768u);
  EXPECT_FALSE(Syndrome::ack(0x1F).credits());
  EXPECT_EQ(Syndrome::rnr_nak(0).rnr_wait_ns(), 655'360'000u);
  EXPECT_EQ(Syndrome::rnr_nak(1).rnr_wait_ns(), 10'000u);
  EXPECT_EQ(Syndrome::rnr_nak(12).rnr_wait_ns(), 640'000u);
  EXPECT_EQ(Syndrome::rnr_nak(25).rnr_wait_ns(), 61'440'000u);  // rxe's table says 61410 us
  EXPECT_EQ(Syndrome::rnr_nak(31).rnr_wait_ns(), 491'520'000u);
  for (std::size_t i = 1; i < kCreditTable.size(); ++i) EXPECT_LT(kCreditTable[i - 1], kCreditTable[i]);
  EXPECT_EQ(credit_code_for(100), 0x0D);
  EXPECT_EQ(Syndrome::nak(NakCode::RemoteAccessError).raw, 0x62);
}

TEST(Mtu, EnumAndBytes) {
  EXPECT_EQ(mtu_bytes(PathMtu::Mtu256), 256u);
  EXPECT_EQ(mtu_from_bytes(2048), PathMtu::Mtu2048);
  EXPECT_FALSE(mtu_from_bytes(1500));
  EXPECT_FALSE(mtu_from_enum(0));
  EXPECT_FALSE(mtu_from_enum(6));
  EXPECT_EQ(mtu_for_ethernet(9000), PathMtu::Mtu4096);
  EXPECT_EQ(mtu_for_ethernet(1100), PathMtu::Mtu512);
}

}  // namespace
}  // namespace roce::proto::psn_test
