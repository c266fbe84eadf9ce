// The plain engine path: QPNs as the scenario says even with gaps between them, actions at a
// frame's time happen before it, and set-up errors come back as messages.
#include "apps/replay/engine_run.hpp"

#include <gtest/gtest.h>

#include "apps/replay_goldens/wire.hpp"
#include "protocol/parser.hpp"

namespace roce::replay::engine_run_test {
namespace {

using namespace roce::proto;
using goldens::Host;
using goldens::kPeer;

constexpr Nanos kT0 = 1'700'000'000 * kSecond;

std::string local() { return "[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n"; }

std::string qp(const std::string& name, std::uint32_t qpn, std::uint32_t peer_qpn) {
  return "[qp " + name + "]\nqpn = " + std::to_string(qpn) + "\npeer_qpn = " + std::to_string(peer_qpn) +
         "\npeer_ip = 10.0.0.2\npeer_mac = 02:00:00:00:00:02\nrq_psn = 100\nstate = rtr\n";
}

Frame send_only(const Host& to, const Host& from, std::uint32_t psn, Nanos at) {
  return Frame{kT0 + at, goldens::build(from, to, goldens::Packet{Opcode::RcSendOnly, psn, {}, goldens::data(16, 1), true}), 0};
}

std::vector<Packet> parse_all(const std::vector<Frame>& frames) {
  std::vector<Packet> out;
  for (const Frame& f : frames) {
    Packet p;
    EXPECT_EQ(parse_frame(f.bytes, {}, p), ParseError::None);
    out.push_back(p);
  }
  return out;
}

TEST(EngineRun, QpsGetTheScenariosQpnsEvenWithGapsBetweenThem) {
  auto s = parse_scenario("[replay]\nstart = 1700000000\n" + local() + qp("a", 0x20, 0x70) + qp("b", 0x25, 0x75) +
                              "[recv]\nqp = a\n[recv]\nqp = b\n",
                          "t");
  ASSERT_TRUE(s.ok()) << s.error().message;
  const Host us_a{goldens::kUs.mac, goldens::kUs.ip, 0x20}, us_b{goldens::kUs.mac, goldens::kUs.ip, 0x25};
  const Host peer_a{kPeer.mac, kPeer.ip, 0x70}, peer_b{kPeer.mac, kPeer.ip, 0x75};
  auto r = run_on_engine(*s, {send_only(us_b, peer_b, 100, 0), send_only(us_a, peer_a, 100, 1000)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto out = parse_all(r->sent);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dest_qp(), 0x75u);
  EXPECT_EQ(out[1].dest_qp(), 0x70u);
  EXPECT_EQ(r->sent[0].ts, kT0);
  EXPECT_EQ(r->sent[1].ts, kT0 + 1000);
  EXPECT_EQ(r->counters.at("wc.ok"), 2u);
}

TEST(EngineRun, AReceivePostedAtAFramesTimeIsThereForIt) {
  auto s = parse_scenario("[replay]\nstart = 1700000000\n" + local() + qp("a", 0x11, 0x77) + "[recv]\nqp = a\nat_us = 10\n", "t");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto r = run_on_engine(*s, {send_only(goldens::kUs, kPeer, 100, 10 * kMicro)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto out = parse_all(r->sent);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(Syndrome{out[0].ext.aeth.syndrome}.is_ack()) << to_string(Syndrome{out[0].ext.aeth.syndrome});
}

TEST(EngineRun, WithoutAStartTheFirstFrameIsTimeZero) {
  auto s = parse_scenario(local() + qp("a", 0x11, 0x77) + "[recv]\nqp = a\nat_us = 5\n", "t");
  ASSERT_TRUE(s.ok()) << s.error().message;
  // The frame comes at 3 us on the capture's clock: before the receive is posted at 5 us.
  auto r = run_on_engine(*s, {Frame{kT0 - 3 * kMicro, {}, 0}, send_only(goldens::kUs, kPeer, 100, 0)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->start, kT0 - 3 * kMicro);
  const auto out = parse_all(r->sent);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(Syndrome{out[0].ext.aeth.syndrome}.is_rnr_nak());
}

TEST(EngineRun, ARegionTheTableRefusesIsASetUpErrorNamingIt) {
  auto s = parse_scenario(local() + qp("a", 0x11, 0x77) + "[mr m]\naccess = remote_write\n", "t");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto r = run_on_engine(*s, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("[mr m]"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace roce::replay::engine_run_test
