// Properties of builder + parser over seeded random frames of every opcode in the table:
// round trips keep every field, the ICRC catches every single-bit error in what it covers and
// ignores every bit of what it masks. Set ROCE_PROPERTY_SEED to replay another seed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "protocol/parser.hpp"
#include "protocol/psn.hpp"
#include "tests/support/frame_compare.hpp"
#include "tests/support/random_frames.hpp"

namespace roce::proto {
namespace {

using test::RandomFrameOptions;

constexpr CrcBackend kBackends[] = {CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal};

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("ROCE_PROPERTY_SEED");
    return env ? std::strtoull(env, nullptr, 0) : 0x5EED'0001ull;
  }();
  return s;
}

std::string trace(std::uint8_t op, const RandomFrameOptions& o, int iteration) {
  return "seed=" + std::to_string(seed()) + " (ROCE_PROPERTY_SEED) opcode=" + opcode_name(op) +
         " ip=v" + std::to_string(static_cast<int>(o.ip_version)) + " eth=" + std::to_string(o.with_ethernet) +
         " vlans=" + std::to_string(o.vlan_count) + " iteration=" + std::to_string(iteration);
}

ParseError parse(const FrameSpec& s, ByteSpan frame, const ParseOptions& o, Packet& p) {
  return s.with_ethernet ? parse_frame(frame, o, p) : parse_ip(frame, o, p);
}

TEST(RoundTrip, EveryOpcodeOnBothIpVersionsAndEveryVlanDepthParsesBackToTheSameFields) {
  test::Rng rng(seed());
  for (std::uint8_t op : test::valid_opcodes()) {
    for (auto v : {IpVersion::V4, IpVersion::V6}) {
      for (int l2 = 0; l2 < 4; ++l2) {  // raw IP, then Ethernet with 0, 1 and 2 tags
        for (int i = 0; i < 8; ++i) {
          RandomFrameOptions o;
          o.ip_version = v;
          o.with_ethernet = l2 > 0;
          o.vlan_count = static_cast<std::uint8_t>(l2 > 0 ? l2 - 1 : 0);
          o.pad = static_cast<std::uint8_t>(i % 4);
          SCOPED_TRACE(trace(op, o, i));
          const auto f = test::random_frame(rng, op, o);
          const auto built_with = kBackends[i % 3];
          const auto frame = test::build(f, built_with);
          ASSERT_FALSE(frame.empty());
          for (auto crc : kBackends) {
            ParseOptions po;
            po.crc = crc;
            Packet p;
            ASSERT_EQ(parse(f.spec, frame, po, p), ParseError::None);
            EXPECT_TRUE(test::packet_matches_spec(f.spec, f.payload, p));
            EXPECT_EQ(p.icrc_status, IcrcStatus::Ok) << "built with " << to_string(built_with) << ", checked with "
                                                     << to_string(crc);
            EXPECT_EQ(p.datagram_end, frame.size());
          }
        }
      }
    }
  }
}

TEST(RoundTrip, RebuildingAParsedPacketGivesTheSameBytes) {
  test::Rng rng(seed() + 1);
  for (std::uint8_t op : test::valid_opcodes()) {
    for (int i = 0; i < 16; ++i) {
      RandomFrameOptions o;
      o.ip_version = (i & 1) ? IpVersion::V6 : IpVersion::V4;
      o.with_ethernet = i % 5 != 0;
      o.vlan_count = static_cast<std::uint8_t>(o.with_ethernet ? i % 3 : 0);
      SCOPED_TRACE(trace(op, o, i));
      const auto f = test::random_frame(rng, op, o);
      const auto frame = test::build(f);
      Packet p;
      ASSERT_EQ(parse(f.spec, frame, {}, p), ParseError::None);
      std::vector<std::byte> again(frame.size() + 16);
      const auto l = build_frame(frame_spec_from(p), p.payload, again, CrcBackend::Portable);
      ASSERT_TRUE(l.ok()) << to_string(l.error);
      ASSERT_EQ(l.length, frame.size());
      EXPECT_EQ(test::to_hex(std::span{again}.first(l.length)), test::to_hex(frame));
    }
  }
}

// The 24-bit fields at their edges, where a stray sign extension or a 16-bit store would show.
TEST(RoundTrip, TwentyFourBitFieldsKeepTheirEdgeValues) {
  test::Rng rng(seed() + 2);
  for (std::uint32_t v : {0u, 1u, 0x7FFFFFu, 0x800000u, 0xFFFFFEu, 0xFFFFFFu}) {
    for (auto op : {Opcode::RcAck, Opcode::UdSendOnly, Opcode::RcWriteOnly}) {
      auto f = test::random_frame(rng, raw(op), {});
      f.spec.bth.psn.set(v);
      f.spec.bth.dest_qp.set(v);
      f.spec.ext.aeth.msn.set(v);
      f.spec.ext.deth.src_qp.set(v);
      const auto frame = test::build(f);
      Packet p;
      ASSERT_EQ(parse_frame(frame, {}, p), ParseError::None);
      EXPECT_EQ(p.psn(), v);
      EXPECT_EQ(p.dest_qp(), v);
      if (op == Opcode::RcAck) {
        EXPECT_EQ(p.ext.aeth.msn.get(), v);
      }
      if (op == Opcode::UdSendOnly) {
        EXPECT_EQ(p.ext.deth.source_qp(), v);
      }
      EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
    }
  }
}

// psn_test.cpp walks a window around each boundary; this covers distances across the whole
// half-window from random starting points, and deltas beyond one wrap.
TEST(Psn, RandomDistancesUpToHalfTheSpaceRoundTrip) {
  test::Rng rng(seed() + 3);
  for (int i = 0; i < 200'000; ++i) {
    const auto a = static_cast<std::uint32_t>(rng() & kPsnMask);
    const auto d = test::uniform<std::int64_t>(rng, -(1 << 23), (1 << 23) - 1);
    const auto wraps = test::uniform<std::int64_t>(rng, -3, 3) * kPsnModulus;
    const std::uint32_t b = psn_add(a, d);
    ASSERT_EQ(psn_diff(b, a), d) << "seed=" << seed() + 3 << " a=" << a << " d=" << d;
    ASSERT_EQ(psn_add(a, d + wraps), b);
    ASSERT_EQ(psn_after(b, a), d > 0);
    ASSERT_EQ(psn_at_or_after(b, a), d >= 0);
  }
}

// Which bits of the datagram the ICRC replaces with ones (rocev2-wire.md 6.1); offsets from the
// first byte of the IP header.
bool masked_bit(IpVersion v, std::size_t off, unsigned bit) {
  if (v == IpVersion::V4) {
    const std::size_t udp = 20, bth = udp + 8;
    return off == 1 || off == 8 || off == 10 || off == 11 || off == udp + 6 || off == udp + 7 || off == bth + 4;
  }
  const std::size_t udp = 40, bth = udp + 8;
  if (off == 0) return bit < 4;  // low nibble: top of the traffic class; high nibble: version
  return (off >= 1 && off <= 3) || off == 7 || off == udp + 6 || off == udp + 7 || off == bth + 4;
}

struct FlipCase {
  test::RandomFrame frame;
  std::vector<std::byte> bytes;
  std::size_t l3 = 0;
};

std::vector<FlipCase> flip_cases(std::uint64_t s) {
  test::Rng rng(s);
  std::vector<FlipCase> cases;
  for (std::uint8_t op : test::valid_opcodes()) {
    for (int i = 0; i < 4; ++i) {
      RandomFrameOptions o;
      o.ip_version = (i & 1) ? IpVersion::V6 : IpVersion::V4;
      o.vlan_count = static_cast<std::uint8_t>(i / 2);
      o.max_payload = 64;  // every bit of a short packet; large payloads are all alike to a CRC
      o.pad = static_cast<std::uint8_t>(i);
      FlipCase c{test::random_frame(rng, op, o), {}, 0};
      c.bytes = test::build(c.frame);
      c.l3 = sizeof(EthernetHeader) + sizeof(VlanTag) * o.vlan_count;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

TEST(IcrcProperty, EveryBitFlipInTheCoveredRegionIsABadIcrcOrAParseError) {
  std::size_t bad = 0, rejected = 0;
  for (auto& c : flip_cases(seed() + 4)) {
    const IpVersion v = c.frame.spec.ip_version;
    for (std::size_t off = c.l3; off < c.bytes.size(); ++off) {
      for (unsigned bit = 0; bit < 8; ++bit) {
        if (masked_bit(v, off - c.l3, bit)) continue;
        auto f = c.bytes;
        f[off] ^= std::byte{static_cast<std::uint8_t>(1u << bit)};
        Packet p;
        const ParseError e = parse_frame(f, {}, p);
        if (e != ParseError::None) {
          ++rejected;
          continue;
        }
        ++bad;
        // IPv4 IHL is the only covered field that can move the ICRC out of reach.
        const bool ihl = v == IpVersion::V4 && off == c.l3;
        ASSERT_TRUE(p.icrc_status == IcrcStatus::Bad || (ihl && p.icrc_status == IcrcStatus::NotCheckable))
            << "seed=" << seed() + 4 << " " << opcode_name(c.frame.spec.bth.opcode) << " byte " << off - c.l3
            << " of the datagram, bit " << bit << ": icrc " << to_string(p.icrc_status);
      }
    }
  }
  // Both outcomes must occur, or the loop above tested nothing of one kind.
  EXPECT_GT(bad, 10'000u);
  EXPECT_GT(rejected, 1'000u);
}

TEST(IcrcProperty, EveryBitFlipInAMaskedFieldKeepsTheIcrcOk) {
  std::size_t flips = 0;
  for (auto& c : flip_cases(seed() + 5)) {
    const IpVersion v = c.frame.spec.ip_version;
    for (std::size_t off = c.l3; off < c.l3 + ip_header_bytes(v) + sizeof(UdpHeader) + sizeof(Bth); ++off) {
      for (unsigned bit = 0; bit < 8; ++bit) {
        if (!masked_bit(v, off - c.l3, bit)) continue;
        auto f = c.bytes;
        f[off] ^= std::byte{static_cast<std::uint8_t>(1u << bit)};
        Packet p;
        ASSERT_EQ(parse_frame(f, {}, p), ParseError::None) << opcode_name(c.frame.spec.bth.opcode);
        ++flips;
        ASSERT_EQ(p.icrc_status, IcrcStatus::Ok)
            << "seed=" << seed() + 5 << " " << opcode_name(c.frame.spec.bth.opcode) << " byte " << off - c.l3
            << " bit " << bit;
        // The IPv4 header checksum, in turn, catches every single-bit flip of the IPv4 header.
        if (v == IpVersion::V4 && off < c.l3 + kIpv4HeaderBytes) {
          EXPECT_FALSE(p.ipv4_checksum_ok);
        }
      }
    }
  }
  // Masked bits per packet: IPv4 TOS, TTL, checksum (32) + UDP checksum (16) + BTH byte 4 (8) = 56;
  // IPv6 traffic class and flow label (28), hop limit (8) + 16 + 8 = 60. Two packets of each.
  EXPECT_EQ(flips, test::valid_opcodes().size() * (2 * 56 + 2 * 60));
}

TEST(IcrcProperty, FlipsInMacAddressesAndVlanTciAreOutsideTheIcrc) {
  for (auto& c : flip_cases(seed() + 6)) {
    std::vector<std::size_t> offsets;
    for (std::size_t off = 0; off < 12; ++off) offsets.push_back(off);
    for (std::size_t tag = 0; tag < c.frame.spec.eth.vlan_count; ++tag) {
      offsets.push_back(sizeof(EthernetHeader) + tag * sizeof(VlanTag));
      offsets.push_back(sizeof(EthernetHeader) + tag * sizeof(VlanTag) + 1);
    }
    for (std::size_t off : offsets) {
      for (unsigned bit = 0; bit < 8; ++bit) {
        auto f = c.bytes;
        f[off] ^= std::byte{static_cast<std::uint8_t>(1u << bit)};
        Packet p;
        ASSERT_EQ(parse_frame(f, {}, p), ParseError::None);
        ASSERT_EQ(p.icrc_status, IcrcStatus::Ok) << "frame byte " << off << " bit " << bit;
      }
    }
  }
}

}  // namespace
}  // namespace roce::proto
