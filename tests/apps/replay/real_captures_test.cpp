// The request side of real ConnectX, Huawei and rxe captures replayed into our responder, its
// ACKs, READ responses and MSNs held against what the real responder sent (docs/replay.md
// lists what may differ). Skips with the reason when ../shared/captures is not there.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "apps/replay/derive.hpp"
#include "apps/replay/engine_run.hpp"
#include "apps/replay/replay.hpp"
#include "apps/replay/text_values.hpp"
#include "protocol/aeth.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/temp_dir.hpp"

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

// The two captures the table above leaves out, each held to what it can show.
class RealCaptureFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dir_ = test::find_captures_dir(why);
    if (!dir_) GTEST_SKIP() << why;
  }
  std::vector<Frame> read(const char* file) {
    auto frames = read_frames((*dir_ / file).string());
    EXPECT_TRUE(frames.ok()) << frames.error().message;
    return frames.ok() ? std::move(*frames) : std::vector<Frame>{};
  }
  std::optional<std::filesystem::path> dir_;
};

std::optional<proto::Packet> rc_packet(const Frame& f) {
  proto::Packet p;
  if (proto::parse_frame(f.bytes, proto::ParseOptions{}, p) != proto::ParseError::None || p.info == nullptr ||
      p.icrc_status != proto::IcrcStatus::Ok)
    return std::nullopt;
  return p;
}

bool is_rocev1(const Frame& f) {
  constexpr std::byte kRoceV1Hi{0x89}, kRoceV1Lo{0x15};
  return f.bytes.size() >= 14 && f.bytes[12] == kRoceV1Hi && f.bytes[13] == kRoceV1Lo;
}

// connectx_mixed_rocev1_v2 holds no answer of the responder host, so there is nothing to
// compare with (its RoCEv2 requests also start mid-message and have sniffer gaps). What it can
// show is that its 323 RoCEv1 frames (EtherType 0x8915, BTHs for QPs next to ours) are never
// taken for RoCEv2: each is counted as RoCEv1, and without them the replay sends the same
// frames at the same times and counts the same.
TEST_F(RealCaptureFile, RoceV1FramesOfAMixedCaptureAreCountedAndChangeNothing) {
  const std::vector<Frame> frames = read("connectx_mixed_rocev1_v2.pcap");
  ASSERT_FALSE(frames.empty());
  std::vector<Frame> v2_only;
  for (const Frame& f : frames)
    if (!is_rocev1(f)) v2_only.push_back(f);
  const std::uint64_t v1 = frames.size() - v2_only.size();
  EXPECT_EQ(v1, 323u);
  auto derived = derive_scenario(frames, DeriveOptions{}, "connectx_mixed_rocev1_v2.pcap");
  ASSERT_TRUE(derived.ok()) << derived.error().message;
  EXPECT_TRUE(derived->expected.empty());
  auto with_v1 = run_on_engine(derived->scenario, frames);
  auto without_v1 = run_on_engine(derived->scenario, v2_only);
  ASSERT_TRUE(with_v1.ok() && without_v1.ok());
  EXPECT_EQ(with_v1->counters["parse.rocev1"], v1);
  ASSERT_FALSE(with_v1->sent.empty()) << "the RoCEv2 requests are answered";
  ASSERT_EQ(with_v1->sent.size(), without_v1->sent.size());
  for (std::size_t i = 0; i < with_v1->sent.size(); ++i) {
    EXPECT_EQ(with_v1->sent[i].bytes, without_v1->sent[i].bytes) << "frame " << i + 1;
    EXPECT_EQ(with_v1->sent[i].ts, without_v1->sent[i].ts) << "frame " << i + 1;
  }
  CounterSnapshot counters = with_v1->counters;
  counters.erase("parse.rocev1");
  without_v1->counters.erase("parse.rocev1");
  EXPECT_EQ(counters, without_v1->counters);
}

// connectx_send_multi_qp lacks request packets its sniffer dropped (one gap in every QP's PSNs)
// that the real responder did receive. Up to each gap our ACKs are the real responder's; at the
// gap ours sends what the spec asks of a responder that never saw the packet: one NAK PSN
// sequence error carrying the missing PSN.
TEST_F(RealCaptureFile, ASnifferGapInARealCaptureGetsOneSequenceNakAndTheAcksBeforeItMatch) {
  const std::vector<Frame> frames = read("connectx_send_multi_qp.pcap");
  ASSERT_FALSE(frames.empty());
  auto derived = derive_scenario(frames, DeriveOptions{}, "connectx_send_multi_qp.pcap");
  ASSERT_TRUE(derived.ok()) << derived.error().message;
  const Scenario& s = derived->scenario;

  // The first PSN missing from each of our QPs' requests, and the peer QPN its answers go to.
  std::map<std::uint32_t, std::uint32_t> peer_of;  // our QPN -> peer QPN
  for (const auto& qp : s.qps) peer_of[qp.qpn] = qp.peer_qpn;
  std::map<std::uint32_t, std::uint32_t> next_psn, first_gap;  // keyed by peer QPN
  for (const Frame& f : frames) {
    auto p = rc_packet(f);
    if (!p || !p->info->is_request || !peer_of.contains(p->bth.dest_qp.get())) continue;
    const std::uint32_t peer = peer_of[p->bth.dest_qp.get()];
    const std::uint32_t psn = p->bth.psn.get();
    if (auto it = next_psn.find(peer); it != next_psn.end() && psn != it->second && !first_gap.contains(peer))
      first_gap[peer] = it->second;
    next_psn[peer] = (psn + 1) & proto::kPsnMask;
  }
  ASSERT_EQ(first_gap.size(), s.qps.size()) << "every QP of this capture has a gap";

  auto run = run_on_engine(s, frames);
  ASSERT_TRUE(run.ok()) << run.error().message;
  std::map<std::uint32_t, int> naks;
  auto before_gap = [&](const std::vector<Frame>& in) {
    std::vector<Frame> out;
    for (const Frame& f : in) {
      auto p = rc_packet(f);
      if (!p) continue;
      const std::uint32_t peer = p->bth.dest_qp.get();
      if (!first_gap.contains(peer)) continue;
      if (proto::psn_before(p->bth.psn.get(), first_gap[peer])) out.push_back(f);
    }
    return out;
  };
  for (const Frame& f : run->sent) {
    auto p = rc_packet(f);
    ASSERT_TRUE(p);
    const proto::Syndrome syn{p->ext.aeth.syndrome};
    if (!syn.is_nak()) continue;
    EXPECT_EQ(syn.nak_code(), proto::NakCode::PsnSequenceError);
    const std::uint32_t peer = p->bth.dest_qp.get();
    ASSERT_TRUE(first_gap.contains(peer)) << "NAK to QP " << peer;
    EXPECT_EQ(p->bth.psn.get(), first_gap[peer]) << "NAK to QP " << peer << " names another PSN than the missing one";
    ++naks[peer];
  }
  for (const auto& [peer, psn] : first_gap) EXPECT_EQ(naks[peer], 1) << "QP " << peer << ", missing PSN " << psn;

  const std::vector<Frame> expected = before_gap(derived->expected);
  std::vector<Frame> got = before_gap(run->sent);
  // ACK coalescing at the gap: an ACK of ours just before it that the real responder folded
  // into a later ACK (past the gap, so cut off above) is allowed, as compare_frames allows it
  // between two responses it sees (docs/replay.md, ack_coalescing).
  std::map<std::uint32_t, std::uint32_t> last_expected, last_got;  // peer QPN -> PSN
  for (const Frame& f : expected) last_expected[rc_packet(f)->bth.dest_qp.get()] = rc_packet(f)->bth.psn.get();
  for (const Frame& f : got) last_got[rc_packet(f)->bth.dest_qp.get()] = rc_packet(f)->bth.psn.get();
  std::size_t folded = 0;
  std::erase_if(got, [&](const Frame& f) {
    auto p = rc_packet(f);
    const std::uint32_t peer = p->bth.dest_qp.get();
    const bool folded_into_later = p->bth.psn.get() == last_got[peer] && last_expected.contains(peer) &&
                                   proto::psn_after(p->bth.psn.get(), last_expected[peer]) &&
                                   proto::Syndrome{p->ext.aeth.syndrome}.is_ack();
    folded += folded_into_later;
    return folded_into_later;
  });
  EXPECT_LE(folded, 1u) << "ACKs before a gap the real responder did not send";
  EXPECT_GE(expected.size(), s.qps.size()) << "each QP has an answer before its gap";
  const Comparison c = compare_frames(expected, got, s.compare, Origins{run->start, run->start});
  EXPECT_TRUE(c.pass()) << format_comparison(c, "the real responder (before each gap)");
}


// A capture that starts mid-connection, halfway through a message: rxe's ib_write_bw and
// ib_send_bw from frame 120 on. The leading packets of the message joined halfway are left out,
// the PSN base is the next message's start, and MSNs are compared from where the real
// responder's first answer says it stood.
TEST_F(RealCaptureFile, ACaptureJoinedMidConnectionStillMatches) {
  for (const char* file : {"rxe/ib_write_bw.pcap", "rxe/ib_send_bw.pcap"}) {
    SCOPED_TRACE(file);
    const std::vector<Frame> all = read(file);
    ASSERT_GT(all.size(), 150u);
    std::vector<Frame> tail(all.begin() + 119, all.end());
    for (std::size_t i = 0; i < tail.size(); ++i) tail[i].index = i + 1;
    test::TempDir dir;
    const std::string path = (dir / "tail.pcap").string();
    ASSERT_TRUE(write_frames(path, tail).ok());
    ReplayOptions o;
    o.input = path;
    o.derive = true;
    std::ostringstream out, err;
    const ReplayReport rep = replay(o, out, err);
    EXPECT_EQ(rep.exit_code, kExitPass) << out.str() << err.str();
    EXPECT_NE(out.str().find("the capture joins a message halfway"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("had completed 23 messages before it"), std::string::npos) << out.str();
    ASSERT_TRUE(rep.comparison);
    EXPECT_EQ(rep.comparison->expected_frames, 9u);
  }
}

// connectx_send_multi_qp through the whole replay: every difference is one its sniffer's gaps
// explain, and the report says which gap explains which.
TEST_F(RealCaptureFile, EveryDifferenceOfTheGappedCaptureIsExplainedByItsGaps) {
  ReplayOptions o;
  o.input = (*dir_ / "connectx_send_multi_qp.pcap").string();
  o.derive = true;
  std::ostringstream out, err;
  const ReplayReport rep = replay(o, out, err);
  EXPECT_EQ(rep.exit_code, kExitPass) << out.str() << err.str();
  ASSERT_TRUE(rep.comparison);
  EXPECT_GT(rep.comparison->mismatches, 0u);
  EXPECT_EQ(rep.comparison->explained, rep.comparison->mismatches);
  EXPECT_NE(out.str().find("all explained by frames missing from the capture"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("although the real responder acknowledged past them"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace roce::replay
