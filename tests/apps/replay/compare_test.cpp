// Holding output frames against expected ones: which fields count, per-flow order, the
// allowances (credits, ACK coalescing, timing) and the report a person reads.
#include "apps/replay/compare.hpp"

#include <gtest/gtest.h>

#include "apps/replay_goldens/wire.hpp"

namespace roce::replay::compare_test {
namespace {

using namespace roce::proto;
using goldens::Exchange;

constexpr Nanos kT0 = 1'700'000'000 * kSecond;

std::vector<Frame> frames(const std::vector<goldens::TimedFrame>& in) {
  std::vector<Frame> out;
  for (const auto& f : in) out.push_back(Frame{kT0 + f.at_ns, f.bytes, out.size() + 1});
  return out;
}

Comparison run(const Exchange& expected, const Exchange& got, CompareOptions o = {}) {
  return compare_frames(frames(expected.out()), frames(got.out()), o, Origins{kT0, kT0});
}

TEST(Compare, IdenticalFramesPass) {
  Exchange e;
  e.ack(0, 0x100, 1);
  e.read_responses(10, 0x101, 2, goldens::data(2500, 1));
  const Comparison c = run(e, e);
  EXPECT_TRUE(c.pass());
  EXPECT_EQ(c.expected_frames, 4u);
  EXPECT_NE(format_comparison(c, "g.pcap").find("PASS"), std::string::npos);
}

TEST(Compare, AnMsnDifferenceIsReportedWithBothValues) {
  Exchange e, g;
  e.ack(0, 0x100, 3);
  g.ack(0, 0x100, 4);
  const Comparison c = run(e, g);
  ASSERT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.shown[0].fields.size(), 1u);
  EXPECT_EQ(c.shown[0].fields[0].field, "aeth.msn");
  EXPECT_EQ(c.shown[0].fields[0].expected, "3");
  EXPECT_EQ(c.shown[0].fields[0].got, "4");
  const std::string report = format_comparison(c, "g.pcap");
  EXPECT_NE(report.find("FAIL: 1 difference"), std::string::npos) << report;
  EXPECT_NE(report.find("responses to QP 0x000077, #1"), std::string::npos) << report;
  EXPECT_NE(report.find("aeth.msn  3 / 4"), std::string::npos) << report;
}

TEST(Compare, EachComparedFieldIsNamed) {
  Exchange e, g;
  e.ack(0, 0x100, 1, Syndrome::nak(NakCode::PsnSequenceError));
  g.ack(0, 0x101, 1, Syndrome::nak(NakCode::RemoteAccessError));
  e.read_responses(10, 0x200, 2, goldens::data(100, 1));
  auto other = goldens::data(100, 1);
  other[42] = std::byte{0};
  g.read_responses(10, 0x200, 2, other);
  e.atomic_ack(20, 0x300, 3, 10);
  g.atomic_ack(20, 0x300, 3, 11);
  const Comparison c = run(e, g);
  ASSERT_EQ(c.mismatches, 3u);
  EXPECT_EQ(c.shown[0].fields[0].field, "bth.psn");
  EXPECT_EQ(c.shown[0].fields[1].field, "aeth.syndrome");
  EXPECT_EQ(c.shown[1].fields[0].field, "payload[42..]");
  EXPECT_EQ(c.shown[2].fields[0].field, "atomicacketh.original");
}

TEST(Compare, MissingAndExtraFramesAreReported) {
  Exchange e, g;
  e.ack(0, 0x100, 1);
  e.ack(10, 0x101, 2);
  g.ack(0, 0x100, 1);
  Comparison c = run(e, g);
  ASSERT_EQ(c.mismatches, 1u);
  EXPECT_NE(c.shown[0].what.find("missing from the output"), std::string::npos);
  c = run(g, e);
  ASSERT_EQ(c.mismatches, 1u);
  EXPECT_NE(c.shown[0].what.find("not expected"), std::string::npos);
}

TEST(Compare, OrderAcrossFlowsIsFreeButOrderWithinAFlowIsNot) {
  Exchange e, g;
  e.cnp(0);
  e.ack(0, 0x100, 1);
  g.ack(0, 0x100, 1);
  g.cnp(0);
  EXPECT_TRUE(run(e, g).pass());
  Exchange e2, g2;
  e2.ack(0, 0x100, 1);
  e2.ack(0, 0x101, 2);
  g2.ack(0, 0x101, 2);
  g2.ack(0, 0x100, 1);
  EXPECT_EQ(run(e2, g2).mismatches, 2u);
}

TEST(Compare, CreditCodesCountOnlyWhenAsked) {
  Exchange e, g;
  e.ack(0, 0x100, 1, Syndrome::ack(0x04));
  g.ack(0, 0x100, 1, Syndrome::ack(kCreditInvalid));
  CompareOptions o;
  EXPECT_FALSE(run(e, g, o).pass());
  o.credits = false;
  EXPECT_TRUE(run(e, g, o).pass());
  Exchange nak;
  nak.ack(0, 0x100, 1, Syndrome::nak(NakCode::PsnSequenceError));
  EXPECT_FALSE(run(e, nak, o).pass()) << "an ACK is never a NAK, credits or not";
}

TEST(Compare, AnAckCoveredByALaterOneMayBeAbsentWhenCoalescingIsAllowed) {
  Exchange e, g;
  e.ack(0, 0x100, 0);  // an ACK for a packet nobody asked about
  e.ack(10, 0x101, 1);
  g.ack(10, 0x101, 1);
  CompareOptions o;
  o.timing = false;
  EXPECT_FALSE(run(e, g, o).pass());
  o.coalesce_acks = true;
  const Comparison c = run(e, g, o);
  EXPECT_TRUE(c.pass());
  EXPECT_EQ(c.acks_passed_over, 1u);
  // Coalescing never excuses a missing final ACK.
  Exchange short_g;
  short_g.ack(0, 0x100, 0);
  EXPECT_FALSE(run(e, short_g, o).pass());
}

TEST(Compare, TimestampsCountToTheMicrosecondUnlessTimingIsOff) {
  Exchange e, g;
  e.ack(10, 0x100, 1);
  g.ack(10.9, 0x100, 1);
  CompareOptions o;
  EXPECT_TRUE(run(e, g, o).pass()) << "same microsecond";
  Exchange late;
  late.ack(11, 0x100, 1);
  const Comparison c = run(e, late, o);
  ASSERT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.shown[0].fields[0].field, "time");
  EXPECT_EQ(c.shown[0].fields[0].expected, "+10 us");
  EXPECT_EQ(c.shown[0].fields[0].got, "+11 us");
  o.timing = false;
  EXPECT_TRUE(run(e, late, o).pass());
}

TEST(Compare, NonRoceFramesAreCountedNotCompared) {
  Exchange e;
  e.ack(0, 0x100, 1);
  std::vector<Frame> got = frames(e.out());
  std::vector<std::byte> arp(60);
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  got.push_back(Frame{kT0, arp, 2});
  const Comparison c = compare_frames(frames(e.out()), got, {}, Origins{kT0, kT0});
  EXPECT_TRUE(c.pass());
  EXPECT_EQ(c.got_ignored, 1u);
}

TEST(Compare, ACorruptedIcrcIsAFieldDifference) {
  Exchange e;
  e.ack(0, 0x100, 1);
  std::vector<Frame> got = frames(e.out());
  got[0].bytes.back() ^= std::byte{0x10};
  const Comparison c = compare_frames(frames(e.out()), got, {}, Origins{kT0, kT0});
  ASSERT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.shown[0].fields.back().field, "icrc");
  EXPECT_EQ(c.shown[0].fields.back().got, "bad");
}

TEST(Compare, OnlyTheFirstMaxDiffsAreShownButAllAreCounted) {
  Exchange e, g;
  for (std::uint32_t i = 0; i < 20; ++i) {
    e.ack(i, 0x100 + i, i);
    g.ack(i, 0x100 + i, i + 1);
  }
  CompareOptions o;
  o.max_diffs = 4;
  const Comparison c = run(e, g, o);
  EXPECT_EQ(c.mismatches, 20u);
  EXPECT_EQ(c.shown.size(), 4u);
  EXPECT_NE(format_comparison(c, "g").find("the first 4 follow"), std::string::npos);
}

}  // namespace
}  // namespace roce::replay::compare_test
