// The prebuilt ACK (ack_template.hpp) against the builder it replaces on the responder
// (write_headers + seal of the path with opcode RcAck): byte for byte across syndromes (ACK
// with every credit code, NAK sequence error and the other NAK codes, RNR NAK with every
// timer), PSN and MSN at and around their 24-bit wrap, IPv4 and IPv6, VLAN tags, the path's
// TOS / traffic class with each ECN codepoint, and the path's other BTH bits.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "protocol/ack_template.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::ack_template_test {
namespace {

FrameSpec path_of(IpVersion v, std::uint8_t vlans, std::uint8_t tos) {
  FrameSpec s;
  s.eth.src = MacAddr{0x02, 0, 0, 0, 0, 1};
  s.eth.dst = MacAddr{0x02, 0, 0, 0, 0, 2};
  s.eth.vlan_count = vlans;
  s.eth.vlan_tpid = {0x88A8, 0x8100};
  s.eth.vlan_tci = {0x0123, 0x0456};
  s.ip_version = v;
  s.ipv4.src = {192, 168, 65, 4};
  s.ipv4.dst = {192, 168, 65, 5};
  s.ipv4.ttl = 64;
  s.ipv4.tos = tos;
  s.ipv6.src[0] = 0xfd;
  s.ipv6.src[15] = 4;
  s.ipv6.dst[0] = 0xfd;
  s.ipv6.dst[15] = 5;
  s.ipv6.traffic_class = tos;
  s.ipv6.flow_label = 0xABCDE;
  s.ipv6.hop_limit = 3;
  s.udp_src_port = 0xDF94;
  s.bth.pkey.set(0x8001);
  s.bth.dest_qp.set(0x000011);
  return s;
}

// What the responder sent before the template: the path with the ACK's fields, built whole.
std::vector<std::byte> built(const FrameSpec& path, std::uint32_t psn, Syndrome syn, std::uint32_t msn) {
  FrameSpec spec = path;
  spec.bth.opcode = raw(Opcode::RcAck);
  spec.bth.psn.set(psn);
  spec.ext.aeth = Aeth{syn.raw, Be24::of(msn)};
  std::vector<std::byte> out(256);
  const FrameLayout l = build_frame(spec, {}, out, CrcBackend::Portable);
  EXPECT_TRUE(l.ok());
  out.resize(l.length);
  return out;
}

std::vector<std::byte> templated(const AckTemplate& t, std::uint32_t psn, Syndrome syn, std::uint32_t msn) {
  std::vector<std::byte> out(2048, std::byte{0xEE});
  const std::size_t n = t.write(psn, syn, msn, out);
  out.resize(n);
  return out;
}

std::vector<Syndrome> every_syndrome() {
  std::vector<Syndrome> s;
  for (std::uint8_t c = 0; c <= kCreditInvalid; ++c) s.push_back(Syndrome::ack(c));
  for (std::uint8_t t = 0; t < 32; ++t) s.push_back(Syndrome::rnr_nak(t));
  for (const NakCode c : {NakCode::PsnSequenceError, NakCode::InvalidRequest, NakCode::RemoteAccessError,
                          NakCode::RemoteOperationalError, NakCode::InvalidRdRequest})
    s.push_back(Syndrome::nak(c));
  return s;
}

constexpr std::uint32_t kEdges[] = {0, 1, 0x7FFFFF, 0x800000, 0xFFFFFE, 0xFFFFFF, 0x123456};

// What eight bytes ending a CRC's input add to it: the register from zero, as crc32_portable
// computes it (zlib's convention inverts before and after: from 0xFFFFFFFF, the complement).
TEST(AckTemplate, TheRegisterOfEightBytesIsThePortableCrcFromZero) {
  std::uint64_t x = 0x0123456789ABCDEFull;
  for (int i = 0; i < 1000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::array<std::byte, 8> be{};
    for (std::size_t k = 0; k < 8; ++k) be[k] = static_cast<std::byte>(x >> (56 - 8 * k));
    ASSERT_EQ(crc32_register8(x), ~crc32_portable(0xFFFFFFFFu, be.data(), be.size())) << std::hex << x;
  }
}

TEST(AckTemplate, EverySyndromePsnAndMsnMatchTheBuilderByteForByte) {
  for (const IpVersion v : {IpVersion::V4, IpVersion::V6}) {
    const FrameSpec path = path_of(v, 0, 0x02);
    AckTemplate t;
    ASSERT_TRUE(t.build(path, CrcBackend::Isal));
    for (const Syndrome syn : every_syndrome())
      for (const std::uint32_t psn : kEdges)
        for (const std::uint32_t msn : kEdges)
          ASSERT_EQ(test::to_hex(templated(t, psn, syn, msn)), test::to_hex(built(path, psn, syn, msn)))
              << "IPv" << static_cast<int>(v) << " " << to_string(syn) << " psn " << psn << " msn " << msn;
  }
}

// PSN and MSN are 24 bits on the wire: what a caller passes above them is cut as the builder cuts it.
TEST(AckTemplate, PsnAndMsnWrapAtTwentyFourBitsAsTheBuilderWraps) {
  const FrameSpec path = path_of(IpVersion::V4, 0, 0);
  AckTemplate t;
  ASSERT_TRUE(t.build(path, CrcBackend::Portable));
  for (const std::uint32_t over : {0x1000000u, 0x1FFFFFFu, 0xFFFFFFFFu})
    EXPECT_EQ(test::to_hex(templated(t, over, Syndrome::ack(), over)),
              test::to_hex(built(path, over & 0xFFFFFF, Syndrome::ack(), over & 0xFFFFFF)));
}

TEST(AckTemplate, VlanTagsTosAndEcnOfThePathMatchTheBuilder) {
  for (const IpVersion v : {IpVersion::V4, IpVersion::V6})
    for (std::uint8_t vlans = 0; vlans <= 2; ++vlans)
      for (const std::uint8_t tos : {0x00, 0x01, 0x02, 0x03, 0x68, 0xB9, 0xFF}) {
        FrameSpec path = path_of(v, vlans, tos);
        path.bth.flags = Bth::kMigReq;  // the path's BTH bits go out as they are
        AckTemplate t;
        ASSERT_TRUE(t.build(path, CrcBackend::Zlib));
        for (const Syndrome syn : {Syndrome::ack(), Syndrome::nak(NakCode::PsnSequenceError), Syndrome::rnr_nak(12)})
          EXPECT_EQ(test::to_hex(templated(t, 0xFFFFFF, syn, 7)), test::to_hex(built(path, 0xFFFFFF, syn, 7)))
              << "IPv" << static_cast<int>(v) << " vlans " << int{vlans} << " tos " << int{tos};
      }
}

TEST(AckTemplate, TheFrameParsesAsAnAckWithItsFieldsAndAGoodIcrc) {
  AckTemplate t;
  ASSERT_TRUE(t.build(path_of(IpVersion::V6, 1, 0x03), CrcBackend::Isal));
  const auto frame = templated(t, 0xABCDEF, Syndrome::rnr_nak(5), 0x000102);
  Packet p;
  const ParseError e = parse_frame(frame, ParseOptions{}, p);
  ASSERT_EQ(e, ParseError::None) << to_string(e);
  EXPECT_EQ(p.bth.opcode, raw(Opcode::RcAck));
  EXPECT_EQ(p.psn(), 0xABCDEFu);
  EXPECT_EQ(p.ext.aeth.syndrome, Syndrome::rnr_nak(5).raw);
  EXPECT_EQ(p.ext.aeth.msn.get(), 0x000102u);
}

// A buffer shorter than the template's copy: the exact length, not a byte past it.
TEST(AckTemplate, ABufferOfTheFramesLengthTakesItAndAShorterOneNothing) {
  const FrameSpec path = path_of(IpVersion::V4, 0, 0);
  AckTemplate t;
  ASSERT_TRUE(t.build(path, CrcBackend::Isal));
  const auto want = built(path, 9, Syndrome::ack(3), 4);
  std::vector<std::byte> buf(want.size() + 1, std::byte{0xEE});
  EXPECT_EQ(t.write(9, Syndrome::ack(3), 4, MutableByteSpan{buf.data(), want.size()}), want.size());
  EXPECT_EQ(test::to_hex(buf.data(), want.size()), test::to_hex(want));
  EXPECT_EQ(buf.back(), std::byte{0xEE});
  EXPECT_EQ(t.write(9, Syndrome::ack(3), 4, MutableByteSpan{buf.data(), want.size() - 1}), 0u);
}

TEST(AckTemplate, AClearedOrUnbuiltTemplateWritesNothing) {
  std::array<std::byte, 128> buf{};
  AckTemplate t;
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(t.write(1, Syndrome::ack(), 1, buf), 0u);
  ASSERT_TRUE(t.build(path_of(IpVersion::V4, 0, 0), CrcBackend::Isal));
  EXPECT_EQ(t.length(), 62u);  // Ethernet 14, IPv4 20, UDP 8, BTH 12, AETH 4, ICRC 4
  t.clear();
  EXPECT_EQ(t.write(1, Syndrome::ack(), 1, buf), 0u);
}

}  // namespace
}  // namespace roce::proto::ack_template_test
