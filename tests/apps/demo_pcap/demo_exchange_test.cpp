#include "apps/demo_pcap/demo_exchange.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "capture/capture_reader.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"

namespace roce::demo {
namespace {

using proto::Opcode;

TEST(DemoExchange, IsAWriteACeMarkedWriteWithCnpAndARead) {
  const std::vector<Opcode> want{
      Opcode::RcWriteFirst,        Opcode::RcWriteMiddle,        Opcode::RcWriteLast, Opcode::RcAck,
      Opcode::RcWriteOnly,         Opcode::Cnp,                  Opcode::RcAck,       Opcode::RcReadRequest,
      Opcode::RcReadResponseFirst, Opcode::RcReadResponseMiddle, Opcode::RcReadResponseLast};
  const auto frames = demo_exchange();
  ASSERT_EQ(frames.size(), want.size());
  proto::ParseOptions opts;
  opts.pmtu = kDemoPmtu;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(frames[i].what);
    proto::Packet p;
    ASSERT_EQ(proto::parse_frame(frames[i].bytes, opts, p), proto::ParseError::None);
    EXPECT_EQ(p.opcode(), proto::raw(want[i]));
    EXPECT_EQ(p.icrc_status, proto::IcrcStatus::Ok);
  }
}

TEST(DemoExchange, ReadResponsesUseThePsnsTheReadRequestReserved) {
  const auto frames = demo_exchange();
  proto::Packet req, first, last;
  ASSERT_EQ(proto::parse_frame(frames[7].bytes, {}, req), proto::ParseError::None);
  ASSERT_EQ(proto::parse_frame(frames[8].bytes, {}, first), proto::ParseError::None);
  ASSERT_EQ(proto::parse_frame(frames[10].bytes, {}, last), proto::ParseError::None);
  const std::uint32_t packets = (req.ext.reth.dma_length.get() + kDemoPmtu - 1) / kDemoPmtu;
  EXPECT_EQ(first.psn(), req.psn());
  EXPECT_EQ(last.psn(), proto::psn_add(req.psn(), packets - 1));
}

// pcap/demo_write_read.pcap must be exactly what scripts/make_demo_pcap.sh writes today.
TEST(DemoExchange, CommittedFixtureIsWhatTheGeneratorWrites) {
  const auto path = std::filesystem::path(ROCE_SOURCE_ROOT) / "pcap" / "demo_write_read.pcap";
  capture::CaptureReader r;
  ASSERT_TRUE(r.open(path.string())) << path << ": " << r.error();
  const auto frames = demo_exchange();
  capture::CaptureRecord rec;
  std::size_t i = 0;
  while (r.next(rec) == capture::ReadStatus::Record) {
    ASSERT_LT(i, frames.size()) << "fixture has more frames than the generator: run scripts/make_demo_pcap.sh";
    EXPECT_EQ(std::vector<std::byte>(rec.data.begin(), rec.data.end()), frames[i].bytes)
        << "frame " << rec.index << " (" << frames[i].what << ") differs: run scripts/make_demo_pcap.sh";
    EXPECT_EQ(rec.ts_sec, kDemoStartSec);
    EXPECT_EQ(rec.ts_nsec, i * kDemoGapUsec * 1000);
    ++i;
  }
  EXPECT_EQ(i, frames.size());
}

}  // namespace
}  // namespace roce::demo
