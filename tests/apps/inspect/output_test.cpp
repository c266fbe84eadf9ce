// The per-frame views, table rows, field values and JSON objects roce-inspect prints, on frames
// decoded from the demo exchange, from hand-damaged copies of it, and on DC and RoCEv1 frames.
#include <gtest/gtest.h>

#include <map>

#include "apps/demo_pcap/demo_exchange.hpp"
#include "apps/inspect/fields.hpp"
#include "apps/inspect/fields_output.hpp"
#include "apps/inspect/json_output.hpp"
#include "apps/inspect/table_output.hpp"
#include "tests/apps/inspect/frames.hpp"
#include "tests/support/json.hpp"
#include "tests/support/vendor_frames.hpp"

namespace roce::inspect::output_test {
namespace {

using capture::Verdict;
using proto::ExtHeader;
using test::view_of;

const std::vector<demo::DemoFrame>& demo() {
  static const auto frames = demo::demo_exchange();
  return frames;
}

// Demo frame numbers (1-based): 1 WRITE_FIRST, 4 ACK, 5 WRITE_ONLY (CE), 6 CNP, 8 READ_REQUEST.
const std::vector<std::byte>& demo_frame(std::size_t no) { return demo().at(no - 1).bytes; }

std::string field_text(const FrameView& v, const char* name) {
  const FieldDef* f = find_field(name);
  EXPECT_NE(f, nullptr) << name;
  return f ? format_value(*f, f->get(v, {})) : "";
}

TEST(FrameView, AckShowsItsAethAndNoReth) {
  const FrameView v = view_of(demo_frame(4));
  EXPECT_EQ(v.verdict, Verdict::Roce);
  ASSERT_TRUE(v.has_bth);
  EXPECT_EQ(v.opcode_name(), "RC_ACKNOWLEDGE");
  ASSERT_TRUE(v.has(ExtHeader::Aeth));
  EXPECT_EQ(v.ext.aeth.syndrome, 0x0A);
  EXPECT_EQ(field_text(v, "aeth.meaning"), "ACK credits=32");
  EXPECT_EQ(v.ext.aeth.msn.get(), 1u);
  EXPECT_FALSE(v.has(ExtHeader::Reth));
  EXPECT_EQ(v.payload_len, 0u);
  EXPECT_EQ(v.icrc, proto::IcrcStatus::Ok);
  EXPECT_EQ(field_text(v, "ip.src"), "10.0.0.2");
  EXPECT_EQ(field_text(v, "ip.dst"), "10.0.0.1");
  EXPECT_EQ(field_text(v, "eth.src"), "02:00:00:00:00:02");
  EXPECT_EQ(field_text(v, "udp.dstport"), "4791");
}

TEST(FrameView, WriteFirstShowsItsRethAndCeMarkedWriteShowsEcn) {
  const FrameView first = view_of(demo_frame(1));
  ASSERT_TRUE(first.has(ExtHeader::Reth));
  EXPECT_EQ(first.ext.reth.va.get(), 0x00007f5a3c001000u);
  EXPECT_EQ(first.ext.reth.dma_length.get(), 2500u);
  EXPECT_FALSE(first.has(ExtHeader::Aeth));
  const FrameView ce = view_of(demo_frame(5));
  EXPECT_TRUE(ce.is_ce());
  EXPECT_EQ(field_text(ce, "ip.ecn"), "ce");
  EXPECT_TRUE(ce.bth.ack_requested());
  EXPECT_EQ(ce.payload_len, 18u);
}

TEST(FrameView, CnpHasBecn) {
  const FrameView v = view_of(demo_frame(6));
  EXPECT_EQ(v.opcode_name(), "CNP");
  EXPECT_TRUE(v.is_cnp());
  EXPECT_TRUE(v.bth.becn());
  EXPECT_FALSE(v.bth.fecn());
}

TEST(FrameView, SnapCutFrameKeepsItsHeadersAndSaysWhatItHolds) {
  std::vector<std::byte> cut(demo_frame(1).begin(), demo_frame(1).begin() + 100);
  const FrameView v = view_of(cut, 1, 0, static_cast<std::uint32_t>(demo_frame(1).size()));
  EXPECT_EQ(v.verdict, Verdict::Roce);
  EXPECT_TRUE(v.flag(FrameFlag::Cut));
  EXPECT_FALSE(v.flag(FrameFlag::IpBeyondFrame));
  ASSERT_TRUE(v.has(ExtHeader::Reth));
  EXPECT_EQ(v.payload_len, 1024u);
  EXPECT_EQ(v.payload_captured, 100u - 14 - 20 - 8 - 12 - 16);
  EXPECT_EQ(v.icrc, proto::IcrcStatus::NotCheckable);
  const std::string row = table_row(v, {});
  EXPECT_NE(row.find("cut by the snap length: captured 100 of 1098 bytes"), std::string::npos) << row;
  EXPECT_NE(row.find(" 30/1024 "), std::string::npos) << row;  // not a payload length the frame does not have
  EXPECT_EQ(field_text(v, "cut"), "1");
}

TEST(FrameView, FrameRecordedAtItsCutLengthSaysTheIpLengthExceedsIt) {
  // A sniffer that writes the cut length as the frame length (ibdump with a snap length).
  std::vector<std::byte> cut(demo_frame(1).begin(), demo_frame(1).begin() + 100);
  const FrameView v = view_of(cut);
  EXPECT_FALSE(v.flag(FrameFlag::Cut));
  EXPECT_TRUE(v.flag(FrameFlag::IpBeyondFrame));
  EXPECT_EQ(v.icrc, proto::IcrcStatus::NotCheckable);
  EXPECT_NE(frame_details(v).find("IPv4 total length exceeds packet length (100 bytes"), std::string::npos) << frame_details(v);
}

TEST(FrameView, BadIcrcIsReportedNotRejected) {
  auto f = demo_frame(4);
  f.back() ^= std::byte{0xFF};
  const FrameView v = view_of(f);
  EXPECT_EQ(v.verdict, Verdict::Roce);
  EXPECT_EQ(v.icrc, proto::IcrcStatus::Bad);
}

TEST(FrameView, MalformedFrameShowsItsBthButNoPayloadOrIcrc) {
  auto f = demo_frame(8);
  f[43] |= std::byte{0x01};  // TVer 1
  const FrameView v = view_of(f);
  EXPECT_EQ(v.verdict, Verdict::Malformed);
  EXPECT_EQ(v.reason(), "bad-tver");
  ASSERT_TRUE(v.has_bth);
  EXPECT_EQ(v.opcode_name(), "RC_RDMA_READ_REQUEST");
  EXPECT_FALSE(v.has(ExtHeader::Reth));
  EXPECT_FALSE(v.payload_len);
  EXPECT_FALSE(v.icrc);
}

TEST(FrameView, NonIpFrameHasOnlyVerdictAndReason) {
  std::vector<std::byte> arp(60);
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  const FrameView v = view_of(arp);
  EXPECT_EQ(v.verdict, Verdict::NotRoce);
  EXPECT_EQ(v.reason(), "not-ip");
  EXPECT_FALSE(v.has_bth);
  EXPECT_FALSE(v.has_ip);
  const auto j = roce::test::parse_json(frame_json(v, {}));
  EXPECT_FALSE(j.has("opcode"));
  EXPECT_FALSE(j.has("icrc"));
  EXPECT_FALSE(j.has("ip.src"));
  EXPECT_EQ(j["verdict"].str(), "not-roce");
}

TEST(FrameView, UdDatagramToQp1IsGsiWithItsDeth) {
  auto s = test::spec(test::kA, {test::kB.ip, 1}, proto::Opcode::UdSendOnly, 7);
  s.ext.deth.qkey.set(0x80010000);
  s.ext.deth.src_qp.set(1);
  const FrameView v = view_of(test::build(s, 256));
  EXPECT_TRUE(v.flag(FrameFlag::Gsi));
  EXPECT_EQ(field_text(v, "deth.qkey"), "0x80010000");
  EXPECT_EQ(field_text(v, "deth.srcqp"), "0x000001");
  EXPECT_NE(frame_details(v).find("deth qkey=0x80010000 srcqp=0x000001"), std::string::npos);
  EXPECT_NE(frame_details(v).find("gsi"), std::string::npos);
}

TEST(FrameView, EveryExtensionHeaderIsShown) {
  auto cas = test::spec(test::kA, test::kB, proto::Opcode::RcCmpSwap, 1);
  cas.ext.atomic.va.set(0x1000);
  cas.ext.atomic.rkey.set(0xAB);
  cas.ext.atomic.swap_add.set(0x0102030405060708ull);
  cas.ext.atomic.compare.set(9);
  const std::string d = frame_details(view_of(test::build(cas)));
  EXPECT_NE(d.find("atomic va=0x0000000000001000 rkey=0x000000ab swap_add=0x0102030405060708 compare=0x0000000000000009"),
            std::string::npos) << d;
  auto aack = test::spec(test::kB, test::kA, proto::Opcode::RcAtomicAck, 1);
  aack.ext.atomic_ack.original_data.set(0xFEDCBA9876543210ull);
  EXPECT_NE(frame_details(view_of(test::build(aack))).find("atomicack orig=0xfedcba9876543210"), std::string::npos);
  auto imm = test::spec(test::kA, test::kB, proto::Opcode::RcWriteOnlyImm, 1);
  imm.ext.imm.bytes = {0xDE, 0xAD, 0xBE, 0xEF};
  const FrameView vi = view_of(test::build(imm, 8));
  EXPECT_NE(frame_details(vi).find("imm=0xdeadbeef"), std::string::npos);
  EXPECT_EQ(field_text(vi, "immdt"), "0xdeadbeef");
  auto inv = test::spec(test::kA, test::kB, proto::Opcode::RcSendOnlyInv, 1);
  inv.ext.ieth.rkey.set(0x4242);
  EXPECT_NE(frame_details(view_of(test::build(inv, 4))).find("ieth rkey=0x00004242"), std::string::npos);
}

TEST(FrameView, DcAndRoceV1FramesAreDecodedNotMalformed) {
  roce::test::VendorFrameSpec s;
  s.opcode = 0x51;
  s.ext.aeth.syndrome = 0x1F;
  s.ext.aeth.msn.set(3);
  const FrameView dc = view_of(roce::test::dc_frame(s));
  EXPECT_EQ(dc.verdict, Verdict::Dc);
  EXPECT_EQ(dc.reason(), "ok");
  EXPECT_EQ(dc.opcode_name(), "DC_ACKNOWLEDGE");
  EXPECT_EQ(dc.transport(), "DC");
  EXPECT_EQ(field_text(dc, "dc.eth"), "0x1122334455667788");
  EXPECT_EQ(field_text(dc, "aeth.msn"), "3");
  EXPECT_EQ(dc.icrc, proto::IcrcStatus::Ok);

  s.opcode = proto::raw(proto::Opcode::RcSendOnly);
  s.payload.assign(5, std::byte{1});
  const FrameView v1 = view_of(roce::test::rocev1_frame(s));
  EXPECT_EQ(v1.verdict, Verdict::RoceV1);
  EXPECT_TRUE(v1.rocev1);
  EXPECT_EQ(field_text(v1, "ip.src"), "fe80::1");
  EXPECT_FALSE(v1.has_udp);
  EXPECT_EQ(v1.payload_len, 5u);
  EXPECT_EQ(v1.icrc, proto::IcrcStatus::Ok);
}

TEST(FrameView, FlushDecodesItsFethPlacementAndSelectivity) {
  auto s = test::spec(test::kA, test::kB, proto::Opcode::RcFlush, 9);
  s.ext.feth.bits.set(0x13);  // global + persistent, whole region
  s.ext.reth.va.set(0x1000);
  s.ext.reth.rkey.set(0x2345);
  s.ext.reth.dma_length.set(0);
  const FrameView v = view_of(test::build(s, 0));
  EXPECT_EQ(v.opcode_name(), "RC_FLUSH");
  EXPECT_EQ(field_text(v, "feth"), "0x00000013");
  EXPECT_EQ(field_text(v, "feth.placement"), "3");
  EXPECT_EQ(field_text(v, "feth.selectivity"), "1");
  EXPECT_NE(frame_details(v).find("feth=0x00000013 placement=global+persistent selectivity=region"), std::string::npos)
      << frame_details(v);
  EXPECT_NE(frame_details(v).find("reth va=0x0000000000001000 rkey=0x00002345 len=0"), std::string::npos);
  s.ext.feth.bits.set(0x24);  // reserved placement bit and selectivity
  EXPECT_NE(frame_details(view_of(test::build(s, 0))).find("placement=reserved(0x4) selectivity=reserved(2)"),
            std::string::npos);
  const auto j = roce::test::parse_json(frame_json(v, {}));
  EXPECT_EQ(j["feth.placement"].u64(), 3u);
  EXPECT_EQ(j["feth.selectivity"].u64(), 1u);
}

TEST(TableOutput, RowsLineUpWithTheHeader) {
  for (const TableOptions o : {TableOptions{}, TableOptions{TimeFormat::Relative, true}, TableOptions{TimeFormat::Epoch, false}}) {
    const std::string header = table_header(o);
    for (std::size_t no : {1u, 4u, 6u}) {
      const FrameView v = view_of(demo_frame(no), no);
      const std::string row = table_row(v, o);
      SCOPED_TRACE(row);
      EXPECT_EQ(row.find(v.opcode_name()), header.find("Opcode"));
      EXPECT_EQ(row.find(" ok "), header.find(" Reason "));
      EXPECT_EQ(row.find("10.0.0."), header.find("Source"));
    }
  }
  EXPECT_NE(table_row(view_of(demo_frame(4)), {}).find("aeth=0x0a (ACK credits=32) msn=1"), std::string::npos);
  EXPECT_NE(table_row(view_of(demo_frame(1)), {}).find("reth va=0x00007f5a3c001000 rkey=0x00001a2b len=2500"), std::string::npos);
  EXPECT_NE(table_row(view_of(demo_frame(1)), TableOptions{TimeFormat::Both, true}).find("02:00:00:00:00:01  02:00:00:00:00:02"),
            std::string::npos);
}

TEST(TableOutput, TimeColumnsAreRelativeAndUtc) {
  FrameView v = view_of(demo_frame(1), 1, 1'700'000'000'123'456'789);
  v.rel_ns = 1'500'000'000;
  const std::string row = table_row(v, {});
  EXPECT_NE(row.find("1.500000000  2023-11-14 22:13:20.123456789"), std::string::npos) << row;
  EXPECT_NE(table_row(v, {TimeFormat::Epoch, false}).find("1700000000.123456789"), std::string::npos);
}

TEST(FieldsOutput, ValuesInTsharksBasesAndAnAbsentFieldIsEmpty) {
  FieldsOptions o;
  for (const char* n : {"frame", "qpn", "psn", "reth.rkey", "aeth.msn", "infiniband.bth.destqp"}) o.fields.push_back(find_field(n));
  o.separator = ",";
  EXPECT_EQ(fields_row(view_of(demo_frame(1), 3), {}, o), "3,0x000012,40960,0x00001a2b,,0x000012");
  EXPECT_EQ(fields_header(o, {"a", "b"}), "a,b");
}

TEST(JsonOutput, KeysAreFieldNamesWithOneTypeEach) {
  const auto j = roce::test::parse_json(frame_json(view_of(demo_frame(1), 7), {}));
  EXPECT_EQ(j["frame"].u64(), 7u);
  EXPECT_EQ(j["verdict"].str(), "roce");
  EXPECT_EQ(j["opcode"].u64(), 6u);
  EXPECT_EQ(j["opcode.name"].str(), "RC_RDMA_WRITE_FIRST");
  EXPECT_EQ(j["qpn"].u64(), 0x12u);
  EXPECT_EQ(j["psn"].u64(), 0xA000u);
  EXPECT_EQ(j["ip.ecn"].str(), "ect0");
  EXPECT_FALSE(j["fecn"].boolean());
  EXPECT_EQ(j["reth.va"].str(), "0x00007f5a3c001000");  // 64 bits: a string
  EXPECT_EQ(j["reth.rkey"].u64(), 0x1a2bu);
  EXPECT_EQ(j["payload.len"].u64(), 1024u);
  EXPECT_EQ(j["icrc"].str(), "ok");
  EXPECT_FALSE(j.has("retransmission"));  // flags are present only when set
}

TEST(Fields, TsharkNamesAreAliasesAndEveryFieldHasHelp) {
  EXPECT_EQ(find_field("infiniband.bth.destqp"), find_field("qpn"));
  EXPECT_EQ(find_field("frame.number"), find_field("frame"));
  EXPECT_EQ(find_field("nope"), nullptr);
  std::map<std::string, int> names;
  for (const FieldDef& f : all_fields()) {
    EXPECT_NE(std::string(f.help), "") << f.name;
    EXPECT_EQ(++names[f.name], 1) << "two fields named " << f.name;
  }
}

}  // namespace
}  // namespace roce::inspect::output_test
