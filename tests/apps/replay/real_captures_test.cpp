// The request side of real ConnectX, Huawei and rxe captures replayed into our responder, its
// ACKs, READ responses and MSNs held against what the real responder sent (docs/replay.md
// lists what may differ). Skips with the reason when ../shared/captures is not there.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include "apps/replay/derive.hpp"
#include "apps/replay/engine_run.hpp"
#include "apps/replay/replay.hpp"
#include "apps/replay/text_values.hpp"
#include "tests/support/captures_dir.hpp"

namespace roce::replay {
namespace {

struct RealCase {
  const char* file;
  const char* responder;           // nullptr: the destination of the first request
  std::size_t compared;            // the real responder's frames we must match
  bool credits_compared;           // the real responder sends 0x1F as we do
  std::size_t acks_passed_over;    // ACKs the real responder sent that we fold into later ones
};

std::ostream& operator<<(std::ostream& o, const RealCase& c) {
  return o << c.file << " as " << (c.responder ? c.responder : "the first request's destination");
}

// The counts were read off the captures with roce-inspect: the responses the responder host
// sent to the QPs whose requests we replay.
const RealCase kCases[] = {
    {"rxe/ib_write_bw.pcap", nullptr, 32, true, 0},         // 32 WRITEs of 4 KiB: 32 ACKs, MSN 1..32
    {"rxe/ib_read_bw.pcap", nullptr, 128, true, 0},         // 32 READs of 4 KiB: FIRST/MIDDLE/MIDDLE/LAST each
    {"rxe/ib_send_bw.pcap", nullptr, 32, true, 0},          // 32 SENDs of 4 KiB
    {"rxe/rc_pingpong.pcap", "10.77.0.2", 8, true, 0},      // the pingpong server's side
    {"rxe/rc_pingpong.pcap", "10.77.0.3", 8, true, 0},      // and the client's
    {"rxe/host_rc_pingpong_vs_rxe.pcap", nullptr, 4, true, 0},
    {"connectx_write_read.pcap", "172.17.242.56", 3, false, 0},  // SEND, WRITE, READ of 22 B (PadCnt 2)
    {"connectx_write_read.pcap", "172.17.242.47", 1, false, 0},
    {"connectx_send_recv.pcap", "172.17.242.56", 1, false, 0},
    {"connectx_send_recv.pcap", "172.17.242.47", 1, false, 0},
    {"connectx_ib_send_bw.pcap", nullptr, 5, false, 0},
    {"connectx_rdma_cm_write.pcap", "172.17.242.56", 3, false, 0},
    {"connectx_rdma_cm_write.pcap", "172.17.242.47", 3, false, 0},
    {"hns_send_with_imm.pcap", "192.168.70.6", 1, false, 0},
    {"hns_send_with_imm.pcap", "192.168.70.4", 36, false, 1},  // 33 two-packet SEND_WITH_IMM messages
};

class RealCapture : public ::testing::TestWithParam<RealCase> {
 protected:
  void SetUp() override {
    std::string why;
    dir_ = test::find_captures_dir(why);
    if (!dir_) GTEST_SKIP() << why;
  }
  ReplayOptions options() const {
    ReplayOptions o;
    o.input = (*dir_ / GetParam().file).string();
    o.derive = true;
    if (GetParam().responder) o.responder_ip = parse_ip(GetParam().responder);
    return o;
  }
  std::optional<std::filesystem::path> dir_;
};

TEST_P(RealCapture, OurResponsesMatchTheRealRespondersWhereTheSpecFixesThem) {
  std::ostringstream out, err;
  const ReplayReport rep = replay(options(), out, err);
  EXPECT_EQ(rep.exit_code, kExitPass) << out.str() << err.str();
  ASSERT_TRUE(rep.comparison.has_value()) << err.str();
  EXPECT_EQ(rep.comparison->expected_frames, GetParam().compared) << out.str();
  EXPECT_EQ(rep.comparison->acks_passed_over, GetParam().acks_passed_over) << out.str();
  const bool credits_ignored = out.str().find("ACK credit codes not compared") != std::string::npos;
  EXPECT_EQ(!credits_ignored, GetParam().credits_compared) << out.str();
}

// The comparison can fail: the same replay without the receives its SENDs need answers with
// RNR NAKs, and without the regions its WRITEs and READs need with remote access NAKs, which
// the real responder never sent.
TEST_P(RealCapture, WithoutItsReceivesOrRegionsTheReplayFails) {
  auto frames = read_frames(options().input);
  ASSERT_TRUE(frames.ok()) << frames.error().message;
  DeriveOptions d;
  d.responder_ip = options().responder_ip;
  auto derived = derive_scenario(*frames, d, options().input);
  ASSERT_TRUE(derived.ok()) << derived.error().message;
  Scenario& s = derived->scenario;
  const bool sends = !s.recvs.empty();
  ASSERT_TRUE(sends || !s.mrs.empty()) << "neither SENDs nor memory access in " << GetParam();
  if (sends) s.recvs.clear();
  else s.mrs.clear();
  auto run = run_on_engine(s, *frames);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const Comparison c = compare_frames(derived->expected, run->sent, s.compare, Origins{run->start, run->start});
  const std::string report = format_comparison(c, "the real responder");
  EXPECT_FALSE(c.pass()) << report;
  EXPECT_NE(report.find(sends ? "RNR-NAK" : "NAK remote-access-error"), std::string::npos) << report;
}

// What --dump-scenario writes is a scenario file like any other: read back, it sets up the
// same replay, byte for byte.
TEST_P(RealCapture, DerivedScenarioWrittenAndReadBackReplaysTheSame) {
  auto frames = read_frames(options().input);
  ASSERT_TRUE(frames.ok()) << frames.error().message;
  DeriveOptions d;
  d.responder_ip = options().responder_ip;
  auto derived = derive_scenario(*frames, d, options().input);
  ASSERT_TRUE(derived.ok()) << derived.error().message;
  const std::string text = to_text(derived->scenario);
  auto again = parse_scenario(text, "dumped");
  ASSERT_TRUE(again.ok()) << again.error().message << "\n" << text;
  auto a = run_on_engine(derived->scenario, *frames);
  auto b = run_on_engine(*again, *frames);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->sent.size(), b->sent.size());
  for (std::size_t i = 0; i < a->sent.size(); ++i) {
    EXPECT_EQ(a->sent[i].bytes, b->sent[i].bytes) << "frame " << i + 1;
    EXPECT_EQ(a->sent[i].ts, b->sent[i].ts) << "frame " << i + 1;
  }
  EXPECT_EQ(a->counters, b->counters);
}

INSTANTIATE_TEST_SUITE_P(Replay, RealCapture, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace roce::replay
