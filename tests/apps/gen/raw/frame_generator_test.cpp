// The raw generator's frames parsed back with protocol/parser: every opcode of the table with
// the header fields asked for, the PSN patterns, CE and bad-ICRC frames exactly where asked.
#include "apps/gen/raw/frame_generator.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "protocol/parser.hpp"

namespace roce::gen::frame_generator_test {
namespace {

using namespace roce::proto;

struct Parsed {
  Packet packet;
  CraftedFrame crafted;
  std::vector<std::byte> bytes;
};

// Generates `n` frames and parses each (the bytes are kept so payload spans stay valid).
std::vector<Parsed> craft(const RawStreamSpec& spec, std::size_t n) {
  auto gen = RawFrameGenerator::create(spec);
  EXPECT_TRUE(gen.ok()) << gen.error().message;
  if (!gen.ok()) return {};
  std::vector<Parsed> out(n);
  for (auto& p : out) {
    p.bytes.resize(gen->max_frame_bytes());
    const std::size_t expected = gen->next_length();
    p.crafted = gen->next(p.bytes);
    EXPECT_EQ(p.crafted.length, expected);
    p.bytes.resize(p.crafted.length);
    ParseOptions o;
    o.pmtu = spec.pmtu;
    EXPECT_EQ(parse_frame(p.bytes, o, p.packet), ParseError::None) << opcode_name(p.crafted.opcode);
  }
  return out;
}

TEST(RawFrameGenerator, EveryOpcodeOfTheTableCarriesItsHeadersWithTheFieldsAsked) {
  RawStreamSpec s;
  s.opcodes = all_opcodes();
  s.payload_bytes = 100;
  s.pmtu = 512;
  s.dest_qp = 0xABCDEF;
  s.pkey = 0x8001;
  s.solicited = s.ack_req = s.becn = true;
  s.ext.reth.va.set(0x1122334455667788);
  s.ext.reth.rkey.set(0xCAFE);
  s.ext.atomic.va.set(0x1000);
  s.ext.atomic.rkey.set(0xBEEF);
  s.ext.atomic.swap_add.set(7);
  s.ext.atomic.compare.set(9);
  s.ext.aeth.syndrome = 0x60;
  s.ext.aeth.msn.set(0x123456);
  s.ext.atomic_ack.original_data.set(42);
  s.ext.deth.qkey.set(0x11111111);
  s.ext.deth.src_qp.set(0x77);
  s.ext.imm.bytes = {1, 2, 3, 4};
  s.ext.ieth.rkey.set(0x5555);
  s.ext.feth.bits.set(0x12);
  const auto frames = craft(s, s.opcodes.size());
  ASSERT_EQ(frames.size(), s.opcodes.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const Packet& p = frames[i].packet;
    const OpcodeInfo& info = opcode_info(s.opcodes[i]);
    SCOPED_TRACE(info.name);
    EXPECT_EQ(p.opcode(), s.opcodes[i]);
    EXPECT_EQ(p.dest_qp(), 0xABCDEFu);
    EXPECT_EQ(p.bth.pkey.get(), 0x8001);
    EXPECT_TRUE(p.bth.se() && p.bth.ack_requested() && p.bth.becn());
    EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
    const std::uint32_t payload = info.payload == PayloadRule::ExactPmtu ? 512
                                  : info.payload == PayloadRule::Exactly8 ? 8
                                  : info.payload == PayloadRule::None    ? 0
                                                                         : 100;
    EXPECT_EQ(p.payload_length, payload);
    for (std::uint32_t k = 0; k < payload; ++k) ASSERT_EQ(p.payload[k], static_cast<std::byte>(k)) << k;
    if (info.has(ExtHeader::Reth)) {
      EXPECT_EQ(p.ext.reth.va.get(), 0x1122334455667788u);
      EXPECT_EQ(p.ext.reth.rkey.get(), 0xCAFEu);
      // DMA length: the packet's payload, or --size for a READ request.
      EXPECT_EQ(p.ext.reth.dma_length.get(), info.operation == Operation::ReadRequest ? 100u : payload);
    }
    if (info.has(ExtHeader::AtomicEth)) {
      EXPECT_EQ(p.ext.atomic.va.get(), 0x1000u);
      EXPECT_EQ(p.ext.atomic.rkey.get(), 0xBEEFu);
      EXPECT_EQ(p.ext.atomic.swap_add.get(), 7u);
      EXPECT_EQ(p.ext.atomic.compare.get(), 9u);
    }
    if (info.has(ExtHeader::Aeth)) {
      EXPECT_EQ(p.ext.aeth.syndrome, 0x60);
      EXPECT_EQ(p.ext.aeth.msn.get(), 0x123456u);
    }
    if (info.has(ExtHeader::AtomicAckEth)) {
      EXPECT_EQ(p.ext.atomic_ack.original_data.get(), 42u);
    }
    if (info.has(ExtHeader::Deth)) {
      EXPECT_EQ(p.ext.deth.qkey.get(), 0x11111111u);
      EXPECT_EQ(p.ext.deth.source_qp(), 0x77u);
    }
    if (info.has(ExtHeader::ImmDt)) {
      EXPECT_EQ(p.ext.imm.bytes, (std::array<std::uint8_t, 4>{1, 2, 3, 4}));
    }
    if (info.has(ExtHeader::Ieth)) {
      EXPECT_EQ(p.ext.ieth.rkey.get(), 0x5555u);
    }
    if (info.has(ExtHeader::Feth)) {
      EXPECT_EQ(p.ext.feth.bits.get(), 0x12u);
    }
  }
}

TEST(RawFrameGenerator, OpcodesOfTheListAreUsedInTurnAndCountedExactly) {
  RawStreamSpec s;
  s.opcodes = {raw(Opcode::RcWriteFirst), raw(Opcode::RcWriteMiddle), raw(Opcode::RcWriteLast),
               raw(Opcode::RcReadRequest), raw(Opcode::Cnp)};
  const auto frames = craft(s, 103);
  std::map<std::uint8_t, int> count;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].packet.opcode(), s.opcodes[i % 5]);
    ++count[frames[i].packet.opcode()];
  }
  EXPECT_EQ(count[raw(Opcode::RcWriteFirst)], 21);
  EXPECT_EQ(count[raw(Opcode::RcWriteMiddle)], 21);
  EXPECT_EQ(count[raw(Opcode::RcWriteLast)], 21);
  EXPECT_EQ(count[raw(Opcode::RcReadRequest)], 20);
  EXPECT_EQ(count[raw(Opcode::Cnp)], 20);
}

std::vector<std::uint32_t> psns(const RawStreamSpec& s, std::size_t n) {
  std::vector<std::uint32_t> out;
  for (const auto& f : craft(s, n)) {
    EXPECT_EQ(f.packet.psn(), f.crafted.psn);
    out.push_back(f.packet.psn());
  }
  return out;
}

TEST(RawFrameGenerator, PsnIncrementsFromTheStartAndWrapsAt2To24) {
  RawStreamSpec s;
  s.psn_start = 0xFFFFFD;
  EXPECT_EQ(psns(s, 6), (std::vector<std::uint32_t>{0xFFFFFD, 0xFFFFFE, 0xFFFFFF, 0, 1, 2}));
  s.psn_start.reset();
  EXPECT_EQ(psns(s, 3), (std::vector<std::uint32_t>{0, 1, 2}));
  s.psn_mode = PsnMode::Wrap;
  const auto w = psns(s, 12);
  EXPECT_EQ(w.front(), 0xFFFFF8u);
  EXPECT_EQ(w[7], 0xFFFFFFu);
  EXPECT_EQ(w[8], 0u);
  EXPECT_EQ(w[11], 3u);
}

TEST(RawFrameGenerator, FixedAndSeededRandomPsns) {
  RawStreamSpec s;
  s.psn_mode = PsnMode::Fixed;
  s.psn_start = 0x123;
  for (std::uint32_t p : psns(s, 10)) EXPECT_EQ(p, 0x123u);
  s.psn_mode = PsnMode::Random;
  const auto a = psns(s, 200), b = psns(s, 200);
  EXPECT_EQ(a, b) << "the same seed gives the same PSNs";
  s.seed = 2;
  EXPECT_NE(psns(s, 200), a);
  std::set<std::uint32_t> distinct(a.begin(), a.end());
  EXPECT_GT(distinct.size(), 195u);
  for (std::uint32_t p : a) EXPECT_LT(p, kPsnModulus);
}

// Gap every 4th frame (skip 3), duplicate every 5th: the expected sequence written out.
TEST(RawFrameGenerator, PsnGapsAndDuplicatesComeEveryNthFrame) {
  RawStreamSpec s;
  s.psn_start = 100;
  s.psn_gap_every.n = 4;
  s.psn_gap = 3;
  s.psn_dup_every.n = 5;
  // frame: 1    2    3    4(gap) 5(dup) 6    7    8(gap) 9    10(dup) 11   12(gap)
  EXPECT_EQ(psns(s, 12),
            (std::vector<std::uint32_t>{100, 101, 102, 106, 106, 107, 108, 112, 113, 113, 114, 118}));
  RawStreamSpec d;
  d.psn_dup_every.n = 2;
  EXPECT_EQ(psns(d, 6), (std::vector<std::uint32_t>{0, 0, 1, 1, 2, 2}));
}

TEST(RawFrameGenerator, CeAndBadIcrcEveryNthFrameExactly) {
  RawStreamSpec s;
  s.ecn = Ecn::Ect1;
  s.ce_every.n = 3;
  s.bad_icrc_every.n = 7;
  const auto frames = craft(s, 100);
  unsigned ce = 0, bad = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const Packet& p = frames[i].packet;
    const bool want_ce = (i + 1) % 3 == 0, want_bad = (i + 1) % 7 == 0;
    EXPECT_EQ(p.ecn(), want_ce ? Ecn::Ce : Ecn::Ect1) << i;
    EXPECT_EQ(p.icrc_status, want_bad ? IcrcStatus::Bad : IcrcStatus::Ok) << i;
    EXPECT_EQ(frames[i].crafted.ce, want_ce);
    EXPECT_EQ(frames[i].crafted.bad_icrc, want_bad);
    EXPECT_TRUE(p.ipv4_checksum_ok);
    ce += p.ecn() == Ecn::Ce;
    bad += p.icrc_status == IcrcStatus::Bad;
  }
  EXPECT_EQ(ce, 33u);
  EXPECT_EQ(bad, 14u);
  EXPECT_EQ(s.ce_every.count_in(100), 33u);
}

TEST(RawFrameGenerator, VlanTagsIpv6DscpAndAddressesAsAsked) {
  RawStreamSpec s;
  s.eth.vlan_count = 2;
  s.eth.vlan_tpid = {kEtherTypeQinQ, kEtherTypeVlan};
  s.eth.vlan_tci = {static_cast<std::uint16_t>(3 << 13 | 100), 200};
  s.ip_version = IpVersion::V6;
  s.ipv6.src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  s.ipv6.dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  s.ipv6.flow_label = 0x12345;
  s.dscp = 26;
  s.ecn = Ecn::NotEct;
  s.udp_src_port = 0xD000;
  const auto f = craft(s, 2);
  ASSERT_EQ(f.size(), 2u);
  const Packet& p = f[0].packet;
  EXPECT_EQ(p.eth.vlan_count, 2);
  EXPECT_EQ(p.eth.vlan_tpid[0], kEtherTypeQinQ);
  EXPECT_EQ(p.eth.vlan_tci[0] & 0xFFF, 100);
  EXPECT_EQ(p.eth.vlan_tci[0] >> 13, 3);
  EXPECT_EQ(p.eth.vlan_tci[1], 200);
  EXPECT_EQ(p.ip_version, IpVersion::V6);
  EXPECT_EQ(p.ipv6.src, s.ipv6.src);
  EXPECT_EQ(p.ipv6.traffic_class, 26 << 2);
  EXPECT_EQ(p.ipv6.flow_label, 0x12345u);
  EXPECT_EQ(p.udp_src_port, 0xD000);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
}

TEST(RawFrameGenerator, PayloadPatterns) {
  RawStreamSpec s;
  s.payload_bytes = 300;
  s.pattern = PayloadPattern::Byte;
  s.pattern_byte = 0xAB;
  const auto bytes = craft(s, 1);  // owns the bytes the payload spans point into
  for (std::byte b : bytes[0].packet.payload) ASSERT_EQ(b, std::byte{0xAB});
  s.pattern = PayloadPattern::Zero;
  const auto zeros = craft(s, 1);
  for (std::byte b : zeros[0].packet.payload) ASSERT_EQ(b, std::byte{0});
  s.pattern = PayloadPattern::Random;
  const auto r = craft(s, 2);
  EXPECT_TRUE(std::equal(r[0].packet.payload.begin(), r[0].packet.payload.end(), r[1].packet.payload.begin()));
  std::set<std::byte> distinct(r[0].packet.payload.begin(), r[0].packet.payload.end());
  EXPECT_GT(distinct.size(), 100u);
}

TEST(RawFrameGenerator, ATooSmallBufferWritesNothingAndKeepsTheStreamWhereItWas) {
  auto gen = RawFrameGenerator::create(RawStreamSpec{});
  ASSERT_TRUE(gen.ok());
  std::vector<std::byte> small(100);
  EXPECT_EQ(gen->next(small).length, 0u);
  EXPECT_EQ(gen->frames(), 0u);
  std::vector<std::byte> big(gen->max_frame_bytes());
  EXPECT_EQ(gen->next(big).psn, 0u);
}

TEST(RawFrameGenerator, StreamsThatCannotBeBuiltAreRefusedWithTheReason) {
  auto refused = [](RawStreamSpec s, const std::string& word) {
    const auto e = check(s);
    ASSERT_TRUE(e) << word;
    EXPECT_NE(e->find(word), std::string::npos) << *e;
    EXPECT_FALSE(RawFrameGenerator::create(s).ok());
  };
  RawStreamSpec s;
  s.opcodes = {raw(Opcode::RcSendLast)};
  s.payload_bytes = 0;
  refused(s, "RC_SEND_LAST cannot carry 0");
  s = {};
  s.payload_bytes = 2000;
  refused(s, "above the PMTU");
  s = {};
  s.pmtu = 1000;
  refused(s, "PMTU 1000");
  s = {};
  s.opcodes = {0x15};
  refused(s, "not in the opcode table");
  s = {};
  s.opcodes.clear();
  refused(s, "no opcode");
  s = {};
  s.psn_mode = PsnMode::Random;
  s.psn_dup_every.n = 3;
  refused(s, "increment or wrap");
  s = {};
  s.psn_start = kPsnModulus;
  refused(s, "24 bits");
  s = {};
  s.opcodes = {raw(Opcode::RcReadRequest)};
  s.payload_bytes = 1 << 20;  // a READ request asks for any size: fine
  EXPECT_FALSE(check(s));
}

TEST(RawStream, NamesOfOpcodesModesAndEcn) {
  EXPECT_EQ(opcode_from_string("RC_RDMA_WRITE_ONLY"), raw(Opcode::RcWriteOnly));
  EXPECT_EQ(opcode_from_string("rc-rdma-write-only"), raw(Opcode::RcWriteOnly));
  EXPECT_EQ(opcode_from_string("0x81"), raw(Opcode::Cnp));
  EXPECT_EQ(opcode_from_string("100"), raw(Opcode::UdSendOnly));
  EXPECT_FALSE(opcode_from_string("0x15"));
  EXPECT_FALSE(opcode_from_string("256"));
  EXPECT_FALSE(opcode_from_string("0x"));
  EXPECT_FALSE(opcode_from_string("WRITE"));
  EXPECT_EQ(all_opcodes().size(), 40u);
  for (PsnMode m : {PsnMode::Increment, PsnMode::Fixed, PsnMode::Random, PsnMode::Wrap})
    EXPECT_EQ(psn_mode_from_string(to_string(m)), m);
  EXPECT_EQ(ecn_from_string("none"), Ecn::NotEct);
  EXPECT_EQ(ecn_from_string("ce"), Ecn::Ce);
  EXPECT_FALSE(ecn_from_string("CE!"));
  EXPECT_EQ(to_string(Rate::pps(1e6)), "1000000 pps");
  EXPECT_EQ(to_string(Rate::bps(25e9)), "25 Gb/s");
  EXPECT_TRUE(check(Rate::pps(0)));
  EXPECT_FALSE(check(Rate{}));
}

}  // namespace
}  // namespace roce::gen::frame_generator_test
