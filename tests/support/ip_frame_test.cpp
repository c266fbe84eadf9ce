// The switch-side frame helpers: finding the IP header past VLAN tags, and CE marking that keeps
// the IPv4 checksum and the ICRC valid.
#include "tests/support/ip_frame.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "protocol/builder.hpp"
#include "protocol/checksum.hpp"
#include "protocol/parser.hpp"

namespace roce::test::ip_frame_test {
namespace {

using namespace roce::proto;

std::vector<std::byte> roce_frame(IpVersion v, Ecn ecn, std::uint8_t vlans = 0) {
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
  s.ipv4.tos = 26 << 2;  // a DSCP the mark must keep
  s.ipv6.src[15] = 1;
  s.ipv6.dst[15] = 2;
  s.ipv6.traffic_class = 26 << 2;
  s.ipv6.flow_label = 0xABCDE;
  s.set_ecn(ecn);
  s.bth.opcode = raw(Opcode::RcSendOnly);
  s.bth.dest_qp.set(0x11);
  const std::vector<std::byte> payload(100, std::byte{0x5A});
  std::vector<std::byte> f(512);
  const FrameLayout l = build_frame(s, payload, MutableByteSpan{f.data(), f.size()}, CrcBackend::Portable);
  EXPECT_TRUE(l.ok()) << to_string(l.error);
  f.resize(l.length);
  return f;
}

Packet parsed(const std::vector<std::byte>& f) {
  Packet p;
  ParseOptions o;
  o.crc = CrcBackend::Portable;
  EXPECT_EQ(parse_frame(f, o, p), ParseError::None);
  return p;
}

struct Case {
  IpVersion version;
  std::uint8_t vlans;
};

class MarkCe : public ::testing::TestWithParam<Case> {};

TEST_P(MarkCe, SetsCeKeepsDscpAndLeavesChecksumAndIcrcValid) {
  for (Ecn ect : {Ecn::Ect0, Ecn::Ect1}) {
    std::vector<std::byte> f = roce_frame(GetParam().version, ect, GetParam().vlans);
    const std::vector<std::byte> before = f;
    ASSERT_TRUE(mark_ce(f));
    EXPECT_EQ(ip_ecn(f), Ecn::Ce);
    const Packet p = parsed(f);
    EXPECT_EQ(p.ecn(), Ecn::Ce);
    EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
    EXPECT_TRUE(p.ipv4_checksum_ok);
    const auto ip = find_ip_header(f);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->offset, 14u + 4u * GetParam().vlans);
    if (GetParam().version == IpVersion::V4) {
      EXPECT_EQ(p.ipv4.tos, (26 << 2) | 3);
      EXPECT_EQ(internet_checksum(std::span{f}.subspan(ip->offset, sizeof(Ipv4Header))), 0);
    } else {
      EXPECT_EQ(p.ipv6.traffic_class, (26 << 2) | 3);
      EXPECT_EQ(p.ipv6.flow_label, 0xABCDEu);
    }
    // Only the ECN bits and the IPv4 checksum changed.
    std::size_t changed = 0;
    for (std::size_t i = 0; i < f.size(); ++i) changed += f[i] != before[i];
    EXPECT_LE(changed, GetParam().version == IpVersion::V4 ? 3u : 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(IpFrame, MarkCe,
                         ::testing::Values(Case{IpVersion::V4, 0}, Case{IpVersion::V4, 1}, Case{IpVersion::V4, 2},
                                           Case{IpVersion::V6, 0}, Case{IpVersion::V6, 2}),
                         [](const auto& info) {
                           return std::string(info.param.version == IpVersion::V4 ? "ipv4" : "ipv6") + "_vlans" +
                                  std::to_string(info.param.vlans);
                         });

TEST(IpFrame, NotEctAndCeFramesAreLeftAlone) {
  for (Ecn e : {Ecn::NotEct, Ecn::Ce}) {
    std::vector<std::byte> f = roce_frame(IpVersion::V4, e);
    const std::vector<std::byte> before = f;
    EXPECT_FALSE(mark_ce(f));
    EXPECT_EQ(f, before);
  }
}

TEST(IpFrame, NonIpAndTruncatedFramesHaveNoIpHeader) {
  std::vector<std::byte> arp(60);
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  EXPECT_FALSE(find_ip_header(arp));
  EXPECT_FALSE(mark_ce(arp));
  EXPECT_EQ(ip_ecn(arp), Ecn::NotEct);
  std::vector<std::byte> f = roce_frame(IpVersion::V4, Ecn::Ect0);
  f.resize(14 + 19);
  EXPECT_FALSE(find_ip_header(f));
  EXPECT_FALSE(mark_ce(f));
  f = roce_frame(IpVersion::V4, Ecn::Ect0, 2);
  f.resize(14 + 6);  // inside the second tag
  EXPECT_FALSE(find_ip_header(f));
}

TEST(IpFrame, DestinationIsReadPastTheTags) {
  const auto v4 = ip_destination(roce_frame(IpVersion::V4, Ecn::Ect0, 2));
  ASSERT_TRUE(v4);
  EXPECT_EQ(*v4, rdma::IpAddress::ipv4({10, 0, 0, 2}));
  const auto v6 = ip_destination(roce_frame(IpVersion::V6, Ecn::Ect0));
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->version, IpVersion::V6);
  EXPECT_EQ(v6->v6[15], 2);
}

}  // namespace
}  // namespace roce::test::ip_frame_test
