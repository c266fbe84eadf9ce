// The run's WRITE ONLY template (protocol/write_only_match.hpp) against parse_frame, frame by
// frame: a frame matches exactly when parse_frame accepts it as a frame Engine::straight would
// pass (RC WRITE ONLY, ICRC checked and good, IPv4 without options and with a good checksum, no
// CE mark, the run's P_Key and QPN, FECN/BECN clear, the flow's destination address) and it
// carries the flow's other header bytes (Ethernet header untagged, IPv4 source, TOS, TTL,
// flags, UDP ports) with at most kWriteOnlyMatchMaxPayload bytes of payload and pad; and a
// matched frame reads the parsed packet's values. Frames: every header bit flipped (with the
// checksum and ICRC made right again, and not), every length, pad counts, truncation, Ethernet
// padding, corrupt ICRCs and payloads, both CRC paths.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "protocol/builder.hpp"
#include "protocol/crc32_short.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/parser.hpp"
#include "protocol/write_only_match.hpp"
#include "tests/protocol/match_frames.hpp"

namespace roce::proto::write_only_match_test {
namespace {

using test::match_frames::engine_options;
using Frame = test::match_frames::Frame;
using test::match_frames::build;
namespace fe = test::frame_edit;

FrameSpec flow_spec() {
  FrameSpec s;
  s.eth.dst = {2, 0, 0, 0, 0, 0xAA};
  s.eth.src = {2, 0, 0, 0, 0, 0xBB};
  s.ipv4.src = {10, 0, 0, 11};
  s.ipv4.dst = {10, 0, 0, 1};
  s.ipv4.tos = 0x68;
  s.ipv4.ttl = 63;
  s.set_ecn(Ecn::Ect0);
  s.udp_src_port = 0xD1F3;
  s.bth.opcode = raw(Opcode::RcWriteOnly);
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0x000123);
  s.bth.psn.set(0xFFFFF0);
  s.bth.ack_req = Bth::kAckReq;
  s.ext.reth.va.set(0x100040);
  s.ext.reth.rkey.set(0x2A01);
  return s;
}

// Whether Engine::straight passes the frame once parse_frame has read it (`flow`: the template's
// frame, parsed): the tests that sit between the parse and the run.
bool straight_after_parse(ByteSpan f, const ParseOptions& o, const Packet& flow, Packet& p) {
  if (parse_frame(f, o, p) != ParseError::None) return false;
  return p.icrc_status == IcrcStatus::Ok && p.bth.opcode == raw(Opcode::RcWriteOnly) && p.ip_version == IpVersion::V4 &&
         p.l4_offset - p.l3_offset == kIpv4HeaderBytes && p.ipv4_checksum_ok && p.ecn() != Ecn::Ce &&
         p.bth.pkey.get() == flow.bth.pkey.get() && p.bth.resv8a == 0 && p.dest_qp() == flow.dest_qp() &&
         p.ipv4.dst == flow.ipv4.dst;
}

// The flow's other bytes, by field: what the template holds beyond straight's tests.
bool same_flow(const Packet& p, const Packet& flow) {
  return p.has_l2 && p.eth.vlan_count == 0 && p.eth.dst == flow.eth.dst && p.eth.src == flow.eth.src &&
         p.ipv4.src == flow.ipv4.src && p.ipv4.tos == flow.ipv4.tos && p.ipv4.ttl == flow.ipv4.ttl &&
         p.ipv4.flags_fragment == flow.ipv4.flags_fragment && p.udp_src_port == flow.udp_src_port;
}

class Matcher {
 public:
  explicit Matcher(const Frame& flow_frame, ParseOptions opts = engine_options(nullptr)) : opts_(opts) {
    EXPECT_EQ(parse_frame(flow_frame, opts_, flow_), ParseError::None);
    EXPECT_TRUE(t_.set(flow_frame, flow_, opts_));
  }

  // The match against the parse for one frame; `what` names it in a failure.
  void expect_as_parsed(ByteSpan f, const std::string& what, std::size_t most = kWriteOnlyMatchMaxPayload) {
    Packet p;
    const bool straight = straight_after_parse(f, opts_, flow_, p);
    const bool want = straight && same_flow(p, flow_) && p.udp_length - 40u <= most;
    MatchedWriteOnly m;
    const bool got = t_.match(f, m);
    ++(got ? matched : refused);
    ASSERT_EQ(got, want) << what << " (parse " << to_string(parse_frame(f, opts_, p)) << ", straight " << straight << ")";
    if (!got) return;
    EXPECT_EQ(m.psn(), p.psn()) << what;
    EXPECT_EQ(m.ack_requested(), p.bth.ack_requested()) << what;
    EXPECT_EQ(m.payload_length(), p.payload_length) << what;
    EXPECT_EQ(m.va(), p.ext.reth.va.get()) << what;
    EXPECT_EQ(m.rkey(), p.ext.reth.rkey.get()) << what;
    EXPECT_EQ(m.dma_length(), p.ext.reth.dma_length.get()) << what;
    EXPECT_EQ(m.payload(), p.payload.data()) << what;
  }

  WriteOnlyTemplate& tmpl() { return t_; }
  const Packet& flow() const { return flow_; }
  std::size_t matched = 0, refused = 0;

 private:
  ParseOptions opts_;
  Packet flow_;
  WriteOnlyTemplate t_;
};

// Every bit of the headers and the first payload bytes flipped alone.
void every_bit(Matcher& m, const Frame& base) { test::match_frames::every_bit(m, base, fe::kIpOffset + 60); }

TEST(WriteOnlyMatch, EveryHeaderBitFlippedMatchesExactlyWhenTheParsedFrameWouldGoStraight) {
  for (const bool kernel : {true, false}) {
    crc32_short_use(kernel);
    IcrcHeaderCache cache;
    const Frame base = build(flow_spec(), 64);
    Matcher m(base, engine_options(&cache));
    m.expect_as_parsed(base, "the flow's own frame");
    every_bit(m, base);
    // Some of the flips are other frames of the flow (PSN, A bit, RETH, IP ID, UDP checksum,
    // SE, MigReq): matched; every kept byte's flip and every unsealed one: refused.
    EXPECT_GT(m.matched, 100u);
    EXPECT_GT(m.refused, 700u);
  }
  crc32_short_use(true);
}

TEST(WriteOnlyMatch, EveryLengthAndPadMatchesUpToTheLimitAsParsed) {
  const Frame base = build(flow_spec(), 64);
  Matcher m(base);
  for (std::uint32_t len = 0; len <= kWriteOnlyMatchMaxPayload + 12; ++len) {
    const Frame f = build(flow_spec(), len, static_cast<std::uint8_t>(len));
    m.expect_as_parsed(f, "payload " + std::to_string(len));
    // The same bytes under every other PadCnt (lengths unchanged, resealed).
    for (std::uint8_t pad = 0; pad < 4; ++pad) {
      Frame g = f;
      auto bth = fe::read_header<Bth>(g, fe::kBthOffset);
      bth.flags = static_cast<std::uint8_t>((bth.flags & ~Bth::kPadCntMask) | pad << Bth::kPadCntShift);
      fe::write_header(g, fe::kBthOffset, bth);
      fe::reseal(g);
      m.expect_as_parsed(g, "payload " + std::to_string(len) + " PadCnt " + std::to_string(pad));
    }
  }
  // Each payload up to the limit as built (201), and its bytes under each PadCnt: one for the
  // empty payload (PadCnt 0), four for each other (payload+pad at least 4).
  EXPECT_EQ(m.matched, 201u + 1u + 4u * 200u);
}

TEST(WriteOnlyMatch, LengthsThatDisagreeAreRefusedAsParsed) {
  const Frame base = build(flow_spec(), 64);
  Matcher m(base);
  // Tails -40..12, each length field alone off, every cut, Ethernet padding.
  test::match_frames::length_edits(m, base, -40, 12);
  // Matched: the tails that keep payload+pad a multiple of 4 (-40, -36, ..., 12: 14), each field
  // left as it was (2), every padded frame (16).
  EXPECT_EQ(m.matched, 14u + 2u + 16u);
}

TEST(WriteOnlyMatch, AShortFrameAtTheEndOfReadableMemoryIsRefusedWithoutAReadPastIt) {
  // The 58 compared bytes are read only from a frame that holds them: every cut of the flow's
  // frame placed against a page nobody may read (a stray read faults).
  test::GuardedPage page;
  ASSERT_TRUE(page.ok());
  const Frame base = build(flow_spec(), 64);
  Matcher m(base);
  test::match_frames::at_page_end(m, page, base);
  EXPECT_EQ(m.matched, 1u);
  // The shortest frame parse_frame accepts (an empty SEND ONLY, 58 bytes) holds the compared
  // bytes: it makes the flow's template (as a WRITE ONLY's, straight_bth's expectation), read
  // to its last byte against the unreadable page and no further.
  FrameSpec send = flow_spec();
  send.bth.opcode = raw(Opcode::RcSendOnly);
  Frame f(128);
  f.resize(build_frame(send, {}, f, CrcBackend::Isal).length);
  ASSERT_EQ(f.size(), write_only_frame::kCompared);
  std::byte* at = page.data() + page.size() - f.size();
  std::memcpy(at, f.data(), f.size());
  Packet p;
  ASSERT_EQ(parse_frame(ByteSpan{at, f.size()}, engine_options(nullptr), p), ParseError::None);
  WriteOnlyTemplate t;
  EXPECT_TRUE(t.set(ByteSpan{at, f.size()}, p, engine_options(nullptr)));
  MatchedWriteOnly out;
  EXPECT_TRUE(t.match(base, out));
  EXPECT_FALSE(t.match(ByteSpan{at, f.size()}, out));
}

TEST(WriteOnlyMatch, OtherFramesOfTheFlowAreMatchedWithTheirOwnFields) {
  std::mt19937 rng(82);
  const Frame base = build(flow_spec(), 64);
  Matcher m(base);
  for (int i = 0; i < 2000; ++i) {
    FrameSpec s = flow_spec();
    s.bth.psn.set(rng() & 0xFFFFFF);
    s.bth.ack_req = static_cast<std::uint8_t>(rng());  // A and the reserved bits
    s.bth.flags = static_cast<std::uint8_t>(rng() & (Bth::kSe | Bth::kMigReq));
    s.ext.reth.va.set(static_cast<std::uint64_t>(rng()) << 32 | rng());
    s.ext.reth.rkey.set(static_cast<std::uint32_t>(rng()));
    s.ipv4.id = static_cast<std::uint16_t>(rng());
    s.udp_checksum = static_cast<std::uint16_t>(rng());
    Frame f = build(s, static_cast<std::uint32_t>(rng() % (kWriteOnlyMatchMaxPayload + 1)), static_cast<std::uint8_t>(i));
    // and a RETH length that is not the payload's (the responder's to refuse, not the match's)
    if (i % 7 == 0) {
      Be32 d = fe::read_header<Be32>(f, fe::kBthOffset + sizeof(Bth) + offsetof(Reth, dma_length));
      d.set(d.get() + 1);
      fe::write_header(f, fe::kBthOffset + sizeof(Bth) + offsetof(Reth, dma_length), d);
      fe::reseal(f);
    }
    m.expect_as_parsed(f, "random frame " + std::to_string(i));
  }
  EXPECT_EQ(m.matched, 2000u);
}

TEST(WriteOnlyMatch, CorruptIcrcOrPayloadIsRefused) {
  for (const bool kernel : {true, false}) {
    crc32_short_use(kernel);
    for (const std::uint32_t len : {0u, 1u, 61u, 64u, 200u}) {
      const Frame base = build(flow_spec(), len);
      Matcher m(base);
      for (std::size_t at = fe::kBthOffset + sizeof(Bth) + sizeof(Reth); at < base.size(); ++at)
        for (int bit = 0; bit < 8; ++bit) {
          Frame f = base;
          f[at] ^= static_cast<std::byte>(1u << bit);
          m.expect_as_parsed(f, "byte " + std::to_string(at) + " bit " + std::to_string(bit));
        }
      for (std::size_t at = base.size() - 4; at < base.size(); ++at) {
        Frame f = base;
        f[at] ^= std::byte{0x01};
        m.expect_as_parsed(f, "ICRC byte " + std::to_string(at));
      }
      EXPECT_EQ(m.matched, 0u) << "payload " << len;
    }
  }
  crc32_short_use(true);
}

TEST(WriteOnlyMatch, ATemplateFromAnotherOpcodeOrFecnMatchesThePlainWriteOnlysOfTheFlow) {
  // straight_bth expects RC WRITE ONLY with the reserved byte clear whatever the run's last frame
  // was: the template too.
  FrameSpec send = flow_spec();
  send.bth.opcode = raw(Opcode::RcSendOnly);
  FrameSpec fecn = flow_spec();
  fecn.bth.resv8a = Bth::kFecn;
  for (const FrameSpec& s : {send, fecn}) {
    const std::vector<std::byte> payload(64, std::byte{7});
    Frame f(512);
    f.resize(build_frame(s, payload, f, CrcBackend::Isal).length);
    Matcher m(f);
    m.expect_as_parsed(build(flow_spec(), 64), "plain WRITE ONLY");
    m.expect_as_parsed(f, "the template's own frame");
    EXPECT_EQ(m.matched, 1u);
  }
}

TEST(WriteOnlyMatch, FramesThatCannotStandForTheFlowLeaveTheTemplateMatchingNothing) {
  const Frame plain = build(flow_spec(), 64);
  FrameSpec ce = flow_spec();
  ce.set_ecn(Ecn::Ce);
  FrameSpec tagged = flow_spec();
  tagged.eth.vlan_count = 1;
  tagged.eth.vlan_tpid[0] = kEtherTypeVlan;
  tagged.eth.vlan_tci[0] = 5;
  FrameSpec v6 = flow_spec();
  v6.ip_version = IpVersion::V6;
  Frame options = plain;  // IHL 6: one word of options (NOP), lengths and checksum fixed
  options.insert(options.begin() + static_cast<long>(fe::kUdpOffset), 4, std::byte{1});
  options[fe::kIpOffset] = std::byte{0x46};
  {
    auto ip = fe::read_header<Ipv4Header>(options, fe::kIpOffset);
    ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + 4));
    fe::write_header(options, fe::kIpOffset, ip);
    fe::fix_ipv4_checksum(options);
  }
  const ParseOptions opts = engine_options(nullptr);
  for (const Frame& f : {build(ce, 64), build(tagged, 64), build(v6, 64), options}) {
    Packet p;
    ASSERT_EQ(parse_frame(f, opts, p), ParseError::None);
    WriteOnlyTemplate t;
    EXPECT_FALSE(t.set(f, p, opts));
    EXPECT_FALSE(t.active());
    MatchedWriteOnly m;
    EXPECT_FALSE(t.match(f, m));
    EXPECT_FALSE(t.match(plain, m));
  }
}

TEST(WriteOnlyMatch, ParseOptionsThatNarrowWhatParseFrameTakesNarrowTheMatch) {
  const Frame base = build(flow_spec(), 64);
  Packet p;
  ParseOptions off = engine_options(nullptr);
  off.verify_icrc = false;  // no ICRC status Ok: nothing goes straight
  ASSERT_EQ(parse_frame(base, off, p), ParseError::None);
  WriteOnlyTemplate t;
  EXPECT_FALSE(t.set(base, p, off));
  // A path MTU of 64: larger payloads are the parser's to refuse; the ICRC deferred from 32 bytes.
  ParseOptions pmtu = engine_options(nullptr);
  pmtu.pmtu = 64;
  ParseOptions defer = engine_options(nullptr);
  defer.defer_icrc_from = 32;
  for (const ParseOptions& o : {pmtu, defer}) {
    Matcher m(build(flow_spec(), 16), o);
    for (std::uint32_t len = 0; len <= 80; ++len) m.expect_as_parsed(build(flow_spec(), len), "payload " + std::to_string(len), o.pmtu ? 64 : 31);
  }
}

TEST(WriteOnlyMatch, ASuspendedTemplateMatchesNothingUntilSetAgain) {
  const Frame base = build(flow_spec(), 64);
  Matcher m(base);
  MatchedWriteOnly out;
  EXPECT_TRUE(m.tmpl().match(base, out));
  m.tmpl().suspend();
  EXPECT_FALSE(m.tmpl().active());
  EXPECT_FALSE(m.tmpl().match(base, out));
  // Set again from the same flow, then from another (another QPN): each matches its own frames only.
  EXPECT_TRUE(m.tmpl().set(base, m.flow(), engine_options(nullptr)));
  EXPECT_TRUE(m.tmpl().match(base, out));
  FrameSpec other = flow_spec();
  other.bth.dest_qp.set(0x000124);
  const Frame o = build(other, 64);
  Packet p;
  ASSERT_EQ(parse_frame(o, engine_options(nullptr), p), ParseError::None);
  EXPECT_TRUE(m.tmpl().set(o, p, engine_options(nullptr)));
  EXPECT_TRUE(m.tmpl().match(o, out));
  EXPECT_FALSE(m.tmpl().match(base, out));
}

}  // namespace
}  // namespace roce::proto::write_only_match_test
