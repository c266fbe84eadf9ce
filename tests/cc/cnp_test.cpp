// dcqcn.md T7 (which packets may trigger a CNP) and T8(b)/(c) (CNP bytes and ICRC).
#include <gtest/gtest.h>

#include <array>

#include "lib/cc/cnp.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "tests/support/hex.hpp"

namespace roce::cc::cnp_test {
namespace {

using proto::Ecn;
using proto::Opcode;

proto::Packet packet(Opcode op, Ecn ecn, proto::IpVersion v = proto::IpVersion::V4) {
  proto::Packet p;
  p.ip_version = v;
  p.ipv4.tos = static_cast<std::uint8_t>(26 << 2 | static_cast<std::uint8_t>(ecn));
  p.ipv6.traffic_class = p.ipv4.tos;
  p.bth.opcode = proto::raw(op);
  p.info = &proto::opcode_info(op);
  return p;
}

TEST(TriggersCnp, CeMarkedDataPacketsTrigger) {
  for (Opcode op : {Opcode::RcSendOnly, Opcode::RcSendFirst, Opcode::RcWriteMiddle, Opcode::RcWriteOnlyImm,
                    Opcode::RcReadResponseFirst, Opcode::RcReadResponseOnly, Opcode::UcSendOnly, Opcode::UdSendOnly})
    EXPECT_TRUE(triggers_cnp(packet(op, Ecn::Ce))) << proto::to_string(op);
  EXPECT_TRUE(triggers_cnp(packet(Opcode::RcWriteLast, Ecn::Ce, proto::IpVersion::V6)));
}

TEST(TriggersCnp, EctWithoutCeNeverTriggers) {
  for (Ecn e : {Ecn::NotEct, Ecn::Ect0, Ecn::Ect1}) {
    EXPECT_FALSE(triggers_cnp(packet(Opcode::RcSendOnly, e))) << proto::to_string(e);
    EXPECT_FALSE(triggers_cnp(packet(Opcode::RcReadResponseMiddle, e, proto::IpVersion::V6))) << proto::to_string(e);
  }
}

TEST(TriggersCnp, AcksCnpsAndRequestsWithoutDataNeverTrigger) {
  for (Opcode op : {Opcode::RcAck, Opcode::RcAtomicAck, Opcode::Cnp, Opcode::RcReadRequest, Opcode::RcCmpSwap,
                    Opcode::RcFetchAdd, Opcode::RcFlush})
    EXPECT_FALSE(triggers_cnp(packet(op, Ecn::Ce))) << proto::to_string(op);
  proto::Packet unknown = packet(Opcode::RcSendOnly, Ecn::Ce);
  unknown.bth.opcode = 0x3F;
  EXPECT_FALSE(triggers_cnp(unknown));
}

TEST(TriggersCnp, ParsedCeFrameFromTheBuilderTriggers) {
  proto::FrameSpec s;
  s.bth.opcode = proto::raw(Opcode::RcWriteOnly);
  s.set_ecn(Ecn::Ce);
  std::array<std::byte, 256> buf{};
  const std::array<std::byte, 64> payload{};
  const auto l = proto::build_frame(s, payload, buf, proto::CrcBackend::Portable);
  ASSERT_TRUE(l.ok());
  proto::Packet p;
  ASSERT_EQ(proto::parse_frame(std::span{buf}.first(l.length), {}, p), proto::ParseError::None);
  EXPECT_TRUE(triggers_cnp(p));
}

// T8(b): IPv4 10.0.0.1 -> 10.0.0.2, ToS 0xC2 (DSCP 48 + ECT(0), the defaults), id 0, DF, TTL 64,
// UDP sport 0, dport 4791, checksum 0, DestQP 0x123456.
TEST(CnpFrame, DefaultCnpMatchesTheSpecBytes) {
  CnpEndpoints ep;
  ep.src4 = {10, 0, 0, 1};
  ep.dst4 = {10, 0, 0, 2};
  const proto::FrameSpec s = cnp_frame_spec(ep, 0x123456, CnpParams{});
  std::array<std::byte, 64> out{};
  for (auto crc : {proto::CrcBackend::Portable, proto::CrcBackend::Zlib, proto::CrcBackend::Isal}) {
    const auto l = proto::build_frame(s, {}, out, crc);
    ASSERT_TRUE(l.ok()) << proto::to_string(l.error);
    ASSERT_EQ(l.length, 60u);
    EXPECT_EQ(roce::test::to_hex(out.data(), l.length),
              "45c2003c00004000401125ed0a0000010a000002"
              "000012b700280000"
              "8100ffff4012345600000000"
              "00000000000000000000000000000000"
              "01b6c47e");
  }
}

TEST(CnpFrame, ReplySwapsAddressesKeepsVlanAndSetsPriority) {
  proto::Packet marked = packet(Opcode::RcSendOnly, Ecn::Ce);
  marked.has_l2 = true;
  marked.eth.src = {2, 0, 0, 0, 0, 1};
  marked.eth.dst = {2, 0, 0, 0, 0, 2};
  marked.eth.vlan_count = 1;
  marked.eth.vlan_tpid = {proto::kEtherTypeVlan, 0};
  marked.eth.vlan_tci = {static_cast<std::uint16_t>(3 << 13 | 100), 0};
  marked.ipv4.src = {10, 0, 0, 1};
  marked.ipv4.dst = {10, 0, 0, 2};
  marked.bth.dest_qp.set(0x11);  // our QP
  const proto::FrameSpec s = cnp_reply_spec(marked, 0xABCDEF, CnpParams{});
  EXPECT_TRUE(s.with_ethernet);
  EXPECT_EQ(s.eth.dst, marked.eth.src);
  EXPECT_EQ(s.eth.src, marked.eth.dst);
  EXPECT_EQ(s.eth.vlan_tci[0], 6 << 13 | 100);
  EXPECT_EQ(s.ipv4.dst, marked.ipv4.src);
  EXPECT_EQ(s.ipv4.src, marked.ipv4.dst);
  EXPECT_EQ(s.bth.dest_qp.get(), 0xABCDEFu);
  std::array<std::byte, 96> out{};
  const auto l = proto::build_frame(s, {}, out, proto::CrcBackend::Isal);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.length, 14u + 4 + 60);
  proto::Packet back;
  ASSERT_EQ(proto::parse_frame(std::span{out}.first(l.length), {}, back), proto::ParseError::None);
  EXPECT_EQ(back.opcode(), 0x81);
  EXPECT_TRUE(back.bth.becn());
  EXPECT_EQ(back.ecn(), Ecn::Ect0);
  EXPECT_EQ(back.icrc_status, proto::IcrcStatus::Ok);
  EXPECT_FALSE(triggers_cnp(back));
}

TEST(CnpFrame, Ipv6ReplyCarriesDscpAndHopLimit) {
  proto::Packet marked = packet(Opcode::RcReadResponseOnly, Ecn::Ce, proto::IpVersion::V6);
  marked.ipv6.src[15] = 1;
  marked.ipv6.dst[15] = 2;
  CnpParams params;
  params.udp_src_port = 56238;
  const proto::FrameSpec s = cnp_reply_spec(marked, 7, params);
  EXPECT_FALSE(s.with_ethernet);
  EXPECT_EQ(s.ip_version, proto::IpVersion::V6);
  EXPECT_EQ(s.ipv6.traffic_class, 0xC2);
  EXPECT_EQ(s.ipv6.hop_limit, 64);
  EXPECT_EQ(s.ipv6.dst[15], 1);
  EXPECT_EQ(s.udp_src_port, 56238);
  std::array<std::byte, 96> out{};
  EXPECT_EQ(proto::build_frame(s, {}, out, proto::CrcBackend::Isal).length, 40u + 8 + 12 + 16 + 4);
}

// T8(c): the ConnectX-4 Lx capture and the libconntrack-cm vector run through cnp_frame_spec()
// with the capture's addressing, so the helper reproduces real CNPs byte for byte.
TEST(CnpFrame, RebuildsTheConnectX4LxCaptureIncludingIcrc) {
  CnpEndpoints ep;
  ep.src4 = {10, 0, 17, 1};
  ep.dst4 = {10, 0, 18, 1};
  proto::FrameSpec s = cnp_frame_spec(ep, 0x000118, CnpParams{});
  s.ipv4.id = 0x718c;
  std::array<std::byte, 64> out{};
  const auto l = proto::build_frame(s, {}, out, proto::CrcBackend::Isal);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(roce::test::to_hex(out.data(), l.length),
            "45c2003c718c4000401191610a0011010a001201000012b7002800008100ffff4000011800000000"
            "00000000000000000000000000000000"
            "82fd002a");
}

TEST(CnpFrame, RebuildsTheNvidiaExampleCnp) {
  CnpEndpoints ep;
  ep.src4 = {0x16, 0x16, 0x16, 0x08};
  ep.dst4 = {0x16, 0x16, 0x16, 0x07};
  CnpParams params;
  params.dscp = 34;
  params.ecn = Ecn::Ect1;
  params.udp_src_port = 0xdbae;
  params.ttl = 0x20;
  proto::FrameSpec s = cnp_frame_spec(ep, 0xd2, params);
  s.ipv4.id = 0x98c6;
  std::array<std::byte, 64> out{};
  const auto l = proto::build_frame(s, {}, out, proto::CrcBackend::Zlib);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(roce::test::to_hex(out.data(), l.length),
            "4589003c98c640002011692716161608"
            "16161607dbae12b700280000"
            "8100ffff400000d200000000"
            "00000000000000000000000000000000"
            "dafc1bef");
}

}  // namespace
}  // namespace roce::cc::cnp_test
