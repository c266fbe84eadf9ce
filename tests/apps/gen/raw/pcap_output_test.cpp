// Raw mode into a pcap file, read back with the capture reader and protocol/parser: counts per
// opcode, the PSN pattern, CE and bad ICRC exactly as asked, and timestamps at the rate.
#include "apps/gen/raw/pcap_output.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "capture/capture_reader.hpp"
#include "apps/gen/raw/stream_clock.hpp"
#include "protocol/parser.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::gen::pcap_output_test {
namespace {

using namespace roce::proto;

struct Record {
  std::int64_t ns = 0;
  std::uint32_t length = 0;
  std::uint8_t opcode = 0;
  std::uint32_t psn = 0;
  Ecn ecn = Ecn::NotEct;
  IcrcStatus icrc = IcrcStatus::NotChecked;
};

std::vector<Record> read_back(const std::string& path, std::uint32_t pmtu) {
  capture::CaptureReader r;
  EXPECT_TRUE(r.open(path)) << r.error();
  std::vector<Record> out;
  capture::CaptureRecord rec;
  ParseOptions o;
  o.pmtu = pmtu;
  while (r.next(rec) == capture::ReadStatus::Record) {
    Packet p;
    EXPECT_EQ(parse_frame(rec.data, o, p), ParseError::None) << "record " << rec.index;
    out.push_back({rec.ts_sec * kSecond + rec.ts_nsec, rec.caplen, p.opcode(), p.psn(), p.ecn(), p.icrc_status});
  }
  return out;
}

TEST(PcapOutput, WhatIsReadBackIsExactlyWhatWasAsked) {
  test::TempDir dir;
  RawStreamSpec s;
  s.opcodes = {raw(Opcode::RcSendFirst), raw(Opcode::RcSendMiddle), raw(Opcode::RcSendLastImm),
               raw(Opcode::RcAck), raw(Opcode::RcFetchAdd)};
  s.payload_bytes = 777;
  s.pmtu = 2048;
  s.psn_mode = PsnMode::Wrap;
  s.psn_dup_every.n = 9;
  s.psn_gap_every.n = 13;
  s.ce_every.n = 4;
  s.bad_icrc_every.n = 11;
  auto gen = RawFrameGenerator::create(s);
  ASSERT_TRUE(gen.ok()) << gen.error().message;
  PcapOutput o;
  o.path = (dir / "raw.pcap").string();
  o.count = 1000;
  o.rate = Rate::pps(2.5e6);
  o.start_ns = 1'700'000'000 * kSecond + 123;
  auto stats = write_pcap(*gen, o);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  const auto recs = read_back(o.path, 2048);
  ASSERT_EQ(recs.size(), 1000u);

  std::map<std::uint8_t, unsigned> by_opcode;
  unsigned ce = 0, bad = 0;
  std::uint32_t expect_psn = kPsnModulus - kWrapLead, last = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const Record& r = recs[i];
    ++by_opcode[r.opcode];
    ce += r.ecn == Ecn::Ce;
    bad += r.icrc == IcrcStatus::Bad;
    // The pattern, independently: duplicate on every 9th, else skip one before every 13th.
    std::uint32_t want;
    if (i > 0 && (i + 1) % 9 == 0) {
      want = last;
    } else {
      if (i > 0 && (i + 1) % 13 == 0) expect_psn = (expect_psn + 1) % kPsnModulus;
      want = expect_psn;
      expect_psn = (expect_psn + 1) % kPsnModulus;
    }
    ASSERT_EQ(r.psn, want) << "frame " << i;
    last = want;
    // 400 ns apart from the start time, to the nanosecond.
    EXPECT_EQ(r.ns, o.start_ns + static_cast<std::int64_t>(i) * 400) << i;
  }
  EXPECT_EQ(by_opcode.size(), 5u);
  for (const auto& [op, n] : by_opcode) EXPECT_EQ(n, 200u) << opcode_name(op);
  EXPECT_EQ(ce, 250u);
  EXPECT_EQ(bad, 90u);
  EXPECT_EQ(stats->frames, 1000u);
  EXPECT_EQ(stats->ce, 250u);
  EXPECT_EQ(stats->bad_icrc, 90u);
  EXPECT_EQ(stats->by_opcode[raw(Opcode::RcAck)], 200u);
}

// At 25 Gb/s each frame leaves when the link has carried the ones before it, wire overhead
// included; the file's timestamps give the rate back.
TEST(PcapOutput, TimestampsGiveTheRateInGigabitsPerSecond) {
  test::TempDir dir;
  RawStreamSpec s;
  s.opcodes = {raw(Opcode::RcWriteOnly), raw(Opcode::RcReadRequest)};  // two frame sizes
  s.payload_bytes = 4096;
  s.pmtu = 4096;
  auto gen = RawFrameGenerator::create(s);
  ASSERT_TRUE(gen.ok());
  PcapOutput o;
  o.path = (dir / "gbps.pcap").string();
  o.count = 5000;
  o.rate = Rate::bps(25e9);
  o.start_ns = 0;
  ASSERT_TRUE(write_pcap(*gen, o).ok());
  const auto recs = read_back(o.path, 4096);
  ASSERT_EQ(recs.size(), 5000u);
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].ns, std::llround(static_cast<double>(bits) / 25.0)) << i;
    bits += wire_bits(recs[i].length);
  }
  const std::uint64_t bits_before_last = bits - wire_bits(recs.back().length);
  const double gbps = static_cast<double>(bits_before_last) / static_cast<double>(recs.back().ns - recs.front().ns);
  std::printf("  timestamps: %.6f Gb/s on the wire (asked 25)\n", gbps);
  EXPECT_NEAR(gbps, 25.0, 25.0 * 1e-6);  // only the last timestamp's rounding to the ns
}

TEST(PcapOutput, AnUnwritablePathIsAnErrorWithItsReason) {
  auto gen = RawFrameGenerator::create(RawStreamSpec{});
  ASSERT_TRUE(gen.ok());
  PcapOutput o;
  o.path = "/nonexistent-dir/x.pcap";
  auto r = write_pcap(*gen, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent-dir/x.pcap"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace roce::gen::pcap_output_test
