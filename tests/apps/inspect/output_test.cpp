// The per-frame views, table rows and JSON objects roce-inspect prints, on frames decoded from
// the demo exchange and from hand-damaged copies of it.
#include <gtest/gtest.h>

#include "apps/capture/frame_decoder.hpp"
#include "apps/demo_pcap/demo_exchange.hpp"
#include "apps/inspect/frame_view.hpp"
#include "apps/inspect/json_output.hpp"
#include "apps/inspect/summary.hpp"
#include "apps/inspect/table_output.hpp"
#include "tests/support/json.hpp"

namespace roce::inspect {
namespace {

using capture::Verdict;

FrameView view_of(const std::vector<std::byte>& frame, std::uint64_t index = 1, std::uint32_t wire_len = 0) {
  capture::CaptureRecord rec;
  rec.index = index;
  rec.data = frame;
  rec.caplen = static_cast<std::uint32_t>(frame.size());
  rec.wire_len = wire_len ? wire_len : rec.caplen;
  proto::ParseOptions opts;
  opts.allow_snap_truncation = true;
  capture::DecodedFrame d;
  capture::decode_frame(capture::LinkType::Ethernet, frame, opts, d);
  return make_frame_view(rec, d);
}

const std::vector<demo::DemoFrame>& demo() {
  static const auto frames = demo::demo_exchange();
  return frames;
}

// Demo frame numbers (1-based): 1 WRITE_FIRST, 4 ACK, 5 WRITE_ONLY (CE), 6 CNP, 8 READ_REQUEST.
const std::vector<std::byte>& demo_frame(std::size_t no) { return demo().at(no - 1).bytes; }

TEST(FrameView, AckShowsItsAethAndNoReth) {
  const FrameView v = view_of(demo_frame(4));
  EXPECT_EQ(v.verdict, Verdict::Roce);
  ASSERT_TRUE(v.bth);
  EXPECT_EQ(v.bth->opcode_name, "RC_ACKNOWLEDGE");
  ASSERT_TRUE(v.aeth);
  EXPECT_EQ(v.aeth->syndrome, 0x0A);
  EXPECT_EQ(v.aeth->meaning, "ACK credits=32");
  EXPECT_EQ(v.aeth->msn, 1u);
  EXPECT_FALSE(v.reth);
  EXPECT_EQ(v.payload_length, 0u);
  EXPECT_EQ(v.icrc, proto::IcrcStatus::Ok);
}

TEST(FrameView, WriteFirstShowsItsRethAndCeMarkedWriteShowsEcn) {
  const FrameView first = view_of(demo_frame(1));
  ASSERT_TRUE(first.reth);
  EXPECT_EQ(first.reth->va, 0x00007f5a3c001000u);
  EXPECT_EQ(first.reth->dma_length, 2500u);
  EXPECT_FALSE(first.aeth);
  const FrameView ce = view_of(demo_frame(5));
  ASSERT_TRUE(ce.bth);
  EXPECT_EQ(ce.bth->ecn, proto::Ecn::Ce);
  EXPECT_TRUE(ce.bth->ack_req);
  EXPECT_EQ(ce.payload_length, 18u);
}

TEST(FrameView, CnpHasBecn) {
  const FrameView v = view_of(demo_frame(6));
  ASSERT_TRUE(v.bth);
  EXPECT_EQ(v.bth->opcode_name, "CNP");
  EXPECT_TRUE(v.bth->becn);
  EXPECT_FALSE(v.bth->fecn);
}

TEST(FrameView, SnapTruncatedFrameKeepsHeadersButIcrcIsNotCheckable) {
  std::vector<std::byte> cut(demo_frame(1).begin(), demo_frame(1).begin() + 100);
  const FrameView v = view_of(cut, 1, static_cast<std::uint32_t>(demo_frame(1).size()));
  EXPECT_EQ(v.verdict, Verdict::Roce);
  ASSERT_TRUE(v.reth);
  EXPECT_EQ(v.payload_length, 1024u);
  EXPECT_EQ(v.icrc, proto::IcrcStatus::NotCheckable);
  EXPECT_NE(table_row(v).find("captured 100 of 1098 bytes"), std::string::npos) << table_row(v);
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
  ASSERT_TRUE(v.bth);
  EXPECT_EQ(v.bth->opcode_name, "RC_RDMA_READ_REQUEST");
  EXPECT_FALSE(v.reth);
  EXPECT_FALSE(v.payload_length);
  EXPECT_FALSE(v.icrc);
}

TEST(FrameView, NonIpFrameHasOnlyVerdictAndReason) {
  std::vector<std::byte> arp(60);
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  const FrameView v = view_of(arp);
  EXPECT_EQ(v.verdict, Verdict::NotRoce);
  EXPECT_EQ(v.reason(), "not-ip");
  EXPECT_FALSE(v.bth);
  const auto j = test::parse_json(frame_json(v));
  EXPECT_FALSE(j.has("opcode"));
  EXPECT_FALSE(j.has("icrc"));
  EXPECT_EQ(j["verdict"].str(), "not-roce");
}

TEST(TableOutput, RowsLineUpWithTheHeader) {
  const std::string header = table_header();
  for (std::size_t no : {1u, 4u, 6u}) {
    const std::string row = table_row(view_of(demo_frame(no), no));
    SCOPED_TRACE(row);
    const std::string name = view_of(demo_frame(no)).bth->opcode_name;
    EXPECT_EQ(row.find(name), header.find("Opcode"));
    EXPECT_EQ(row.find(" ok "), header.find(" Reason "));
  }
  EXPECT_NE(table_row(view_of(demo_frame(4))).find("aeth=0x0a (ACK credits=32) msn=1"), std::string::npos);
  EXPECT_NE(table_row(view_of(demo_frame(1))).find("reth va=0x00007f5a3c001000 rkey=0x00001a2b len=2500"),
            std::string::npos);
}

TEST(JsonOutput, FrameObjectCarriesTheTableFields) {
  const auto j = test::parse_json(frame_json(view_of(demo_frame(1), 7)));
  EXPECT_EQ(j["frame"].u64(), 7u);
  EXPECT_EQ(j["verdict"].str(), "roce");
  EXPECT_EQ(j["reason"].str(), "ok");
  EXPECT_EQ(j["opcode"].u64(), 6u);
  EXPECT_EQ(j["opcode_name"].str(), "RC_RDMA_WRITE_FIRST");
  EXPECT_EQ(j["dest_qp"].u64(), 0x12u);
  EXPECT_EQ(j["psn"].u64(), 0xA000u);
  EXPECT_EQ(j["ecn"].str(), "ect0");
  EXPECT_FALSE(j["fecn"].boolean());
  EXPECT_FALSE(j["becn"].boolean());
  EXPECT_FALSE(j["ack_req"].boolean());
  EXPECT_EQ(j["reth"]["va"].str(), "0x00007f5a3c001000");
  EXPECT_EQ(j["reth"]["rkey"].u64(), 0x1a2bu);
  EXPECT_EQ(j["reth"]["dma_length"].u64(), 2500u);
  EXPECT_EQ(j["payload_length"].u64(), 1024u);
  EXPECT_EQ(j["icrc"].str(), "ok");
  const auto ack = test::parse_json(frame_json(view_of(demo_frame(4))));
  EXPECT_EQ(ack["aeth"]["syndrome"].u64(), 0x0Au);
  EXPECT_EQ(ack["aeth"]["msn"].u64(), 1u);
  EXPECT_EQ(ack["aeth"]["meaning"].str(), "ACK credits=32");
}

TEST(Summary, CountsVerdictsReasonsOpcodesAndIcrc) {
  Summary s;
  for (std::size_t i = 0; i < demo().size(); ++i) s.add(view_of(demo()[i].bytes, i + 1));
  s.add(view_of(std::vector<std::byte>(10)));  // too short for Ethernet: malformed, truncated
  EXPECT_EQ(s.frames(), demo().size() + 1);
  EXPECT_EQ(s.verdict_count(Verdict::Roce), demo().size());
  EXPECT_EQ(s.verdict_count(Verdict::Malformed), 1u);
  EXPECT_EQ(s.reason_count(proto::ParseError::Truncated), 1u);
  EXPECT_EQ(s.opcode_count(proto::raw(proto::Opcode::RcAck)), 2u);
  EXPECT_EQ(s.opcode_count(proto::raw(proto::Opcode::Cnp)), 1u);
  EXPECT_EQ(s.icrc_count(proto::IcrcStatus::Ok), demo().size());

  const auto j = test::parse_json(s.json(true));
  EXPECT_EQ(j["frames"].u64(), demo().size() + 1);
  EXPECT_TRUE(j["complete"].boolean());
  EXPECT_EQ(j["verdicts"]["roce"].u64(), demo().size());
  EXPECT_EQ(j["verdicts"]["malformed"].u64(), 1u);
  EXPECT_EQ(j["reasons"]["truncated"].u64(), 1u);
  std::uint64_t opcode_total = 0;
  for (const auto& o : j["opcodes"].array()) opcode_total += o["count"].u64();
  EXPECT_EQ(opcode_total, demo().size());
  EXPECT_EQ(j["icrc"]["ok"].u64(), demo().size());
  EXPECT_FALSE(test::parse_json(s.json(false))["complete"].boolean());

  const std::string human = s.human(false);
  EXPECT_NE(human.find("frames: 12 (reading stopped early)"), std::string::npos) << human;
  EXPECT_NE(human.find("0x11 RC_ACKNOWLEDGE"), std::string::npos) << human;
}

}  // namespace
}  // namespace roce::inspect
