// Marking a frame CE the way the link emulator's bottleneck does: behind VLAN tags, IPv4 and
// IPv6, with the IPv4 header checksum kept right and the ICRC untouched.
#include "protocol/ecn_mark.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dataplane/arp.hpp"
#include "protocol/builder.hpp"
#include "protocol/checksum.hpp"
#include "protocol/parser.hpp"

namespace roce::netsim::ecn_mark_test {
namespace {

using namespace roce::dp;
using namespace roce::proto;

std::vector<std::byte> roce_frame(IpVersion v, Ecn ecn, std::uint8_t vlans = 0, std::uint8_t dscp = 26) {
  FrameSpec s;
  s.eth.src = {2, 0, 0, 0, 0, 1};
  s.eth.dst = {2, 0, 0, 0, 0, 2};
  s.eth.vlan_count = vlans;
  s.eth.vlan_tpid = {kEtherTypeQinQ, kEtherTypeVlan};
  if (vlans == 1) s.eth.vlan_tpid[0] = kEtherTypeVlan;
  s.eth.vlan_tci = {0x6005, 0x0007};
  s.ip_version = v;
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.ipv4.tos = static_cast<std::uint8_t>(dscp << 2 | static_cast<std::uint8_t>(ecn));
  s.ipv6.src[15] = 1;
  s.ipv6.dst[15] = 2;
  s.ipv6.traffic_class = static_cast<std::uint8_t>(dscp << 2 | static_cast<std::uint8_t>(ecn));
  s.ipv6.flow_label = 0xABCDE;
  s.bth.opcode = raw(Opcode::RcSendOnly);
  s.bth.dest_qp.set(0x12);
  s.bth.psn.set(7);
  std::vector<std::byte> payload(100, std::byte{0x5A});
  std::vector<std::byte> out(512);
  const auto l = build_frame(s, payload, out, CrcBackend::Portable);
  EXPECT_TRUE(l.ok()) << to_string(l.error);
  out.resize(l.length);
  return out;
}

Packet parse(const std::vector<std::byte>& f) {
  Packet p;
  EXPECT_EQ(parse_frame(f, {}, p), ParseError::None);
  return p;
}

TEST(EcnMark, Ipv4CeKeepsTheHeaderChecksumAndIcrcValid) {
  for (Ecn e : {Ecn::Ect0, Ecn::Ect1, Ecn::NotEct, Ecn::Ce}) {
    auto f = roce_frame(IpVersion::V4, e);
    const auto at = locate_ecn(f);
    ASSERT_TRUE(at);
    EXPECT_FALSE(at->ipv6);
    EXPECT_EQ(at->l3_offset, sizeof(EthernetHeader));
    EXPECT_EQ(read_ecn(f, *at), e);
    set_ce(f, *at);
    EXPECT_EQ(read_ecn(f, *at), Ecn::Ce);
    const Packet p = parse(f);
    EXPECT_EQ(p.ecn(), Ecn::Ce);
    EXPECT_EQ(p.ipv4.tos >> 2, 26);
    EXPECT_TRUE(p.ipv4_checksum_ok) << to_string(e);
    EXPECT_EQ(p.icrc_status, IcrcStatus::Ok) << to_string(e);
  }
}

// The incremental update must agree with a checksum computed from scratch for every header,
// including the one's-complement corner cases a random sweep reaches.
TEST(EcnMark, IncrementalChecksumEqualsRecomputedOverRandomHeaders) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> f(sizeof(EthernetHeader) + sizeof(Ipv4Header));
    EthernetHeader eth{};
    eth.ether_type.set(kEtherTypeIpv4);
    store_header(f, 0, eth);
    Ipv4Header h{};
    for (std::size_t k = 0; k < sizeof h; ++k) reinterpret_cast<std::uint8_t*>(&h)[k] = static_cast<std::uint8_t>(rng());
    h.version_ihl = 0x45;
    h.checksum.set(0);
    h.checksum.set(internet_checksum({reinterpret_cast<const std::byte*>(&h), sizeof h}));
    store_header(f, sizeof eth, h);
    const auto at = locate_ecn(f);
    ASSERT_TRUE(at);
    set_ce(f, *at);
    Ipv4Header after = load_header<Ipv4Header>(f, sizeof eth);
    ASSERT_EQ(after.tos, h.tos | 3);
    ASSERT_EQ(internet_checksum({f.data() + sizeof eth, sizeof after}), 0) << "header " << i;
  }
}

TEST(EcnMark, Ipv6TrafficClassGetsCeAndFlowLabelStays) {
  auto f = roce_frame(IpVersion::V6, Ecn::Ect1);
  const auto at = locate_ecn(f);
  ASSERT_TRUE(at);
  EXPECT_TRUE(at->ipv6);
  set_ce(f, *at);
  const Packet p = parse(f);
  EXPECT_EQ(p.ecn(), Ecn::Ce);
  EXPECT_EQ(p.ipv6.traffic_class, 26 << 2 | 3);
  EXPECT_EQ(p.ipv6.flow_label, 0xABCDEu);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(EcnMark, FoundBehindOneAndTwoVlanTags) {
  for (std::uint8_t tags : {1, 2}) {
    for (IpVersion v : {IpVersion::V4, IpVersion::V6}) {
      auto f = roce_frame(v, Ecn::Ect0, tags);
      const auto at = locate_ecn(f);
      ASSERT_TRUE(at);
      EXPECT_EQ(at->l3_offset, sizeof(EthernetHeader) + tags * sizeof(VlanTag));
      set_ce(f, *at);
      const Packet p = parse(f);
      EXPECT_EQ(p.ecn(), Ecn::Ce);
      EXPECT_EQ(p.eth.vlan_count, tags);
      EXPECT_TRUE(p.ipv4_checksum_ok);
      EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
    }
  }
}

TEST(EcnMark, NotIpOrTooShortHasNoEcnField) {
  std::vector<std::byte> arp(kArpFrameBytes);
  build_arp_request({2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, {10, 0, 0, 2}, arp);
  EXPECT_FALSE(locate_ecn(arp));
  auto f = roce_frame(IpVersion::V4, Ecn::Ect0);
  EXPECT_FALSE(locate_ecn({f.data(), sizeof(EthernetHeader) + sizeof(Ipv4Header) - 1}));
  EXPECT_FALSE(locate_ecn({f.data(), 5}));
  auto t = roce_frame(IpVersion::V6, Ecn::Ect0, 2);
  EXPECT_FALSE(locate_ecn({t.data(), sizeof(EthernetHeader) + 6}));
  // An IPv4 EtherType over a header of another version is not marked.
  f[sizeof(EthernetHeader)] = std::byte{0x65};
  EXPECT_FALSE(locate_ecn(f));
}

}  // namespace
}  // namespace roce::netsim::ecn_mark_test
