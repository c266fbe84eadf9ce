// A QP's flow template (protocol/write_only_match.hpp, FlowTemplate) against parse_frame, frame
// by frame, for its two kinds: an RC ACKNOWLEDGE's flow (a requester's ACKs) and an RC WRITE
// ONLY's (a responder's). A frame matches exactly when parse_frame accepts it with a good ICRC
// and IPv4 checksum as a frame of the template's flow and opcode (Ethernet header untagged, IPv4
// without options, addresses, TOS, TTL, flags, UDP ports, P_Key, reserved byte, QPN) within the
// lengths the kind takes; and the matched frame's Packet is parse_frame's, field by field. Frames:
// every header bit flipped (corrupted, and with checksum and ICRC made right again), both CRC
// paths, every length edit, cuts against an unreadable page, padding, random frames of the flow.
#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "protocol/builder.hpp"
#include "protocol/crc32_short.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/parser.hpp"
#include "protocol/write_only_match.hpp"
#include "tests/protocol/match_frames.hpp"

namespace roce::proto::flow_template_test {
namespace {

using test::match_frames::engine_options;
using test::match_frames::every_bit;
using Frame = test::match_frames::Frame;
using test::match_frames::build;
namespace fe = test::frame_edit;

// An ACK from the responder at 10.0.0.2 to our QP 0x11 (or, `write`, a WRITE ONLY to it).
FrameSpec flow_spec(bool write) {
  FrameSpec s;
  s.eth.dst = {2, 0, 0, 0, 0, 0x01};
  s.eth.src = {2, 0, 0, 0, 0, 0x02};
  s.ipv4.src = {10, 0, 0, 2};
  s.ipv4.dst = {10, 0, 0, 1};
  s.ipv4.tos = 0x68;
  s.ipv4.ttl = 64;
  s.set_ecn(Ecn::Ect0);
  s.udp_src_port = 0xC011;
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0x000011);
  s.bth.psn.set(0xFFFFFE);
  if (write) {
    s.bth.opcode = raw(Opcode::RcWriteOnly);
    s.bth.ack_req = Bth::kAckReq;
    s.ext.reth.va.set(0x100040);
    s.ext.reth.rkey.set(0x2A01);
  } else {
    s.bth.opcode = raw(Opcode::RcAck);
    s.ext.aeth.syndrome = 0x1F;  // ACK, credits invalid
    s.ext.aeth.msn.set(7);
  }
  return s;
}

// Every field of two packets; "" when they agree, else the first that differs.
std::string differs(const Packet& a, const Packet& b) {
#define SAME(f) \
  if (!(a.f == b.f)) return #f
  SAME(has_l2); SAME(l3_offset); SAME(l4_offset); SAME(bth_offset); SAME(payload_offset); SAME(datagram_end);
  SAME(snap_truncated); SAME(eth.dst); SAME(eth.src); SAME(eth.vlan_count); SAME(eth.vlan_tpid); SAME(eth.vlan_tci);
  SAME(ip_version); SAME(ipv4.src); SAME(ipv4.dst); SAME(ipv4.tos); SAME(ipv4.id); SAME(ipv4.flags_fragment);
  SAME(ipv4.ttl); SAME(ipv6.src); SAME(ipv6.dst); SAME(ipv6.traffic_class); SAME(ipv6.flow_label); SAME(ipv6.hop_limit);
  SAME(ipv4_checksum); SAME(ipv4_checksum_ok); SAME(udp_src_port); SAME(udp_dst_port); SAME(udp_length);
  SAME(udp_checksum); SAME(info); SAME(payload.data()); SAME(payload.size()); SAME(payload_length); SAME(icrc);
  SAME(icrc_status); SAME(icrc_partial);
#undef SAME
  if (std::memcmp(&a.bth, &b.bth, sizeof(Bth)) != 0) return "bth";
  if (std::memcmp(&a.ext, &b.ext, sizeof(ExtHeaders)) != 0) return "ext";
  return "";
}
static_assert(sizeof(ExtHeaders) == 96, "ExtHeaders has no padding for memcmp to see");

// Whether parse_frame's packet is one of the template's flow and opcode with nothing left to
// check (`flow`: the template's frame, parsed).
bool of_the_flow(const Packet& p, const Packet& flow) {
  return p.icrc_status == IcrcStatus::Ok && p.ipv4_checksum_ok && p.has_l2 && p.eth.vlan_count == 0 &&
         p.ip_version == IpVersion::V4 && p.l4_offset == fe::kUdpOffset && p.eth.dst == flow.eth.dst &&
         p.eth.src == flow.eth.src && p.ipv4.src == flow.ipv4.src && p.ipv4.dst == flow.ipv4.dst &&
         p.ipv4.tos == flow.ipv4.tos && p.ipv4.ttl == flow.ipv4.ttl && p.ipv4.flags_fragment == flow.ipv4.flags_fragment &&
         p.udp_src_port == flow.udp_src_port && p.bth.opcode == flow.bth.opcode && p.bth.pkey.get() == flow.bth.pkey.get() &&
         p.bth.resv8a == flow.bth.resv8a && p.dest_qp() == flow.dest_qp();
}

class Matcher {
 public:
  explicit Matcher(const Frame& flow_frame, ParseOptions opts = engine_options(nullptr)) : opts_(opts) {
    EXPECT_EQ(parse_frame(flow_frame, opts_, flow_), ParseError::None);
    EXPECT_TRUE(t_.learn(flow_frame, flow_, opts_));
  }

  // The match against the parse for one frame; `what` names it in a failure. `most`: the
  // largest payload+pad the kind takes.
  void expect_as_parsed(ByteSpan f, const std::string& what, std::size_t most = kWriteOnlyMatchMaxPayload) {
    Packet p;
    const ParseError err = parse_frame(f, opts_, p);
    const bool ack = flow_.bth.opcode == raw(Opcode::RcAck);
    const bool want = err == ParseError::None && of_the_flow(p, flow_) &&
                      (ack || p.udp_length - (sizeof(UdpHeader) + sizeof(Bth) + sizeof(Reth) + kIcrcBytes) <= most);
    alignas(Packet) std::byte storage[sizeof(Packet)];
    std::memset(storage, 0xA5, sizeof storage);  // whatever the caller's storage held (the engine's is raw)
    Packet& m = *std::launder(reinterpret_cast<Packet*>(storage));
    const bool got = t_.match(f, m);
    ++(got ? matched : refused);
    ASSERT_EQ(got, want) << what << " (parse " << to_string(err) << ")";
    if (got) {
      EXPECT_EQ(differs(m, p), "") << what;
    }
  }

  FlowTemplate& tmpl() { return t_; }
  const Packet& flow() const { return flow_; }
  std::size_t matched = 0, refused = 0;

 private:
  ParseOptions opts_;
  Packet flow_;
  FlowTemplate t_;
};

TEST(FlowTemplate, EveryAckHeaderBitFlippedMatchesExactlyWhenParsedAsTheFlowsAckWithTheParsedPacket) {
  for (const bool kernel : {true, false}) {
    crc32_short_use(kernel);
    IcrcHeaderCache cache;
    const Frame base = build(flow_spec(false));
    ASSERT_EQ(base.size(), 62u);
    Matcher m(base, engine_options(&cache));
    m.expect_as_parsed(base, "the flow's own frame");
    every_bit(m, base, base.size());
    // The PSN, A bit, AETH, IP ID, UDP checksum, SE and MigReq flips resealed are other ACKs of
    // the flow: matched; every other flip, and every one not resealed: refused.
    EXPECT_GT(m.matched, 90u);
    EXPECT_GT(m.refused, 800u);
  }
  crc32_short_use(true);
}

TEST(FlowTemplate, EveryWriteOnlyHeaderBitFlippedMatchesExactlyWhenParsedAsTheFlowsWriteOnly) {
  for (const bool kernel : {true, false}) {
    crc32_short_use(kernel);
    const Frame base = build(flow_spec(true), 64);
    Matcher m(base);
    every_bit(m, base, fe::kIpOffset + 60);
    EXPECT_GT(m.matched, 100u);
    EXPECT_GT(m.refused, 700u);
  }
  crc32_short_use(true);
}

TEST(FlowTemplate, OtherAcksOfTheFlowAreMatchedWithTheirOwnFields) {
  std::mt19937 rng(87);
  Matcher m(build(flow_spec(false)));
  for (int i = 0; i < 2000; ++i) {
    FrameSpec s = flow_spec(false);
    s.bth.psn.set(rng() & 0xFFFFFF);
    s.bth.ack_req = static_cast<std::uint8_t>(rng());
    s.bth.flags = static_cast<std::uint8_t>(rng() & (Bth::kSe | Bth::kMigReq));
    s.ext.aeth.syndrome = static_cast<std::uint8_t>(rng());  // ACKs, NAKs, RNR NAKs, reserved
    s.ext.aeth.msn.set(rng() & 0xFFFFFF);
    s.ipv4.id = static_cast<std::uint16_t>(rng());
    s.udp_checksum = static_cast<std::uint16_t>(rng());
    m.expect_as_parsed(build(s), "random ACK " + std::to_string(i));
  }
  EXPECT_EQ(m.matched, 2000u);
}

TEST(FlowTemplate, EveryWriteOnlyLengthAndPadMatchesUpToTheLimitWithTheParsedPacket) {
  Matcher m(build(flow_spec(true), 64));
  for (std::uint32_t len = 0; len <= kWriteOnlyMatchMaxPayload + 12; ++len) {
    const Frame f = build(flow_spec(true), len, static_cast<std::uint8_t>(len));
    for (std::uint8_t pad = 0; pad < 4; ++pad) {
      Frame g = f;
      auto bth = fe::read_header<Bth>(g, fe::kBthOffset);
      bth.flags = static_cast<std::uint8_t>((bth.flags & ~Bth::kPadCntMask) | pad << Bth::kPadCntShift);
      fe::write_header(g, fe::kBthOffset, bth);
      fe::reseal(g);
      m.expect_as_parsed(g, "payload " + std::to_string(len) + " PadCnt " + std::to_string(pad));
    }
  }
  EXPECT_EQ(m.matched, 1u + 4u * 200u);
}

TEST(FlowTemplate, AckLengthsThatDisagreeAreRefusedAsParsed) {
  const Frame base = build(flow_spec(false));
  Matcher m(base);
  // Bytes after the AETH (a payload an ACK may not carry) or the AETH cut, lengths fixed; each
  // length field alone off; every cut; Ethernet padding.
  test::match_frames::length_edits(m, base, -8, 12);
  // A PadCnt on the ACK (resealed): the parser's PadCntInconsistent.
  for (std::uint8_t pad = 1; pad < 4; ++pad) {
    Frame f = base;
    auto bth = fe::read_header<Bth>(f, fe::kBthOffset);
    bth.flags = static_cast<std::uint8_t>(bth.flags | pad << Bth::kPadCntShift);
    fe::write_header(f, fe::kBthOffset, bth);
    fe::reseal(f);
    m.expect_as_parsed(f, "PadCnt " + std::to_string(pad));
  }
  // Matched: the tail left as it was (1), each field left as it was (2), every padded frame (16).
  EXPECT_EQ(m.matched, 1u + 2u + 16u);
}

TEST(FlowTemplate, AShortAckAtTheEndOfReadableMemoryIsRefusedWithoutAReadPastIt) {
  test::GuardedPage page;
  ASSERT_TRUE(page.ok());
  for (const bool write : {false, true}) {
    const Frame base = build(flow_spec(write), write ? 8 : 0);
    Matcher m(base);
    test::match_frames::at_page_end(m, page, base);
    EXPECT_EQ(m.matched, 1u);
  }
}

TEST(FlowTemplate, CorruptIcrcOrAethIsRefused) {
  for (const bool kernel : {true, false}) {
    crc32_short_use(kernel);
    const Frame base = build(flow_spec(false));
    Matcher m(base);
    for (std::size_t at = fe::kBthOffset; at < base.size(); ++at)
      for (int bit = 0; bit < 8; ++bit) {
        Frame f = base;
        f[at] ^= static_cast<std::byte>(1u << bit);
        m.expect_as_parsed(f, "byte " + std::to_string(at) + " bit " + std::to_string(bit));
      }
    EXPECT_EQ(m.matched, 0u);
  }
  crc32_short_use(true);
}

TEST(FlowTemplate, FramesThatCannotStandForTheFlowLearnNothing) {
  const Frame plain = build(flow_spec(false));
  FrameSpec ce = flow_spec(false);
  ce.set_ecn(Ecn::Ce);
  FrameSpec tagged = flow_spec(false);
  tagged.eth.vlan_count = 1;
  tagged.eth.vlan_tpid[0] = kEtherTypeVlan;
  tagged.eth.vlan_tci[0] = 5;
  FrameSpec v6 = flow_spec(false);
  v6.ip_version = IpVersion::V6;
  FrameSpec send = flow_spec(true);  // another opcode: a template per opcode it knows
  send.bth.opcode = raw(Opcode::RcSendOnly);
  Frame bad_checksum = plain;
  bad_checksum[fe::kIpOffset + offsetof(Ipv4Header, checksum)] ^= std::byte{1};
  Frame bad_icrc = plain;
  bad_icrc.back() ^= std::byte{1};
  Frame large = build(flow_spec(true), kWriteOnlyMatchMaxPayload + 4);
  const ParseOptions opts = engine_options(nullptr);
  for (const Frame& f : {build(ce), build(tagged), build(v6), build(send, 8), bad_checksum, bad_icrc, large}) {
    Packet p;
    ASSERT_EQ(parse_frame(f, opts, p), ParseError::None);
    FlowTemplate t;
    EXPECT_FALSE(t.learn(f, p, opts));
    EXPECT_FALSE(t.active());
    Packet out;
    EXPECT_FALSE(t.match(f, out));
    EXPECT_FALSE(t.match(plain, out));
  }
  // Without the ICRC checked there is no Ok to stand for.
  ParseOptions off = opts;
  off.verify_icrc = false;
  Packet p;
  ASSERT_EQ(parse_frame(plain, off, p), ParseError::None);
  FlowTemplate t;
  EXPECT_FALSE(t.learn(plain, p, off));
}

TEST(FlowTemplate, ALearntTemplateFollowsItsFlowAndASuspendedOneMatchesNothing) {
  const Frame base = build(flow_spec(false));
  Matcher m(base);
  Packet out;
  EXPECT_TRUE(m.tmpl().match(base, out));
  m.tmpl().suspend();
  EXPECT_FALSE(m.tmpl().active());
  EXPECT_FALSE(m.tmpl().match(base, out));
  // Another flow (the peer's UDP source port changed): learnt, the old one no longer matched.
  FrameSpec other = flow_spec(false);
  other.udp_src_port = 0xC012;
  const Frame o = build(other);
  Packet p;
  ASSERT_EQ(parse_frame(o, engine_options(nullptr), p), ParseError::None);
  EXPECT_TRUE(m.tmpl().learn(o, p, engine_options(nullptr)));
  EXPECT_TRUE(m.tmpl().match(o, out));
  EXPECT_EQ(differs(out, p), "");
  EXPECT_FALSE(m.tmpl().match(base, out));
  // A frame it cannot learn (a CE mark, a VLAN tag) leaves the flow it holds.
  FrameSpec ce = other;
  ce.set_ecn(Ecn::Ce);
  FrameSpec tagged = other;
  tagged.eth.vlan_count = 1;
  tagged.eth.vlan_tpid[0] = kEtherTypeVlan;
  for (const Frame& f : {build(ce), build(tagged)}) {
    Packet q;
    ASSERT_EQ(parse_frame(f, engine_options(nullptr), q), ParseError::None);
    EXPECT_FALSE(m.tmpl().learn(f, q, engine_options(nullptr)));
    EXPECT_TRUE(m.tmpl().match(o, out));
  }
}

TEST(FlowTemplate, AFreshTemplateMatchesNothing) {
  // (its image all zeros: a frame of zeros with a CRC to suit would match an active one)
  EXPECT_FALSE(FlowTemplate{}.active());
  EXPECT_FALSE(WriteOnlyTemplate{}.active());
}

}  // namespace
}  // namespace roce::proto::flow_template_test
