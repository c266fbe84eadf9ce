#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::parser_test {
namespace {

using test::from_hex;

// rxe RC ACK and READ_REQUEST frames (../shared/spec/rocev2-wire.md section 8).
const auto kRxeAck = from_hex(
    "5254000aaaba525400bf43690800 450000305ece40004011d894c0a84104c0a84105"
    "df9412b7001c0000 1100ffff00000011008c84dd 1f000001 b30cc2c0");
const auto kRxeReadRequest = from_hex(
    "525400bf43695254000aaaba0800 4500003cdba5400040115bb1c0a84105c0a84104"
    "df9412b700280000 0c00ffff00000011808c84de 0000aaab09dd5000 000002d5 00001000 a0f6dbbd");

TEST(Parser, DecodesRxeAck) {
  Packet p;
  ASSERT_EQ(parse_frame(kRxeAck, {}, p), ParseError::None);
  EXPECT_EQ(p.opcode(), raw(Opcode::RcAck));
  EXPECT_EQ(p.dest_qp(), 0x11u);
  EXPECT_EQ(p.psn(), 0x8C84DDu);
  EXPECT_EQ(p.udp_src_port, 0xDF94);
  EXPECT_EQ(Syndrome{p.ext.aeth.syndrome}.credits(), std::nullopt);
  EXPECT_EQ(p.ext.aeth.msn.get(), 1u);
  EXPECT_EQ(p.payload_length, 0u);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  EXPECT_TRUE(p.ipv4_checksum_ok);
  EXPECT_EQ(p.l3_offset, 14u);
  EXPECT_EQ(p.bth_offset, 42u);
}

TEST(Parser, DecodesRxeReadRequestReth) {
  Packet p;
  ASSERT_EQ(parse_frame(kRxeReadRequest, {}, p), ParseError::None);
  EXPECT_EQ(p.opcode(), raw(Opcode::RcReadRequest));
  EXPECT_TRUE(p.bth.ack_requested());
  EXPECT_EQ(p.ext.reth.va.get(), 0x0000aaab09dd5000ull);
  EXPECT_EQ(p.ext.reth.rkey.get(), 0x2d5u);
  EXPECT_EQ(p.ext.reth.dma_length.get(), 4096u);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(Parser, FlippedPayloadBitIsBadIcrcNotAParseError) {
  auto f = kRxeReadRequest;
  f[60] ^= std::byte{0x01};
  Packet p;
  ASSERT_EQ(parse_frame(f, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Bad);
}

TEST(Parser, NeverReadsPastTheSpanAtAnyTruncation) {
  for (std::size_t n = 0; n < kRxeReadRequest.size(); ++n) {
    // A heap copy of exactly n bytes, so ASan flags any read beyond it.
    std::vector<std::byte> cut(kRxeReadRequest.begin(), kRxeReadRequest.begin() + static_cast<long>(n));
    cut.shrink_to_fit();
    Packet p;
    EXPECT_EQ(parse_frame(cut, {}, p), ParseError::Truncated) << "length " << n;
  }
}

TEST(Parser, SnapTruncatedRecordKeepsHeadersAndMarksIcrcNotCheckable) {
  const std::vector<std::byte> cut(kRxeReadRequest.begin(), kRxeReadRequest.end() - 2);
  Packet p;
  ParseOptions o;
  o.allow_snap_truncation = true;
  ASSERT_EQ(parse_frame(cut, o, p), ParseError::None);
  EXPECT_TRUE(p.snap_truncated);
  EXPECT_EQ(p.icrc_status, IcrcStatus::NotCheckable);
  EXPECT_EQ(p.ext.reth.rkey.get(), 0x2d5u);
}

TEST(Parser, EthernetPaddingAfterTheDatagramIsIgnored) {
  auto f = kRxeAck;
  f.resize(70, std::byte{0xAA});
  Packet p;
  ASSERT_EQ(parse_frame(f, {}, p), ParseError::None);
  EXPECT_EQ(p.datagram_end, kRxeAck.size());
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(Parser, RoceV1EtherTypeIsClassifiedAsRoceV1) {
  auto f = kRxeAck;
  f[12] = std::byte{0x89};
  f[13] = std::byte{0x15};
  Packet p;
  EXPECT_EQ(parse_frame(f, {}, p), ParseError::RoceV1);
}

TEST(Parser, ReasonCodes) {
  Packet p;
  auto arp = kRxeAck;
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  EXPECT_EQ(parse_frame(arp, {}, p), ParseError::NotIp);

  auto bad_version = kRxeAck;
  bad_version[14] = std::byte{0x55};
  EXPECT_EQ(parse_frame(bad_version, {}, p), ParseError::BadIpHeader);

  auto tcp = kRxeAck;
  tcp[14 + 9] = std::byte{6};
  EXPECT_EQ(parse_frame(tcp, {}, p), ParseError::NotUdp);

  auto frag = kRxeAck;
  frag[14 + 6] = std::byte{0x20};  // MF
  EXPECT_EQ(parse_frame(frag, {}, p), ParseError::IpFragment);

  auto port = kRxeAck;
  port[14 + 20 + 3] = std::byte{0xB8};
  EXPECT_EQ(parse_frame(port, {}, p), ParseError::NotRoceV2Port);

  auto udp_len = kRxeAck;
  udp_len[14 + 20 + 5] = std::byte{0x20};
  EXPECT_EQ(parse_frame(udp_len, {}, p), ParseError::LengthMismatch);

  auto tver = kRxeAck;
  tver[43] = std::byte{0x01};
  EXPECT_EQ(parse_frame(tver, {}, p), ParseError::BadTver);

  auto unknown = kRxeAck;
  unknown[42] = std::byte{0x15};  // reserved (RD RESYNC)
  EXPECT_EQ(parse_frame(unknown, {}, p), ParseError::UnknownOpcode);
  unknown[42] = std::byte{0x41};  // RD: not supported
  EXPECT_EQ(parse_frame(unknown, {}, p), ParseError::UnknownOpcode);

  auto pad = kRxeAck;
  pad[43] = std::byte{0x10};  // PadCnt 1 on an ACK
  EXPECT_EQ(parse_frame(pad, {}, p), ParseError::PadCntInconsistent);
}

// IPv6 (issue 27): an IPv6 RoCEv2 frame's header gets the same refusals as an IPv4 one's.
TEST(Parser, Ipv6ReasonCodes) {
  FrameSpec s;
  s.ip_version = IpVersion::V6;
  s.ipv6.src = Ipv6Addr{0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  s.ipv6.dst = Ipv6Addr{0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
  s.bth.opcode = raw(Opcode::RcSendOnly);
  const std::vector<std::byte> payload(64, std::byte{0x5A});
  std::vector<std::byte> good(256);
  const auto l = build_frame(s, payload, good, CrcBackend::Isal);
  ASSERT_TRUE(l.ok()) << to_string(l.error);
  good.resize(l.length);
  Packet p;
  ASSERT_EQ(parse_frame(good, {}, p), ParseError::None);
  EXPECT_EQ(p.ip_version, IpVersion::V6);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);

  constexpr std::size_t l3 = 14, l4 = l3 + 40;
  auto bad_version = good;
  bad_version[l3] = std::byte{0x45};  // an IPv4 version nibble behind the IPv6 EtherType
  EXPECT_EQ(parse_frame(bad_version, {}, p), ParseError::BadIpHeader);
  for (std::uint8_t next : {0 /* hop-by-hop options */, 43 /* routing */, 44 /* fragment */, 6 /* TCP */}) {
    auto other = good;
    other[l3 + 6] = std::byte{next};
    EXPECT_EQ(parse_frame(other, {}, p), ParseError::NotUdp) << "next header " << int{next};
  }
  for (int delta : {-8, 8}) {  // payload length disagreeing with the UDP length
    auto len = good;
    const std::uint16_t v = static_cast<std::uint16_t>(std::to_integer<int>(len[l3 + 4]) << 8 | std::to_integer<int>(len[l3 + 5]));
    const std::uint16_t w = static_cast<std::uint16_t>(v + delta);
    len[l3 + 4] = std::byte{static_cast<std::uint8_t>(w >> 8)};
    len[l3 + 5] = std::byte{static_cast<std::uint8_t>(w & 0xFF)};
    EXPECT_EQ(parse_frame(len, {}, p), ParseError::LengthMismatch) << "payload length " << w;
  }
  // Cut at every header boundary: inside the IPv6 header, the UDP header, the BTH.
  for (std::size_t n : {l3 + 20, l4, l4 + 4, l4 + 8, l4 + 8 + 6})
    EXPECT_EQ(parse_frame(std::span(good).first(n), {}, p), ParseError::Truncated) << n << " bytes";
  // The ICRC covers the IPv6 header's unmasked fields and the payload.
  auto flipped = good;
  flipped[l4 + 8 + 12 + 3] ^= std::byte{0x01};
  ASSERT_EQ(parse_frame(flipped, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Bad);
  auto src = good;
  src[l3 + 8 + 15] ^= std::byte{0x01};  // the source address is not masked
  ASSERT_EQ(parse_frame(src, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Bad);
  auto hop = good;
  hop[l3 + 7] = std::byte{1};  // the hop limit is
  ASSERT_EQ(parse_frame(hop, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

std::vector<std::byte> build(Opcode op, std::uint32_t payload_len) {
  FrameSpec s;
  s.bth.opcode = raw(op);
  s.validate = false;
  std::vector<std::byte> payload(payload_len, std::byte{0x5A});
  std::vector<std::byte> out(payload_len + 128);
  const auto l = build_frame(s, payload, out, CrcBackend::Isal);
  EXPECT_TRUE(l.ok()) << to_string(l.error);
  out.resize(l.length);
  return out;
}

TEST(Parser, PayloadRulesFollowTheOpcodeTable) {
  Packet p;
  ParseOptions mtu1024;
  mtu1024.pmtu = 1024;
  EXPECT_EQ(parse_frame(build(Opcode::RcWriteMiddle, 1024), mtu1024, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcWriteMiddle, 1020), mtu1024, p), ParseError::PayloadLengthInvalid);
  EXPECT_EQ(parse_frame(build(Opcode::RcWriteMiddle, 2048), mtu1024, p), ParseError::PayloadAbovePmtu);
  EXPECT_EQ(parse_frame(build(Opcode::RcSendLast, 0), mtu1024, p), ParseError::PayloadLengthInvalid);
  EXPECT_EQ(parse_frame(build(Opcode::RcSendOnly, 0), mtu1024, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcSendOnly, 1025), mtu1024, p), ParseError::PayloadAbovePmtu);
  EXPECT_EQ(parse_frame(build(Opcode::RcAck, 4), mtu1024, p), ParseError::PayloadNotAllowed);
  EXPECT_EQ(parse_frame(build(Opcode::RcAtomicWrite, 8), mtu1024, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcAtomicWrite, 4), mtu1024, p), ParseError::PayloadLengthInvalid);
  // Without a known path MTU, FIRST/MIDDLE must carry one of the IBA sizes.
  EXPECT_EQ(parse_frame(build(Opcode::RcSendFirst, 4096), {}, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcSendFirst, 1000), {}, p), ParseError::PayloadLengthInvalid);
  EXPECT_EQ(parse_frame(build(Opcode::RcSendOnly, 4100), {}, p), ParseError::PayloadAbovePmtu);
  // Without the MTU rules (a receiver that knows the path MTU checks them), only the largest
  // MTU and the opcodes without payload remain.
  ParseOptions receiver;
  receiver.mtu_rules = false;
  EXPECT_EQ(parse_frame(build(Opcode::RcSendFirst, 1000), receiver, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcWriteMiddle, 100), receiver, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcSendLast, 0), receiver, p), ParseError::None);
  EXPECT_EQ(parse_frame(build(Opcode::RcWriteFirst, 4100), receiver, p), ParseError::PayloadAbovePmtu);
  EXPECT_EQ(parse_frame(build(Opcode::RcReadRequest, 8), receiver, p), ParseError::PayloadNotAllowed);
}

TEST(Parser, ADatagramShorterThanItsOpcodesHeadersIsShortForOpcode) {
  Packet p;
  const auto atomic = build(Opcode::RcFetchAdd, 0);
  ASSERT_EQ(parse_frame(atomic, {}, p), ParseError::None);
  EXPECT_EQ(parse_frame(test::frame_edit::with_tail(atomic, -8), {}, p), ParseError::ShortForOpcode);
  EXPECT_EQ(parse_frame(test::frame_edit::with_tail(atomic, 8), {}, p), ParseError::PayloadNotAllowed);
  // A zero-length WRITE with immediate that left its ImmDt out.
  const auto write_imm = test::frame_edit::with_opcode(build(Opcode::RcWriteOnly, 0), Opcode::RcWriteOnlyImm);
  EXPECT_EQ(parse_frame(write_imm, {}, p), ParseError::ShortForOpcode);
  // A frame cut short (the IP length says more) is still truncated.
  auto cut = atomic;
  cut.resize(cut.size() - 8);
  EXPECT_EQ(parse_frame(cut, {}, p), ParseError::Truncated);
}

TEST(Parser, ParseIpStartsAtTheIpHeader) {
  Packet p;
  ASSERT_EQ(parse_ip(std::span{kRxeAck}.subspan(14), {}, p), ParseError::None);
  EXPECT_FALSE(p.has_l2);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(Parser, VlanTaggedFrameParses) {
  FrameSpec s;
  s.bth.opcode = raw(Opcode::RcAck);
  s.eth.vlan_count = 2;
  s.eth.vlan_tpid = {kEtherTypeQinQ, kEtherTypeVlan};
  s.eth.vlan_tci = {0x0064, 0xA005};
  std::vector<std::byte> out(128);
  const auto l = build_frame(s, {}, out, CrcBackend::Isal);
  ASSERT_TRUE(l.ok());
  out.resize(l.length);
  Packet p;
  ASSERT_EQ(parse_frame(out, {}, p), ParseError::None);
  EXPECT_EQ(p.eth.vlan_count, 2);
  EXPECT_EQ(p.eth.vlan_tci[1], 0xA005);
  EXPECT_EQ(p.l3_offset, 22u);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

}  // namespace
}  // namespace roce::proto::parser_test
