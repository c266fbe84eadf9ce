// tcprewrite for RoCE (frame_rewrite.hpp): each rule, checksums and ICRCs computed again, wrong
// ICRCs kept wrong, other traffic left alone.
#include "apps/replay/frame_rewrite.hpp"

#include <gtest/gtest.h>

#include "protocol/builder.hpp"
#include "protocol/parser.hpp"

namespace roce::replay::frame_rewrite_test {
namespace {

using namespace roce::proto;

std::vector<std::byte> frame(Opcode op, std::uint32_t payload = 8, bool ipv6 = false) {
  FrameSpec s;
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  if (ipv6) {
    s.ip_version = IpVersion::V6;
    s.ipv6.src[15] = 1;
    s.ipv6.dst[15] = 2;
  }
  s.bth.opcode = raw(op);
  s.bth.dest_qp.set(0x11);
  s.bth.psn.set(0xFFFFFE);
  s.ext.deth.src_qp.set(0x22);
  s.ext.deth.qkey.set(0x1234);
  std::vector<std::byte> out(layout_frame(s, payload).length);
  EXPECT_TRUE(build_frame(s, std::vector<std::byte>(payload, std::byte{1}), out, CrcBackend::Isal).ok());
  return out;
}

Packet parse(const std::vector<std::byte>& f) {
  Packet p;
  EXPECT_EQ(parse_frame(f, {}, p), ParseError::None);
  return p;
}

RewriteRules everything() {
  RewriteRules r;
  r.src_mac = MacAddr{0x02, 0xAA, 0, 0, 0, 1};
  r.dst_mac = MacAddr{0x02, 0xAA, 0, 0, 0, 2};
  r.ip_map.push_back(*parse_ip_pair("10.0.0.1=192.168.5.1"));
  r.ip_map.push_back(*parse_ip_pair("10.0.0.2=192.168.5.2"));
  r.udp_sport = 0xC0DE;
  r.qpn_map[0x11] = 0x111;
  r.qpn_map[0x22] = 0x222;
  r.psn_offset = 3;
  return r;
}

TEST(FrameRewrite, EveryRuleAppliesAndTheChecksumsAndIcrcAreRight) {
  auto f = frame(Opcode::UdSendOnly);
  RewriteCounts c;
  EXPECT_EQ(rewrite_frame(f, everything(), c), RewriteOutcome::Changed);
  const Packet p = parse(f);
  EXPECT_EQ(p.eth.src, (MacAddr{0x02, 0xAA, 0, 0, 0, 1}));
  EXPECT_EQ(p.ipv4.src, (Ipv4Addr{192, 168, 5, 1}));
  EXPECT_EQ(p.ipv4.dst, (Ipv4Addr{192, 168, 5, 2}));
  EXPECT_TRUE(p.ipv4_checksum_ok);
  EXPECT_EQ(p.udp_src_port, 0xC0DE);
  EXPECT_EQ(p.dest_qp(), 0x111u);
  EXPECT_EQ(p.ext.deth.source_qp(), 0x222u);
  EXPECT_EQ(p.ext.deth.qkey.get(), 0x1234u);
  EXPECT_EQ(p.psn(), 1u);  // 0xFFFFFE + 3 wraps
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  EXPECT_EQ(c.frames, 1u);
  EXPECT_EQ(c.icrcs, 1u);
  EXPECT_EQ(c.icrcs_kept_bad, 0u);
  EXPECT_EQ(c.ip_checksums, 1u);
  EXPECT_EQ(c.qpns, 1u);
}

TEST(FrameRewrite, AWrongIcrcStaysWrongBySameBits) {
  auto f = frame(Opcode::RcSendOnly);
  f.back() ^= std::byte{0x5A};
  const Packet before = parse(f);
  ASSERT_EQ(before.icrc_status, IcrcStatus::Bad);
  RewriteCounts c;
  rewrite_frame(f, everything(), c);
  const Packet after = parse(f);
  EXPECT_EQ(after.icrc_status, IcrcStatus::Bad);
  EXPECT_EQ(c.icrcs_kept_bad, 1u);
  // Put the bits back: the rewritten frame is then whole.
  f.back() ^= std::byte{0x5A};
  EXPECT_EQ(parse(f).icrc_status, IcrcStatus::Ok);
}

TEST(FrameRewrite, CnpsKeepTheirPsnAndIpv6Works) {
  auto cnp = frame(Opcode::Cnp, 0);
  RewriteRules r;
  r.psn_offset = 5;
  RewriteCounts c;
  EXPECT_EQ(rewrite_frame(cnp, r, c), RewriteOutcome::Unchanged);
  EXPECT_EQ(parse(cnp).psn(), 0xFFFFFEu);
  auto v6 = frame(Opcode::RcSendOnly, 8, true);
  r.ip_map.push_back(*parse_ip_pair("::1=fd00::1"));
  EXPECT_EQ(rewrite_frame(v6, r, c), RewriteOutcome::Changed);
  const Packet p = parse(v6);
  EXPECT_EQ(p.ipv6.src[0], 0xFD);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(FrameRewrite, OtherTrafficGetsOnlyItsMacs) {
  auto tcp = frame(Opcode::RcSendOnly);
  tcp[14 + 9] = std::byte{6};
  const auto original = tcp;
  RewriteRules r = everything();
  RewriteCounts c;
  EXPECT_EQ(rewrite_frame(tcp, r, c), RewriteOutcome::NotRoce);
  EXPECT_EQ(c.not_roce, 1u);
  EXPECT_EQ(c.macs, 1u);
  EXPECT_TRUE(std::equal(tcp.begin() + 12, tcp.end(), original.begin() + 12));
}

TEST(FrameRewrite, NonZeroUdpChecksumIsComputedAgain) {
  FrameSpec s;
  s.bth.opcode = raw(Opcode::RcSendOnly);
  s.udp_checksum = 0x1111;
  std::vector<std::byte> f(layout_frame(s, 4).length);
  ASSERT_TRUE(build_frame(s, std::vector<std::byte>(4), f, CrcBackend::Isal).ok());
  RewriteRules r;
  r.udp_sport = 7;
  RewriteCounts c;
  rewrite_frame(f, r, c);
  // A correct UDP checksum sums, with the pseudo header, to 0xFFFF.
  const Packet p = parse(f);
  EXPECT_NE(p.udp_checksum, 0x1111);
  EXPECT_NE(p.udp_checksum, 0);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(FrameRewrite, MapEntriesParseOrSayNo) {
  EXPECT_TRUE(parse_ip_pair("10.0.0.1=10.0.0.2"));
  EXPECT_FALSE(parse_ip_pair("10.0.0.1=::1"));
  EXPECT_FALSE(parse_ip_pair("10.0.0.1"));
  EXPECT_EQ(parse_qpn_pair("0x11=17")->second, 17u);
  EXPECT_FALSE(parse_qpn_pair("0x1000000=1"));
  EXPECT_FALSE(parse_qpn_pair("a=b"));
}

}  // namespace
}  // namespace roce::replay::frame_rewrite_test
