// What the engine does not speak but tools must read: DC transport frames (dc_transport.hpp),
// RoCEv1 frames (rocev1.hpp) and the names of every opcode value (opcode_space.hpp).
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/dc_transport.hpp"
#include "protocol/opcode_space.hpp"
#include "protocol/rocev1.hpp"
#include "tests/support/vendor_frames.hpp"

namespace roce::proto::vendor_transport_test {
namespace {

using test::VendorFrameSpec;

std::vector<std::byte> bytes(std::size_t n, std::uint8_t v) { return std::vector<std::byte>(n, std::byte{v}); }

ParseError parse_as_dc(const std::vector<std::byte>& f, Packet& p, DcHeaders& dc, ParseOptions o = {}) {
  const ParseError first = parse_frame(f, o, p);
  EXPECT_EQ(first, ParseError::UnknownOpcode) << "the engine's parser must keep refusing DC opcodes";
  return parse_dc(f, o, p, dc);
}

TEST(DcTransport, WriteOnlyCarriesDctEthRdethDethRethAndPayload) {
  VendorFrameSpec s;
  s.opcode = 0x4A;
  s.ext.rdeth.ee_context.set(0x00ABCDEF);
  s.ext.deth.qkey.set(0x11112222);
  s.ext.deth.src_qp.set(0x000777);
  s.ext.reth.va.set(0x00007F0012345678ull);
  s.ext.reth.rkey.set(0xCAFE);
  s.ext.reth.dma_length.set(13);
  s.payload = bytes(13, 0x5A);
  const auto f = test::dc_frame(s);
  Packet p;
  DcHeaders dc;
  ASSERT_EQ(parse_as_dc(f, p, dc), ParseError::None);
  EXPECT_STREQ(dc.info.name, "DC_RDMA_WRITE_ONLY");
  EXPECT_EQ(dc.dct_eth, 0x1122334455667788ull);
  EXPECT_EQ(p.ext.rdeth.ee_context.get() & 0xFFFFFF, 0xABCDEFu);
  EXPECT_EQ(p.ext.deth.qkey.get(), 0x11112222u);
  EXPECT_EQ(p.ext.deth.source_qp(), 0x777u);
  EXPECT_EQ(p.ext.reth.va.get(), 0x00007F0012345678ull);
  EXPECT_EQ(p.ext.reth.dma_length.get(), 13u);
  EXPECT_EQ(p.payload_length, 13u);
  EXPECT_EQ(p.bth.pad_count(), 3);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(DcTransport, AcknowledgeCarriesOnlyTheAethAfterTheDctEth) {
  VendorFrameSpec s;
  s.opcode = 0x51;
  s.ext.aeth.syndrome = Syndrome::nak(NakCode::PsnSequenceError).raw;
  s.ext.aeth.msn.set(42);
  const auto f = test::dc_frame(s);
  EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 8 + 4 + 4);
  Packet p;
  DcHeaders dc;
  ASSERT_EQ(parse_as_dc(f, p, dc), ParseError::None);
  EXPECT_STREQ(dc.info.name, "DC_ACKNOWLEDGE");
  EXPECT_EQ(p.ext.aeth.syndrome, 0x60);
  EXPECT_EQ(p.ext.aeth.msn.get(), 42u);
  EXPECT_EQ(p.payload_length, 0u);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(DcTransport, Opcode0x55CarriesTheConnectEthOnlyWithSeClear) {
  VendorFrameSpec s;
  s.opcode = 0x55;
  s.se = false;
  Packet p;
  DcHeaders dc;
  ASSERT_EQ(parse_as_dc(test::dc_frame(s), p, dc), ParseError::None);
  EXPECT_STREQ(dc.info.name, "DC_CONNECT");
  EXPECT_TRUE(dc.has_connect_eth);
  EXPECT_EQ(dc.connect_eth[0], 0xC5);
  s.se = true;
  s.payload = bytes(8, 1);
  ASSERT_EQ(parse_as_dc(test::dc_frame(s), p, dc), ParseError::None);
  EXPECT_FALSE(dc.has_connect_eth);
  EXPECT_EQ(p.payload_length, 8u);
}

TEST(DcTransport, BadIcrcCutFramesAndUnnamedOpcodes) {
  VendorFrameSpec s;
  s.opcode = 0x44;
  s.payload = bytes(64, 7);
  auto f = test::dc_frame(s);
  f[f.size() - 10] ^= std::byte{1};
  Packet p;
  DcHeaders dc;
  ASSERT_EQ(parse_as_dc(f, p, dc), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Bad);

  const auto whole = test::dc_frame(s);
  const std::vector<std::byte> cut(whole.begin(), whole.begin() + 90);
  EXPECT_EQ(parse_as_dc(cut, p, dc), ParseError::Truncated);
  ParseOptions snap;
  snap.allow_snap_truncation = true;
  ASSERT_EQ(parse_as_dc(cut, p, dc, snap), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::NotCheckable);
  EXPECT_EQ(p.payload_length, 64u);
  EXPECT_LT(p.payload.size(), 64u);

  s.opcode = 0x56;
  s.payload.clear();
  EXPECT_EQ(parse_as_dc(test::dc_frame(s), p, dc), ParseError::UnknownOpcode);
  // A payload where the opcode has none.
  s.opcode = 0x51;
  s.payload = bytes(4, 0);
  EXPECT_EQ(parse_as_dc(test::dc_frame(s), p, dc), ParseError::PayloadLengthInvalid);
}

TEST(RoceV1, DecodesTheGrhBthAndExtensionHeadersAndChecksTheIcrc) {
  VendorFrameSpec s;
  s.opcode = raw(Opcode::RcWriteFirst);
  s.ext.reth.rkey.set(0x1234);
  s.ext.reth.dma_length.set(2048);
  s.payload = bytes(1024, 3);
  auto f = test::rocev1_frame(s);
  Packet p;
  ASSERT_EQ(parse_frame(f, {}, p), ParseError::RoceV1);
  ASSERT_EQ(parse_rocev1(f, 14, {}, p), ParseError::None);
  EXPECT_EQ(p.ip_version, IpVersion::V6);
  EXPECT_EQ(p.ipv6.src[15], 1);
  EXPECT_EQ(p.ipv6.flow_label, 0x12345u);
  EXPECT_EQ(p.dest_qp(), 0x321u);
  EXPECT_EQ(p.ext.reth.rkey.get(), 0x1234u);
  EXPECT_EQ(p.payload_length, 1024u);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  // The hop limit is masked out of the ICRC; the payload is not.
  f[14 + 7] = std::byte{9};
  ASSERT_EQ(parse_rocev1(f, 14, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  f[f.size() - 20] ^= std::byte{0x80};
  ASSERT_EQ(parse_rocev1(f, 14, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Bad);
}

TEST(RoceV1, RefusesAGrhThatCarriesNoBthAndCutHeaders) {
  VendorFrameSpec s;
  s.opcode = raw(Opcode::RcAck);
  auto f = test::rocev1_frame(s);
  Packet p;
  EXPECT_EQ(parse_rocev1(std::span{f}.first(14 + 40 + 6), 14, {}, p), ParseError::Truncated);
  f[14 + 6] = std::byte{0x11};  // next header UDP: IP over IB, not the IBA transport
  EXPECT_EQ(parse_rocev1(f, 14, {}, p), ParseError::NotUdp);
}

TEST(OpcodeSpace, EveryOpcodeHasANameThatSaysWhatItIs) {
  EXPECT_EQ(describe_opcode(0x04).name, "RC_SEND_ONLY");
  EXPECT_EQ(describe_opcode(0x15).name, "RC_RESERVED_0x15");
  EXPECT_EQ(describe_opcode(0x2c).name, "UC_RESERVED_0x2c");
  EXPECT_EQ(describe_opcode(0x4a).name, "DC_RDMA_WRITE_ONLY");
  EXPECT_EQ(describe_opcode(0x4a).kind, OpcodeKind::Dc);
  EXPECT_EQ(describe_opcode(0x51).name, "DC_ACKNOWLEDGE");
  EXPECT_EQ(describe_opcode(0x57).name, "DC_RESERVED_0x57");
  EXPECT_EQ(describe_opcode(0x60).name, "UD_RESERVED_0x60");
  EXPECT_EQ(describe_opcode(0x81).name, "CNP");
  EXPECT_EQ(describe_opcode(0x80).name, "CNP_RESERVED_0x80");
  EXPECT_EQ(describe_opcode(0xa4).name, "XRC_SEND_ONLY");
  EXPECT_EQ(describe_opcode(0xa4).kind, OpcodeKind::Xrc);
  EXPECT_EQ(describe_opcode(0xb5).name, "XRC_RESERVED_0xb5");
  EXPECT_EQ(describe_opcode(0xc3).name, "RESERVED_0xc3");
  EXPECT_EQ(describe_opcode(0xe3).name, "VENDOR_0xe3");
  EXPECT_EQ(describe_opcode(0xe3).kind, OpcodeKind::Vendor);
  for (unsigned op = 0; op < 256; ++op) EXPECT_FALSE(describe_opcode(static_cast<std::uint8_t>(op)).name.empty()) << op;
}

}  // namespace
}  // namespace roce::proto::vendor_transport_test
