// RC_SACK (protocol/sack.hpp): built, parsed back field by field, its ICRC checked, and refused
// in any other length.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/opcode_space.hpp"
#include "protocol/parser.hpp"
#include "protocol/sack.hpp"

namespace roce::proto::sack_test {
namespace {

FrameSpec sack_spec() {
  FrameSpec s;
  s.eth.dst = {2, 0, 0, 0, 0, 2};
  s.eth.src = {2, 0, 0, 0, 0, 1};
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.bth.dest_qp.set(0x123);
  s.bth.psn.set(0xFFFFF0);
  s.ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(77)};
  return s;
}

std::vector<std::byte> built(const SackBitmap& b) {
  std::vector<std::byte> f(256);
  const FrameLayout l = build_sack(sack_spec(), b, MutableByteSpan{f.data(), f.size()}, CrcBackend::Portable);
  EXPECT_TRUE(l.ok());
  f.resize(l.length);
  return f;
}

ParseError parse(std::span<const std::byte> f, Packet& p) {
  ParseOptions o;
  o.crc = CrcBackend::Portable;
  const ParseError e = parse_frame(f, o, p);
  return e == ParseError::UnknownOpcode ? parse_sack(f, o, p) : e;
}

TEST(Sack, RoundTripsAsAnAckWithItsBitmap) {
  SackBitmap b;
  b.set(0);
  b.set(63);
  b.set(64);
  b.set(kSackSpan - 1);
  const auto f = built(b);
  EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 4 + kSackExtBytes + 4);
  Packet p;
  ASSERT_EQ(parse(f, p), ParseError::None);
  EXPECT_TRUE(is_sack(p));
  EXPECT_EQ(p.bth.opcode, kSackOpcode);
  EXPECT_EQ(p.info->operation, Operation::Ack);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  EXPECT_EQ(p.psn(), 0xFFFFF0u);
  EXPECT_EQ(p.dest_qp(), 0x123u);
  EXPECT_EQ(p.ext.aeth.msn.get(), 77u);
  EXPECT_EQ(Syndrome{p.ext.aeth.syndrome}.type(), AckType::Ack);
  const SackBitmap back = sack_bitmap(p);
  EXPECT_EQ(back.words, b.words);
  EXPECT_TRUE(back.has(63) && back.has(64) && !back.has(1) && !back.has(kSackSpan));
}

TEST(Sack, AFlippedByteFailsTheIcrc) {
  SackBitmap b;
  b.set(5);
  auto f = built(b);
  f[f.size() - 8] ^= std::byte{1};
  Packet p;
  ASSERT_EQ(parse(f, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Bad);
}

TEST(Sack, AnyOtherLengthIsRefused) {
  auto f = built(SackBitmap{});
  // Cut the last bitmap word: IP and UDP lengths made to agree, so only the SACK's rule fails.
  f.erase(f.end() - 12, f.end() - 4);
  const auto be16 = [&](std::size_t at, std::uint16_t v) { store_header(MutableByteSpan{f.data(), f.size()}, at, Be16::of(v)); };
  be16(14 + 2, static_cast<std::uint16_t>(f.size() - 14));
  be16(14 + 20 + 4, static_cast<std::uint16_t>(f.size() - 34));
  be16(14 + 10, 0);
  Packet p;
  ParseOptions o;
  o.crc = CrcBackend::Portable;
  ASSERT_EQ(parse_frame(f, o, p), ParseError::UnknownOpcode);
  EXPECT_EQ(parse_sack(f, o, p), ParseError::ShortForOpcode);
}

TEST(Sack, CaptureToolsNameIt) {
  EXPECT_EQ(describe_opcode(kSackOpcode).name, "ROCEV2DP_RC_SACK");
  EXPECT_EQ(describe_opcode(kSackOpcode).kind, OpcodeKind::Vendor);
}

TEST(Sack, HighestIsTheLastPsnSet) {
  SackBitmap b;
  EXPECT_EQ(b.highest(), -1);
  for (const std::uint32_t i : {0u, 5u, 63u, 64u, 100u, 127u}) {
    b.set(i);
    EXPECT_EQ(b.highest(), static_cast<int>(i));
  }
  SackBitmap low;
  low.set(3);
  low.set(0);
  EXPECT_EQ(low.highest(), 3);
}

TEST(Sack, CountFromCountsTheBitsAtOrAfterIt) {
  SackBitmap b;
  EXPECT_EQ(b.count_from(0), 0u);
  for (const std::uint32_t i : {0u, 5u, 63u, 64u, 100u, 127u}) b.set(i);
  EXPECT_EQ(b.count_from(0), 6u);
  EXPECT_EQ(b.count_from(1), 5u);
  EXPECT_EQ(b.count_from(63), 4u);
  EXPECT_EQ(b.count_from(64), 3u);
  EXPECT_EQ(b.count_from(65), 2u);
  EXPECT_EQ(b.count_from(127), 1u);
  EXPECT_EQ(b.count_from(128), 0u);
  EXPECT_EQ(b.count_from(1000), 0u);
}

}  // namespace
}  // namespace roce::proto::sack_test
