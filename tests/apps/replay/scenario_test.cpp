// The scenario text format: every section read into its fields, errors naming file and line,
// and the writer's output read back unchanged.
#include "apps/replay/scenario.hpp"

#include <gtest/gtest.h>

namespace roce::replay::scenario_test {
namespace {

constexpr const char* kFull = R"(# a comment
[replay]
start = 1700000000.000010
tail_us = 12.5
compare_timing = no
credits = ignore
ack_coalescing = allow
max_diffs = 3

[local]
mac = 02:00:00:00:00:01
ip = 10.0.0.1

[dcqcn]
enabled = yes
np_interval_us = 40
np_mode = suppress

[qp a]
type = rc
qpn = 0x169
state = rtr
peer_qpn = 0x139
peer_ip = 10.0.0.2
peer_mac = 02:00:00:00:00:02
rq_psn = 0xabcdef
sq_psn = 7
mtu = 4096
access = remote_read, remote_atomic
max_dest_rd_atomic = 16
min_rnr_timer = 3

[mr m]
size = 64
fill = byte:0xab
bytes = 4 deadbeef
access = local_write, remote_read
rkey = 0x1350d
va = 0x55f4e59cedb0

[recv]
qp = a
count = 3
size = 100
at_us = 5

[expect]
drop.icrc_bad = 2
wc.ok = 1
)";

TEST(Scenario, EverySectionIsReadIntoItsFields) {
  auto r = parse_scenario(kFull, "full.scenario");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Scenario& s = *r;
  EXPECT_EQ(s.start, 1'700'000'000'000'010'000);
  EXPECT_EQ(s.tail, 12'500);
  EXPECT_FALSE(s.compare.timing);
  EXPECT_FALSE(s.compare.credits);
  EXPECT_TRUE(s.compare.coalesce_acks);
  EXPECT_EQ(s.compare.max_diffs, 3u);
  EXPECT_EQ(s.local.ip, rdma::IpAddress::ipv4({10, 0, 0, 1}));
  EXPECT_TRUE(s.dcqcn);
  EXPECT_EQ(s.np.interval, 40'000);
  EXPECT_EQ(s.np.mode, cc::NpMode::Suppress);
  ASSERT_EQ(s.qps.size(), 1u);
  const QpSpec& q = s.qps[0];
  EXPECT_EQ(q.qpn, 0x169u);
  EXPECT_FALSE(q.rts);
  EXPECT_EQ(q.peer_qpn, 0x139u);
  EXPECT_EQ(q.rq_psn, 0xabcdefu);
  EXPECT_EQ(q.mtu, 4096u);
  EXPECT_EQ(q.access, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  EXPECT_EQ(q.max_dest_rd_atomic, 16);
  ASSERT_EQ(s.mrs.size(), 1u);
  const MrSpec& m = s.mrs[0];
  EXPECT_EQ(m.fill, Fill::Byte);
  EXPECT_EQ(m.fill_byte, 0xAB);
  EXPECT_EQ(m.rkey, 0x1350du);
  EXPECT_EQ(m.va, 0x55f4e59cedb0u);
  ASSERT_EQ(m.bytes.size(), 1u);
  EXPECT_EQ(m.bytes[0].first, 4u);
  EXPECT_EQ(m.bytes[0].second.size(), 4u);
  ASSERT_EQ(s.recvs.size(), 1u);
  EXPECT_EQ(s.recvs[0].count, 3u);
  EXPECT_EQ(s.recvs[0].at, 5'000);
  ASSERT_EQ(s.expect.size(), 2u);
  EXPECT_EQ(s.expect[0].first, "drop.icrc_bad");
  EXPECT_EQ(s.expect[0].second, 2u);
}

TEST(Scenario, WrittenTextReadsBackTheSame) {
  auto r = parse_scenario(kFull, "full.scenario");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string text = to_text(*r);
  auto again = parse_scenario(text, "again");
  ASSERT_TRUE(again.ok()) << again.error().message << "\n" << text;
  EXPECT_EQ(to_text(*again), text);
}

struct BadCase {
  const char* text;
  const char* message;  // a part of the error
};

class ScenarioErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ScenarioErrors, AreRefusedWithFileLineAndReason) {
  auto r = parse_scenario(GetParam().text, "bad.scenario");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bad.scenario:"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(GetParam().message), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Scenario, ScenarioErrors,
    ::testing::Values(
        BadCase{"[local]\nmac = 02:00:00:00:00\n", "bad.scenario:2: mac"},
        BadCase{"[nonsense]\n", "unknown section [nonsense]"},
        BadCase{"qpn = 5\n", "outside any section"},
        BadCase{"[qp]\n", "needs a name"},
        BadCase{"[qp a]\nmtu = 1000\n", "mtu"},
        BadCase{"[qp a]\nwhatever = 1\n", "unknown key 'whatever'"},
        BadCase{"[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n[qp a]\nqpn = 1\npeer_ip = 10.0.0.2\n", "at least 2"},
        BadCase{"[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n[qp a]\npeer_ip = 10.0.0.2\n[qp b]\npeer_ip = 10.0.0.2\n",
                "QPN 0x11 is used twice"},
        BadCase{"[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n[qp a]\npeer_ip = ::1\n", "address family"},
        BadCase{"[qp a]\npeer_ip = 10.0.0.2\n", "[local] needs mac and ip"},
        BadCase{"[mr m]\nsize = 8\nbytes = 6 00112233\n", "run past"},
        BadCase{"[mr m]\nrkey = 1\n[mr n]\nrkey = 1\n", "rkey 0x1 is used twice"},
        BadCase{"[recv]\nqp = nobody\n", "no [qp nobody]"},
        BadCase{"[expect]\ncounter.no_such_thing = 1\n", "unknown counter"},
        BadCase{"[replay]\nstart = yesterday\n", "start"},
        BadCase{"[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n[qp a]\npeer_ip = 10.0.0.2\nstate = rtr\n"
                "[wr w]\nqp = a\nopcode = send\n",
                "left in RTR"},
        BadCase{"[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n[qp a]\npeer_ip = 10.0.0.2\n[mr m]\nsize = 16\n"
                "[wr w]\nqp = a\nopcode = write\nmr = m\noffset = 8\nlength = 16\n",
                "run past [mr m]"}));

TEST(Scenario, PatternFillIsTheDocumentedFormula) {
  EXPECT_EQ(fill_byte_at(Fill::Pattern, 0, 0), 3);
  EXPECT_EQ(fill_byte_at(Fill::Pattern, 0, 1), 10);
  EXPECT_EQ(fill_byte_at(Fill::Pattern, 0, 37), static_cast<std::uint8_t>(37 * 7 + 3));
  EXPECT_EQ(fill_byte_at(Fill::Byte, 0x5A, 99), 0x5A);
  EXPECT_EQ(fill_byte_at(Fill::Zero, 0x5A, 99), 0);
}

}  // namespace
}  // namespace roce::replay::scenario_test
