// --derive on UC and UD traffic (no answers to compare: the receive completions are checked) and
// on captures with gaps, built here with protocol/builder.
#include <gtest/gtest.h>

#include <sstream>

#include "apps/replay/derive.hpp"
#include "apps/replay/engine_run.hpp"
#include "apps/replay/replay.hpp"
#include "protocol/builder.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::replay::derive_transports_test {
namespace {

using namespace roce::proto;

constexpr Nanos kStart = 1'700'000'000LL * kSecond;

Frame request(Opcode op, std::uint32_t qpn, std::uint32_t psn, std::uint32_t payload, std::size_t index) {
  FrameSpec s;
  s.eth.src = {0x02, 0, 0, 0, 0, 1};
  s.eth.dst = {0x02, 0, 0, 0, 0, 2};
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.bth.opcode = raw(op);
  s.bth.pkey.set(Bth::kDefaultPkey);
  s.bth.dest_qp.set(qpn);
  s.bth.psn.set(psn);
  s.ext.deth.qkey.set(0x11112222);
  s.ext.deth.src_qp.set(0x99);
  Frame f;
  f.bytes.resize(layout_frame(s, payload).length);
  EXPECT_TRUE(build_frame(s, std::vector<std::byte>(payload, std::byte{7}), f.bytes, CrcBackend::Isal).ok());
  f.index = index;
  f.ts = kStart + static_cast<Nanos>(index) * 10 * kMicro;
  return f;
}

// Three UC SENDs of three packets each (FIRST, MIDDLE, LAST) to QP 0x30, and `lost` packets
// of the second one missing.
std::vector<Frame> uc_sends(std::uint32_t lost = 0) {
  std::vector<Frame> v;
  std::uint32_t psn = 100;
  for (int m = 0; m < 3; ++m)
    for (Opcode op : {Opcode::UcSendFirst, Opcode::UcSendMiddle, Opcode::UcSendLast}) {
      const bool drop = m == 1 && op == Opcode::UcSendMiddle && lost;
      if (!drop) v.push_back(request(op, 0x30, psn, op == Opcode::UcSendLast ? 100 : 1024, v.size() + 1));
      ++psn;
    }
  return v;
}

ReplayReport replay_frames(const std::vector<Frame>& frames, std::string& text) {
  test::TempDir dir;
  const std::string path = (dir / "in.pcap").string();
  EXPECT_TRUE(write_frames(path, frames).ok());
  ReplayOptions o;
  o.input = path;
  o.derive = true;
  std::ostringstream out, err;
  ReplayReport r = replay(o, out, err);
  text = out.str() + err.str();
  return r;
}

TEST(DeriveTransports, UcSendsAreCheckedByTheirReceiveCompletions) {
  std::string text;
  const ReplayReport r = replay_frames(uc_sends(), text);
  EXPECT_EQ(r.exit_code, kExitPass) << text;
  EXPECT_NE(text.find("QP 0x000030 (UC)"), std::string::npos) << text;
  EXPECT_NE(text.find("expecting 3 receive completions"), std::string::npos) << text;
  EXPECT_EQ(r.run.counters.at("wc.ok"), 3u);
}

TEST(DeriveTransports, AUcMessageWithAPacketMissingIsNotExpectedToComplete) {
  std::string text;
  const ReplayReport r = replay_frames(uc_sends(1), text);
  EXPECT_EQ(r.exit_code, kExitPass) << text;
  EXPECT_NE(text.find("expecting 2 receive completions"), std::string::npos) << text;
  EXPECT_NE(text.find("UC sends no answer to tell whether the sniffer or the network lost them"), std::string::npos) << text;
}

TEST(DeriveTransports, UdDatagramsNeedTheirQkeyAndAReceiveEach) {
  std::vector<Frame> v;
  for (std::uint32_t i = 0; i < 4; ++i) v.push_back(request(Opcode::UdSendOnly, 0x31, 50 + i, 200, i + 1));
  v.push_back(request(Opcode::UdSendOnly, 1, 9, 256, 5));  // to QP1: management, not ours to answer
  std::string text;
  const ReplayReport r = replay_frames(v, text);
  EXPECT_EQ(r.exit_code, kExitPass) << text;
  EXPECT_NE(text.find("QP 0x000031 (UD)"), std::string::npos) << text;
  EXPECT_NE(text.find("Q_Key 0x11112222"), std::string::npos) << text;
  EXPECT_EQ(text.find("QP 0x000001"), std::string::npos) << text;
  EXPECT_EQ(r.run.counters.at("wc.ok"), 4u);
}

TEST(DeriveTransports, WithoutTheReceivesTheCountersDisagree) {
  auto frames = uc_sends();
  auto derived = derive_scenario(frames, {}, "uc");
  ASSERT_TRUE(derived.ok()) << derived.error().message;
  derived->scenario.recvs.clear();
  auto run = run_on_engine(derived->scenario, frames);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->counters.at("wc.ok"), 0u);
}

}  // namespace
}  // namespace roce::replay::derive_transports_test
