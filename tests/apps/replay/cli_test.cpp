// roce-replay as a user runs it: every golden scenario through the built binary on the plain
// engine and on the DPDK net_pcap dataplane, a corrupted golden that must fail with a readable
// diff, and command lines that must be refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "apps/replay/frames.hpp"
#include "apps/replay_goldens/cases.hpp"
#include "protocol/icrc.hpp"
#include "protocol/parser.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::replay {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;

#ifndef ROCE_REPLAY_BIN
#define ROCE_REPLAY_BIN ""
#endif

const std::string& replay_bin() {
  static const std::string bin = [] {
    const char* v = std::getenv("ROCE_REPLAY_BIN");
    return std::string(v && *v ? v : ROCE_REPLAY_BIN);
  }();
  return bin;
}

fs::path golden(const std::string& file) { return fs::path(ROCE_SOURCE_ROOT) / "pcap" / "replay" / file; }

std::vector<std::string> golden_args(const std::string& name, const std::string& expect = "") {
  return {"-i", golden(name + ".in.pcap").string(), "--scenario", golden(name + ".scenario").string(), "-e",
          expect.empty() ? golden(name + ".out.pcap").string() : expect};
}

std::string shown(const CommandResult& r) { return "stdout:\n" + r.out + "stderr:\n" + r.err; }

class GoldenCli : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCli, PassesOnTheEngine) {
  const CommandResult r = test::run_command(replay_bin(), golden_args(GetParam()));
  EXPECT_EQ(r.exit_code, 0) << shown(r);
  EXPECT_NE(r.out.find("PASS: the output's"), std::string::npos) << shown(r);
}

// The same scenario and golden on the real dataplane path: mbufs, the worker's poll loop, the
// TX buffer, net_pcap reading the capture and writing the output. Timing is not compared.
TEST_P(GoldenCli, PassesOnTheDpdkDataplane) {
  test::TempDir dir;
  auto args = golden_args(GetParam());
  args.push_back("--dpdk");
  args.push_back("-o");
  args.push_back((dir / "sent.pcap").string());
  const CommandResult r = test::run_command(replay_bin(), args);
  EXPECT_EQ(r.exit_code, 0) << shown(r);
  EXPECT_NE(r.out.find("on the DPDK dataplane (net_pcap)"), std::string::npos) << shown(r);
  EXPECT_NE(r.out.find("PASS: the output's"), std::string::npos) << shown(r);
  EXPECT_TRUE(fs::exists(dir / "sent.pcap"));
}

std::vector<std::string> golden_names() {
  std::vector<std::string> v;
  for (const auto& c : goldens::golden_cases()) v.push_back(c.name);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Replay, GoldenCli, ::testing::ValuesIn(golden_names()),
                         [](const auto& info) { return info.param; });

// The golden's NAK claims MSN 5 (the engine, rightly, sends 2): the replay must fail, say
// where, and name the field with both values.
TEST(ReplayCli, CorruptedGoldenFailsWithAReadableDiff) {
  auto frames = read_frames(golden("gap_nak.out.pcap").string());
  ASSERT_TRUE(frames.ok()) << frames.error().message;
  bool changed = false;
  for (Frame& f : *frames) {
    proto::Packet p;
    ASSERT_EQ(proto::parse_frame(f.bytes, {}, p), proto::ParseError::None);
    if (p.ext.aeth.syndrome != 0x60) continue;
    const std::size_t msn_at = p.bth_offset + sizeof(proto::Bth) + 1;
    f.bytes[msn_at + 2] = std::byte{5};
    const std::size_t icrc_at = p.datagram_end - proto::kIcrcBytes;
    proto::write_icrc(proto::MutableByteSpan(f.bytes).subspan(icrc_at, 4),
                      proto::compute_icrc(proto::CrcBackend::Isal, p.ip_version,
                                          proto::ByteSpan(f.bytes).subspan(p.l3_offset, icrc_at - p.l3_offset)));
    changed = true;
  }
  ASSERT_TRUE(changed);
  test::TempDir dir;
  const std::string bad = (dir / "gap_nak.bad.pcap").string();
  ASSERT_TRUE(write_frames(bad, *frames).ok());
  const CommandResult r = test::run_command(replay_bin(), golden_args("gap_nak", bad));
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("FAIL: 1 difference"), std::string::npos) << shown(r);
  EXPECT_NE(r.out.find("responses to QP 0x000077, #3: expected frame 3 at +20 us: RC_ACKNOWLEDGE psn 0x000000 aeth 0x60"),
            std::string::npos)
      << shown(r);
  EXPECT_NE(r.out.find("aeth.msn  5 / 2"), std::string::npos) << shown(r);
}

TEST(ReplayCli, AGoldenWithAFrameTooManyFails) {
  auto frames = read_frames(golden("bad_rkey.out.pcap").string());
  ASSERT_TRUE(frames.ok());
  frames->push_back(frames->back());
  test::TempDir dir;
  ASSERT_TRUE(write_frames((dir / "more.pcap").string(), *frames).ok());
  const CommandResult r = test::run_command(replay_bin(), golden_args("bad_rkey", (dir / "more.pcap").string()));
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("missing from the output"), std::string::npos) << shown(r);
}

TEST(ReplayCli, ACounterThatDiffersFromExpectFails) {
  test::TempDir dir;
  const std::string text = std::string("[expect]\ndrop.icrc_bad = 2\n");
  std::ifstream in(golden("bad_icrc.scenario"));
  std::string scenario((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  scenario.replace(scenario.find("drop.icrc_bad = 1"), 17, "drop.icrc_bad = 2");
  test::write_file(dir / "s.scenario", scenario.data(), scenario.size());
  const CommandResult r = test::run_command(
      replay_bin(), {"-i", golden("bad_icrc.in.pcap").string(), "--scenario", (dir / "s.scenario").string()});
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("drop.icrc_bad: expected 2, got 1"), std::string::npos) << shown(r);
}

// -s, the scenario's old short name, still works for scripts (-s is a size in the other tools).
TEST(ReplayCli, OldDashSStillNamesTheScenario) {
  auto args = golden_args("gap_nak");
  ASSERT_EQ(args[2], "--scenario");
  args[2] = "-s";
  const CommandResult r = test::run_command(replay_bin(), args);
  EXPECT_EQ(r.exit_code, 0) << shown(r);
  const CommandResult help = test::run_command(replay_bin(), {"--help"});
  EXPECT_EQ(help.out.find("-s,"), std::string::npos) << "old spellings stay out of the help";
}

TEST(ReplayCli, WritesWhatWasSent) {
  test::TempDir dir;
  auto args = golden_args("inorder_write_send_read");
  args.push_back("-o");
  args.push_back((dir / "sent.pcap").string());
  const CommandResult r = test::run_command(replay_bin(), args);
  ASSERT_EQ(r.exit_code, 0) << shown(r);
  auto sent = read_frames((dir / "sent.pcap").string());
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  EXPECT_EQ(sent->size(), 7u);
}

struct Refused {
  std::vector<std::string> args;
  const char* message;
};

class ReplayCliUsage : public ::testing::TestWithParam<Refused> {};

TEST_P(ReplayCliUsage, IsRefusedWithExitTwoAndAReason) {
  std::vector<std::string> args;
  for (const std::string& a : GetParam().args) {
    std::string s = a;
    if (const auto at = s.find("@G/"); at != std::string::npos) s.replace(at, 3, golden("").string());
    args.push_back(s);
  }
  const CommandResult r = test::run_command(replay_bin(), args);
  EXPECT_EQ(r.exit_code, 2) << shown(r);
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << shown(r);
}

INSTANTIATE_TEST_SUITE_P(
    Replay, ReplayCliUsage,
    ::testing::Values(Refused{{}, "no capture given"},
                      Refused{{"-i", "@G/gap_nak.in.pcap"}, "give one of --scenario FILE and --derive (replay into the engine), or --dev PORT"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--derive", "--scenario", "@G/gap_nak.scenario"}, "give one of"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--derive", "-s", "@G/gap_nak.scenario"}, "give one of"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "-s", "@G/gap_nak.scenario", "--scenario", "@G/gap_nak.scenario"},
                              "-s is the old name of --scenario"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--pps", "10"}, "--pps goes with --dev PORT"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "-s", "@G/gap_nak.scenario"}, "use one or the other"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "--pps", "1", "--topspeed"}, "give one of --multiplier"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "--ip-map", "10.0.0.1"}, "not OLD=NEW"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "--qpn-map", "0x11=0x1000000"}, "24-bit QPNs"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "--srcmac", "zz"}, "not a MAC address"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "--sport", "70000"}, "not a UDP port"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--dev", "p", "--psn-base", "1", "--psn-offset", "2"}, "not both"},
                      Refused{{"-i", "/nonexistent.pcap", "--dev", "p"}, "/nonexistent.pcap"},
                      Refused{{"-i", "/nonexistent.pcap", "--derive"}, "/nonexistent.pcap"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--scenario", "@G/gap_nak.in.pcap"}, "gap_nak.in.pcap:1:"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--scenario", "@G/gap_nak.scenario", "-e", "/nonexistent.pcap"},
                              "/nonexistent.pcap"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--derive", "--responder", "ten"}, "not an IP address"},
                      Refused{{"--no-pci", "--", "-i", "@G/gap_nak.in.pcap", "--derive"}, "need --dpdk"},
                      Refused{{"-i", "@G/gap_nak.in.pcap", "--derive", "extra"}, "unexpected argument 'extra'"}));

TEST(ReplayCli, HelpDescribesTheExitStatus) {
  const CommandResult r = test::run_command(replay_bin(), {"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Exit status: 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("docs/replay.md"), std::string::npos) << r.out;
}

// One real capture the whole way through the dataplane: rxe's ib_read_bw, 32 READs.
TEST(ReplayCliDpdk, RealReadCaptureMatchesRxeOnTheDataplane) {
  std::string why;
  const auto dir = test::find_captures_dir(why);
  if (!dir) GTEST_SKIP() << why;
  const CommandResult r =
      test::run_command(replay_bin(), {"-i", (*dir / "rxe" / "ib_read_bw.pcap").string(), "--derive", "--dpdk"});
  EXPECT_EQ(r.exit_code, 0) << shown(r);
  EXPECT_NE(r.out.find("PASS: the output's 128 RoCEv2 frames match"), std::string::npos) << shown(r);
}

// --dev: tcpreplay. net_pcap's tx_pcap stands in for the wire (the netns test puts frames on a
// real interface).
struct Sent {
  CommandResult r;
  std::vector<Frame> frames;
};

Sent send_through_pcap(const std::string& input, std::vector<std::string> extra) {
  test::TempDir dir;
  const std::string out = (dir / "wire.pcap").string();
  std::vector<std::string> args{"--no-huge", "--no-pci", "-m", "256", "--log-level=error", "--no-telemetry",
                                "--file-prefix=replay_tx_test_" + std::to_string(::getpid()), "--vdev=net_pcap0,tx_pcap=" + out,
                                "--", "-i", input, "--dev", "net_pcap0"};
  args.insert(args.end(), extra.begin(), extra.end());
  Sent s{test::run_command(replay_bin(), args), {}};
  if (fs::exists(out))
    if (auto f = read_frames(out)) s.frames = std::move(*f);
  return s;
}

TEST(ReplayCliDpdk, SendsEveryFrameOfACaptureUnchanged) {
  const std::string in = golden("gap_nak.in.pcap").string();
  auto original = read_frames(in);
  ASSERT_TRUE(original.ok());
  const Sent s = send_through_pcap(in, {"--topspeed", "--loop", "2"});
  ASSERT_EQ(s.r.exit_code, 0) << shown(s.r);
  ASSERT_EQ(s.frames.size(), 2 * original->size());
  for (std::size_t i = 0; i < s.frames.size(); ++i) EXPECT_EQ(s.frames[i].bytes, (*original)[i % original->size()].bytes) << i;
  EXPECT_NE(s.r.out.find("Actual: " + std::to_string(2 * original->size()) + " packets"), std::string::npos) << shown(s.r);
  EXPECT_NE(s.r.out.find("2 loops"), std::string::npos) << shown(s.r);
}

TEST(ReplayCliDpdk, RewritesAddressesQpnsAndPsnsWithGoodIcrcs) {
  const std::string in = golden("inorder_write_send_read.in.pcap").string();
  const Sent s = send_through_pcap(in, {"--topspeed", "--ip-map", "10.0.0.1=10.50.0.1", "--qpn-map", "0x77=0x377", "--psn-base",
                                        "0x100", "--sport", "5000", "--dstmac", "02:aa:bb:cc:dd:ee"});
  ASSERT_EQ(s.r.exit_code, 0) << shown(s.r);
  EXPECT_NE(s.r.out.find("PSN base: frame 1's PSN"), std::string::npos) << shown(s.r);
  ASSERT_FALSE(s.frames.empty());
  proto::Packet p;
  ASSERT_EQ(proto::parse_frame(s.frames.front().bytes, {}, p), proto::ParseError::None);
  EXPECT_EQ(p.psn(), 0x100u);
  EXPECT_EQ(p.udp_src_port, 5000);
  EXPECT_EQ(p.eth.dst, (proto::MacAddr{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}));
  for (const Frame& f : s.frames) {
    if (proto::parse_frame(f.bytes, {}, p) != proto::ParseError::None) continue;
    EXPECT_EQ(p.icrc_status, proto::IcrcStatus::Ok);
    EXPECT_TRUE(p.ipv4_checksum_ok);
    EXPECT_NE(p.ipv4.src, (proto::Ipv4Addr{10, 0, 0, 1}));
    EXPECT_NE(p.dest_qp(), 0x77u);
  }
}

TEST(ReplayCliDpdk, PacesAtTheRateAsked) {
  // 51 frames at 500 per second cannot leave in less than 100 ms (only a lower bound is
  // checked: a loaded machine may take longer).
  const std::string in = golden("inorder_write_send_read.in.pcap").string();
  const auto n = read_frames(in)->size();
  const Sent s = send_through_pcap(in, {"--pps", "500", "--loop", "0", "--limit", "51"});
  ASSERT_EQ(s.r.exit_code, 0) << shown(s.r);
  EXPECT_EQ(s.frames.size(), 51u) << n;
  const auto at = s.r.out.find(" sent in ");
  ASSERT_NE(at, std::string::npos) << shown(s.r);
  EXPECT_GE(std::stod(s.r.out.substr(at + 9)), 0.099) << shown(s.r);
}

TEST(ReplayCliDpdk, AnUnknownPortSaysHowToMakeOne) {
  const CommandResult r = test::run_command(replay_bin(), {"-i", golden("gap_nak.in.pcap").string(), "--dev", "net_nothing0"});
  EXPECT_EQ(r.exit_code, 2) << shown(r);
  EXPECT_NE(r.err.find("--vdev=net_af_packet0,iface="), std::string::npos) << shown(r);
}

}  // namespace
}  // namespace roce::replay
