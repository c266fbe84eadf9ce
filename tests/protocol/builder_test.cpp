#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::builder_test {
namespace {

// dcqcn.md T8(b): the CNP datagram 10.0.0.1 -> 10.0.0.2, DestQP 0x123456.
TEST(Builder, CnpMatchesTheSpecBytes) {
  FrameSpec s;
  s.with_ethernet = false;
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.ipv4.tos = 0xC2;
  s.ipv4.ttl = 64;
  s.udp_src_port = 0;
  s.bth.opcode = raw(Opcode::Cnp);
  s.bth.pkey.set(0xFFFF);
  s.bth.set_becn(true);
  s.bth.dest_qp.set(0x123456);
  std::array<std::byte, 64> out{};
  const auto l = build_frame(s, {}, out, CrcBackend::Isal);
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l.length, 60u);
  EXPECT_EQ(test::to_hex(out.data(), l.length),
            "45c2003c00004000401125ed0a0000010a000002000012b7002800008100ffff4012345600000000"
            "0000000000000000000000000000000001b6c47e");
}

// place_unsealed: the payload at its offset, the pad bytes zeroed, nothing before the payload
// or past the frame touched (the ICRC's bytes are the seal's to write), and the datagram
// returned from the IP header to the last pad byte.
TEST(Builder, PlaceUnsealedPlacesThePayloadAndZeroesThePad) {
  for (std::uint32_t len : {0u, 1u, 2u, 3u, 4u, 5u, 63u, 64u, 1023u}) {
    FrameSpec s;
    s.bth.opcode = raw(Opcode::RcWriteOnly);
    s.ext.reth.dma_length.set(len);
    std::vector<std::byte> payload(len);
    for (std::uint32_t i = 0; i < len; ++i) payload[i] = std::byte{static_cast<std::uint8_t>(0xA0 + i)};
    std::vector<std::byte> out(2048, std::byte{0x77});
    const FrameLayout l = write_headers(s, len, out);
    ASSERT_TRUE(l.ok());
    const std::vector<std::byte> headers(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(l.payload_offset));
    const MutableByteSpan d = place_unsealed(l, out, payload.data());
    EXPECT_EQ(d.data(), out.data() + l.l3_offset) << len;
    EXPECT_EQ(d.size(), l.payload_offset + len + l.pad - l.l3_offset) << len;
    EXPECT_TRUE(std::equal(headers.begin(), headers.end(), out.begin())) << len;
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), out.begin() + static_cast<std::ptrdiff_t>(l.payload_offset))) << len;
    for (std::size_t i = l.payload_offset + len; i < l.payload_offset + len + l.pad; ++i)
      EXPECT_EQ(out[i], std::byte{0}) << len << " at " << i;
    for (std::size_t i = l.length; i < out.size(); ++i) ASSERT_EQ(out[i], std::byte{0x77}) << len << " at " << i;
  }
}

TEST(Builder, PadCountAndPadBytesFollowThePayloadLength) {
  for (std::uint32_t len : {0u, 1u, 2u, 3u, 4u, 18u, 1023u}) {
    FrameSpec s;
    s.bth.opcode = raw(Opcode::RcWriteOnly);
    s.ext.reth.dma_length.set(len);
    std::vector<std::byte> payload(len, std::byte{0xEE});
    std::vector<std::byte> out(2048, std::byte{0x77});
    const auto l = build_frame(s, payload, out, CrcBackend::Isal);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l.pad, (4 - len % 4) % 4);
    EXPECT_EQ((l.payload_length + l.pad) % 4, 0u);
    for (std::size_t i = 0; i < l.pad; ++i) EXPECT_EQ(out[l.payload_offset + len + i], std::byte{0});
    Packet p;
    ASSERT_EQ(parse_frame(std::span{out}.first(l.length), {}, p), ParseError::None);
    EXPECT_EQ(p.bth.pad_count(), l.pad);
    EXPECT_EQ(p.payload_length, len);
    EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  }
}

TEST(Builder, RefusesWhatAReceiverWouldReject) {
  FrameSpec s;
  std::vector<std::byte> out(8192);
  std::vector<std::byte> payload(5000);
  s.bth.opcode = raw(Opcode::RcSendOnly);
  EXPECT_EQ(build_frame(s, payload, out, CrcBackend::Isal).error, BuildError::PayloadAbovePmtu);
  s.bth.opcode = raw(Opcode::RcAck);
  EXPECT_EQ(build_frame(s, std::span{payload}.first(4), out, CrcBackend::Isal).error, BuildError::PayloadLengthInvalid);
  s.bth.opcode = 0x15;
  EXPECT_EQ(build_frame(s, {}, out, CrcBackend::Isal).error, BuildError::UnknownOpcode);
  s.bth.opcode = raw(Opcode::RcSendOnly);
  EXPECT_EQ(build_frame(s, std::span{payload}.first(100), std::span{out}.first(100), CrcBackend::Isal).error,
            BuildError::BufferTooSmall);
  s.validate = false;
  EXPECT_TRUE(build_frame(s, payload, out, CrcBackend::Isal).ok());
}

TEST(Builder, EcnBitsAreSettableOnBothIpVersions) {
  for (auto v : {IpVersion::V4, IpVersion::V6}) {
    for (auto e : {Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce}) {
      FrameSpec s;
      s.ip_version = v;
      s.ipv4.tos = 0x68;
      s.ipv6.traffic_class = 0x68;
      s.set_ecn(e);
      s.bth.opcode = raw(Opcode::RcSendOnly);
      std::vector<std::byte> out(256);
      const auto l = build_frame(s, {}, out, CrcBackend::Isal);
      ASSERT_TRUE(l.ok());
      Packet p;
      ASSERT_EQ(parse_frame(std::span{out}.first(l.length), {}, p), ParseError::None);
      EXPECT_EQ(p.ecn(), e);
      EXPECT_EQ(v == IpVersion::V4 ? p.ipv4.tos >> 2 : p.ipv6.traffic_class >> 2, 0x68 >> 2);
      EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
    }
  }
}

TEST(Builder, HeadersThenSealEqualsOneShotBuild) {
  FrameSpec s;
  s.bth.opcode = raw(Opcode::RcSendLastImm);
  s.ext.imm.bytes = {1, 2, 3, 4};
  std::vector<std::byte> payload(333, std::byte{0x42});
  std::vector<std::byte> a(1024), b(1024);
  const auto la = build_frame(s, payload, a, CrcBackend::Isal);
  const auto lb = write_headers(s, 333, b);
  ASSERT_TRUE(lb.ok());
  std::copy(payload.begin(), payload.end(), b.begin() + static_cast<long>(lb.payload_offset));
  seal(s, lb, b, CrcBackend::Portable);
  ASSERT_EQ(la.length, lb.length);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<long>(la.length), b.begin()));
}

// From kSealCopyingFrom bytes the payload's ICRC share is computed while it is copied: the frame
// must be the same bytes as a copy followed by seal, at every pad count, on both IP versions and
// with every CRC backend.
TEST(Builder, PlacingWhileSealingEqualsCopyThenSeal) {
  std::vector<std::byte> payload(5000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 37 + 11);
  for (const IpVersion v : {IpVersion::V4, IpVersion::V6}) {
    FrameSpec s;
    s.ip_version = v;
    s.bth.opcode = raw(Opcode::RcSendOnly);
    for (const CrcBackend crc : {CrcBackend::Isal, CrcBackend::Zlib, CrcBackend::Portable}) {
      for (std::uint32_t len : {0u, 1u, 2047u, 2048u, 2049u, 2050u, 2051u, 3001u, 4095u, 4096u}) {
        std::vector<std::byte> a(4300, std::byte{0xEE}), b(4300, std::byte{0xEE});
        const auto la = write_headers(s, len, a);
        ASSERT_TRUE(la.ok());
        std::copy_n(payload.begin() + 1, len, a.begin() + static_cast<long>(la.payload_offset));
        seal(s, la, a, CrcBackend::Portable);
        const auto lb = write_headers(s, len, b);
        place_and_seal(s, lb, b, crc, payload.data() + 1);
        ASSERT_EQ(a, b) << to_string(crc) << " payload " << len << (v == IpVersion::V4 ? " IPv4" : " IPv6");
      }
    }
  }
}

}  // namespace
}  // namespace roce::proto::builder_test
