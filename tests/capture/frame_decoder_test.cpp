#include "capture/frame_decoder.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "protocol/builder.hpp"
#include "tests/support/vendor_frames.hpp"

namespace roce::capture::frame_decoder_test {
namespace {

using proto::ParseError;

std::vector<std::byte> write_only_frame(bool with_ethernet, proto::IpVersion v = proto::IpVersion::V4) {
  proto::FrameSpec s;
  s.with_ethernet = with_ethernet;
  s.ip_version = v;
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.ipv6.src[15] = 1;
  s.ipv6.dst[15] = 2;
  s.bth.opcode = proto::raw(proto::Opcode::RcWriteOnly);
  s.bth.dest_qp.set(0x000123);
  s.bth.psn.set(0x00ABCD);
  s.ext.reth.dma_length.set(18);
  const std::vector<std::byte> payload(18, std::byte{0x5A});
  std::vector<std::byte> out(proto::layout_frame(s, 18).length);
  EXPECT_TRUE(proto::build_frame(s, payload, out, proto::CrcBackend::Isal).ok());
  return out;
}

template <typename H>
std::vector<std::byte> with_link_header(const H& h, const std::vector<std::byte>& rest) {
  std::vector<std::byte> f(sizeof h);
  std::memcpy(f.data(), &h, sizeof h);
  f.insert(f.end(), rest.begin(), rest.end());
  return f;
}

SllHeader sll(std::uint16_t protocol) {
  SllHeader h{};
  h.arphrd_type.set(1);  // ARPHRD_ETHER
  h.addr_length.set(6);
  h.protocol.set(protocol);
  return h;
}

Sll2Header sll2(std::uint16_t protocol) {
  Sll2Header h{};
  h.protocol.set(protocol);
  h.if_index.set(2);
  h.arphrd_type.set(1);
  h.addr_length = 6;
  return h;
}

void expect_same_roce_packet(const DecodedFrame& f) {
  ASSERT_EQ(f.error, ParseError::None) << to_string(f.error);
  EXPECT_EQ(f.verdict, Verdict::Roce);
  EXPECT_EQ(f.packet.opcode(), proto::raw(proto::Opcode::RcWriteOnly));
  EXPECT_EQ(f.packet.dest_qp(), 0x123u);
  EXPECT_EQ(f.packet.psn(), 0xABCDu);
  EXPECT_EQ(f.packet.payload_length, 18u);
  EXPECT_EQ(f.packet.icrc_status, proto::IcrcStatus::Ok);
}

TEST(FrameDecoder, EthernetFrameIsRoce) {
  DecodedFrame f;
  decode_frame(LinkType::Ethernet, write_only_frame(true), {}, f);
  expect_same_roce_packet(f);
  EXPECT_EQ(f.ip_offset, 14u);
}

TEST(FrameDecoder, LinuxCookedSllCarriesTheIpDatagramAfter16Bytes) {
  DecodedFrame f;
  decode_frame(LinkType::LinuxSll, with_link_header(sll(proto::kEtherTypeIpv4), write_only_frame(false)), {}, f);
  expect_same_roce_packet(f);
  EXPECT_EQ(f.ip_offset, 16u);
  EXPECT_FALSE(f.packet.has_l2);
}

TEST(FrameDecoder, LinuxCookedSll2CarriesTheIpDatagramAfter20Bytes) {
  DecodedFrame f;
  decode_frame(LinkType::LinuxSll2, with_link_header(sll2(proto::kEtherTypeIpv4), write_only_frame(false)), {}, f);
  expect_same_roce_packet(f);
  EXPECT_EQ(f.ip_offset, 20u);
}

TEST(FrameDecoder, SllWithIpv6AndAVlanTagStillDecodes) {
  std::vector<std::byte> tagged{std::byte{0x00}, std::byte{0x05}, std::byte{0x86}, std::byte{0xDD}};  // VID 5, IPv6
  const auto ip = write_only_frame(false, proto::IpVersion::V6);
  tagged.insert(tagged.end(), ip.begin(), ip.end());
  DecodedFrame f;
  decode_frame(LinkType::LinuxSll, with_link_header(sll(proto::kEtherTypeVlan), tagged), {}, f);
  expect_same_roce_packet(f);
  EXPECT_EQ(f.ip_offset, 20u);
  EXPECT_EQ(f.packet.ip_version, proto::IpVersion::V6);
}

TEST(FrameDecoder, RawIpStartsAtTheIpHeader) {
  DecodedFrame f;
  decode_frame(LinkType::RawIp, write_only_frame(false), {}, f);
  expect_same_roce_packet(f);
  EXPECT_EQ(f.ip_offset, 0u);
}

TEST(FrameDecoder, CookedArpIsNotRoceAndCookedRoceV1IsRoceV1) {
  const std::vector<std::byte> body(28);
  DecodedFrame f;
  decode_frame(LinkType::LinuxSll, with_link_header(sll(proto::kEtherTypeArp), body), {}, f);
  EXPECT_EQ(f.verdict, Verdict::NotRoce);
  EXPECT_EQ(f.error, ParseError::NotIp);
  decode_frame(LinkType::LinuxSll2, with_link_header(sll2(proto::kEtherTypeRoceV1), body), {}, f);
  EXPECT_EQ(f.verdict, Verdict::RoceV1);
}

TEST(FrameDecoder, RecordShorterThanTheCookedHeaderIsMalformedTruncated) {
  const std::vector<std::byte> short_record(15);
  DecodedFrame f;
  decode_frame(LinkType::LinuxSll, short_record, {}, f);
  EXPECT_EQ(f.error, ParseError::Truncated);
  EXPECT_EQ(f.verdict, Verdict::Malformed);
  decode_frame(LinkType::LinuxSll2, std::span{short_record}.first(0), {}, f);
  EXPECT_EQ(f.verdict, Verdict::Malformed);
}

TEST(FrameDecoder, DecodingAgainResetsThePreviousFrame) {
  DecodedFrame f;
  decode_frame(LinkType::Ethernet, write_only_frame(true), {}, f);
  ASSERT_EQ(f.verdict, Verdict::Roce);
  decode_frame(LinkType::RawIp, std::vector<std::byte>(3), {}, f);
  EXPECT_NE(f.verdict, Verdict::Roce);
  EXPECT_EQ(f.packet.info, nullptr);
  EXPECT_EQ(f.ip_offset, 0u);
}

TEST(FrameDecoder, OnlyOtherTrafficReasonsAreNotRoce) {
  const std::set<ParseError> other{ParseError::NotIp, ParseError::NotUdp, ParseError::NotRoceV2Port,
                                   ParseError::IpFragment};
  for (int i = 0; i < static_cast<int>(ParseError::Count); ++i) {
    const auto e = static_cast<ParseError>(i);
    SCOPED_TRACE(proto::to_string(e));
    if (e == ParseError::None) EXPECT_EQ(verdict_of(e), Verdict::Roce);
    else if (e == ParseError::RoceV1) EXPECT_EQ(verdict_of(e), Verdict::RoceV1);
    else if (other.count(e)) EXPECT_EQ(verdict_of(e), Verdict::NotRoce);
    else EXPECT_EQ(verdict_of(e), Verdict::Malformed);
  }
}

TEST(FrameDecoder, UnknownOpcodeIsMalformedButItsBthIsDecoded) {
  auto frame = write_only_frame(true);
  frame[42] = std::byte{0x46};  // an RD opcode (Mellanox DC traffic) that the table does not define
  DecodedFrame f;
  decode_frame(LinkType::Ethernet, frame, {}, f);
  EXPECT_EQ(f.error, ParseError::UnknownOpcode);
  EXPECT_EQ(f.verdict, Verdict::Malformed);
  ASSERT_TRUE(bth_decoded(f.error));
  EXPECT_EQ(f.packet.opcode(), 0x46);
  EXPECT_EQ(f.packet.dest_qp(), 0x123u);
  EXPECT_FALSE(bth_decoded(ParseError::NotRoceV2Port));
  EXPECT_FALSE(bth_decoded(ParseError::LengthMismatch));
}

TEST(FrameDecoder, DecodeAllGoesOnIntoDcFramesWhereTheEnginesParserStops) {
  test::VendorFrameSpec s;
  s.opcode = 0x4A;
  s.ext.reth.dma_length.set(4);
  s.payload.assign(4, std::byte{1});
  const auto frame = test::dc_frame(s);
  DecodedFrame f;
  decode_frame(LinkType::Ethernet, frame, {}, f);
  EXPECT_EQ(f.verdict, Verdict::Malformed);
  decode_frame_all(LinkType::Ethernet, frame, {}, f);
  EXPECT_EQ(f.verdict, Verdict::Dc);
  EXPECT_EQ(f.error, ParseError::None);
  EXPECT_TRUE(f.dc_decoded);
  EXPECT_EQ(f.dc.dct_eth, s.dct_eth);
  EXPECT_EQ(f.packet.icrc_status, proto::IcrcStatus::Ok);
  // The same datagram behind a Linux cooked header.
  const std::vector<std::byte> ip(frame.begin() + 14, frame.end());
  decode_frame_all(LinkType::LinuxSll, with_link_header(sll(proto::kEtherTypeIpv4), ip), {}, f);
  EXPECT_EQ(f.verdict, Verdict::Dc);
  EXPECT_EQ(f.packet.icrc_status, proto::IcrcStatus::Ok);
}

TEST(FrameDecoder, DecodeAllDecodesRoceV1OnEthernetAndCookedLinks) {
  test::VendorFrameSpec s;
  s.opcode = proto::raw(proto::Opcode::RcSendOnly);
  s.payload.assign(10, std::byte{2});
  const auto frame = test::rocev1_frame(s);
  DecodedFrame f;
  decode_frame_all(LinkType::Ethernet, frame, {}, f);
  EXPECT_EQ(f.verdict, Verdict::RoceV1);
  EXPECT_EQ(f.error, ParseError::None);
  EXPECT_TRUE(f.rocev1_decoded);
  EXPECT_EQ(f.packet.payload_length, 10u);
  EXPECT_EQ(f.packet.icrc_status, proto::IcrcStatus::Ok);
  const std::vector<std::byte> grh(frame.begin() + 14, frame.end());
  decode_frame_all(LinkType::LinuxSll2, with_link_header(sll2(proto::kEtherTypeRoceV1), grh), {}, f);
  EXPECT_EQ(f.verdict, Verdict::RoceV1);
  EXPECT_EQ(f.packet.icrc_status, proto::IcrcStatus::Ok);
  EXPECT_EQ(f.ip_offset, 20u);
}

TEST(FrameDecoder, SaysWhichHeadersWereReadBeforeTheParserStopped) {
  DecodedFrame f;
  auto frame = write_only_frame(true);
  frame[14 + 9] = std::byte{6};  // TCP
  decode_frame(LinkType::Ethernet, frame, {}, f);
  EXPECT_EQ(f.error, ParseError::NotUdp);
  EXPECT_TRUE(f.ip_read);
  EXPECT_FALSE(f.udp_read);
  decode_frame(LinkType::Ethernet, write_only_frame(true), {}, f);
  EXPECT_TRUE(f.ip_read && f.udp_read);
  decode_frame(LinkType::Ethernet, std::span{frame}.first(20), {}, f);
  EXPECT_FALSE(f.ip_read);
}

TEST(FrameDecoder, VerdictsAndLinkTypesHaveDistinctNames) {
  std::set<std::string> names;
  for (auto v : {Verdict::Roce, Verdict::RoceV1, Verdict::NotRoce, Verdict::Malformed, Verdict::Dc}) names.insert(to_string(v));
  EXPECT_EQ(names.size(), 5u);
  names.clear();
  for (auto l : {LinkType::Ethernet, LinkType::LinuxSll, LinkType::LinuxSll2, LinkType::RawIp})
    names.insert(to_string(l));
  EXPECT_EQ(names.size(), 4u);
}

}  // namespace
}  // namespace roce::capture::frame_decoder_test
