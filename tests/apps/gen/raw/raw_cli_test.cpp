// `roce-gen raw` as a user runs it: help, the opcode list, pcap runs parsed back, a DPDK run on
// a null port, and bad command lines refused with one line and exit status 2; and roce-craft,
// its old name, with the old option spellings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "capture/capture_reader.hpp"
#include "protocol/parser.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::gen {
namespace {

using namespace roce::proto;

#ifndef ROCE_GEN_BIN
#define ROCE_GEN_BIN ""
#endif
#ifndef ROCE_CRAFT_BIN
#define ROCE_CRAFT_BIN ""
#endif

// roce-gen [EAL options --] raw ARGS
test::CommandResult craft(std::vector<std::string> args) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  args.insert(dashes == args.end() ? args.begin() : dashes + 1, "raw");
  return test::run_command(ROCE_GEN_BIN, args);
}

test::CommandResult old_name(const std::vector<std::string>& args) { return test::run_command(ROCE_CRAFT_BIN, args); }

void expect_refused(const std::vector<std::string>& args, const std::string& words) {
  const auto r = craft(args);
  std::string line;
  for (const auto& a : args) line += a + " ";
  EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << line << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("roce-gen raw: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << line << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

struct Read {
  std::vector<Packet> packets;
  std::vector<std::int64_t> ns;
  std::vector<std::vector<std::byte>> bytes;
};

Read read_pcap(const std::string& path) {
  capture::CaptureReader r;
  EXPECT_TRUE(r.open(path)) << r.error();
  Read out;
  capture::CaptureRecord rec;
  while (r.next(rec) == capture::ReadStatus::Record) {
    out.bytes.emplace_back(rec.data.begin(), rec.data.end());
    out.ns.push_back(rec.ts_sec * 1'000'000'000 + rec.ts_nsec);
  }
  for (const auto& b : out.bytes) {
    Packet p;
    EXPECT_EQ(parse_frame(b, {}, p), ParseError::None);
    out.packets.push_back(p);
  }
  return out;
}

TEST(RawGenCli, HelpExplainsOutputsRatesAndEveryN) {
  const auto r = craft({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* w : {"--pcap FILE", "--dev PORT", "--mtu", "--pps", "--gbps", "--opcode", "--psn-mode", "--ce-every",
                        "--bad-icrc-every", "--vlan", "Examples:", "Exit status", "packets 10, 20, 30"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
}

TEST(RawGenCli, ListsTheOpcodeTable) {
  const auto r = craft({"--list-opcodes"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("0x0a    RC_RDMA_WRITE_ONLY"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0x81    CNP"), std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 42);  // heading, 40 opcodes, note
}

TEST(RawGenCli, PcapRunGivesExactlyTheStreamAsked) {
  test::TempDir dir;
  const std::string path = (dir / "s.pcap").string();
  const auto r = craft({"--pcap", path, "--count", "120", "--opcode", "rc-send-only,0x0c,RC_ACKNOWLEDGE",
                        "--psn", "0xFFFFF0", "--psn-dup-every", "10", "--ce-every", "6", "--bad-icrc-every", "40",
                        "--vlan", "100,200", "--pcp", "5", "--src-ip", "fd00::1", "--dst-ip", "fd00::2", "--qpn",
                        "0x123", "--size", "333", "--pps", "250k", "--start-time", "1700000000", "--syndrome", "0x61",
                        "--dma-len", "65536"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("120 frames"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CE 20; bad ICRC 3"), std::string::npos) << r.out;
  const Read f = read_pcap(path);
  ASSERT_EQ(f.packets.size(), 120u);
  std::map<std::uint8_t, int> by_opcode;
  int ce = 0, bad = 0;
  std::uint32_t expect = 0xFFFFF0, prev = 0;
  for (std::size_t i = 0; i < f.packets.size(); ++i) {
    const Packet& p = f.packets[i];
    ++by_opcode[p.opcode()];
    ce += p.ecn() == Ecn::Ce;
    bad += p.icrc_status == IcrcStatus::Bad;
    const std::uint32_t want = (i + 1) % 10 == 0 ? prev : expect++ % (1u << 24);
    EXPECT_EQ(p.psn(), want) << i;
    prev = want;
    EXPECT_EQ(p.ip_version, IpVersion::V6);
    EXPECT_EQ(p.eth.vlan_count, 2);
    EXPECT_EQ(p.eth.vlan_tci[1], 5 << 13 | 200);
    EXPECT_EQ(p.dest_qp(), 0x123u);
    EXPECT_EQ(f.ns[i], 1'700'000'000'000'000'000 + static_cast<std::int64_t>(i) * 4000);
    if (p.opcode() == raw(Opcode::RcSendOnly)) {
      EXPECT_EQ(p.payload_length, 333u);
    }
    if (p.opcode() == raw(Opcode::RcReadRequest)) {
      EXPECT_EQ(p.ext.reth.dma_length.get(), 65536u);
    }
    if (p.opcode() == raw(Opcode::RcAck)) {
      EXPECT_EQ(p.ext.aeth.syndrome, 0x61);
    }
  }
  EXPECT_EQ(by_opcode[raw(Opcode::RcSendOnly)], 40);
  EXPECT_EQ(by_opcode[raw(Opcode::RcReadRequest)], 40);
  EXPECT_EQ(by_opcode[raw(Opcode::RcAck)], 40);
  EXPECT_EQ(ce, 20);
  EXPECT_EQ(bad, 3);
}

TEST(RawGenCli, GigabitRateSpacesTimestampsByWireTime) {
  test::TempDir dir;
  const std::string path = (dir / "g.pcap").string();
  const auto r = craft({"--pcap", path, "--count", "1000", "--size", "4096", "--mtu", "4096", "--gbps", "100",
                        "--start-time", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Read f = read_pcap(path);
  ASSERT_EQ(f.packets.size(), 1000u);
  // 4096 payload + 74 bytes of headers + 24 of wire overhead, at 100 Gb/s.
  const double frame_bits = (static_cast<double>(f.bytes[0].size()) + 24) * 8;
  const double gbps = 999 * frame_bits / static_cast<double>(f.ns.back() - f.ns.front());
  EXPECT_NEAR(gbps, 100.0, 1e-3);
}

TEST(RawGenCli, SendsOnADpdkPort) {
  const std::string prefix = "--file-prefix=craft_cli_" + std::to_string(getpid());
  const auto r = craft({"--no-huge", "--no-pci", "-m", "256", prefix, "--vdev=net_null0", "--log-level=error",
                        "--no-telemetry", "--", "--dev", "net_null0", "--count", "5000", "--pps", "1M", "--ce-every",
                        "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("net_null0: 5000 frames"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CE 500"), std::string::npos) << r.out;
}

TEST(RawGenCli, AMissingPortOrUnwritableFileIsBadInput) {
  const std::string prefix = "--file-prefix=craft_cli_np_" + std::to_string(getpid());
  auto r = craft({"--no-huge", "--no-pci", "-m", "256", prefix, "--log-level=error", "--no-telemetry", "--", "--dev",
                  "net_ring7"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no DPDK port named 'net_ring7'"), std::string::npos) << r.err;
  r = craft({"--pcap", "/nonexistent-dir/x.pcap"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(RawGenCli, BadCommandLinesAreRefusedWithOneLineAndStatus2) {
  expect_refused({}, "no output");
  expect_refused({"--pcap", "a.pcap", "--dev", "0"}, "not both");
  expect_refused({"--pcap", "a.pcap", "--opcode", "WRITE"}, "'WRITE' is not an opcode");
  expect_refused({"--pcap", "a.pcap", "--opcode", "0x15"}, "'0x15' is not an opcode");
  expect_refused({"--pcap", "a.pcap", "--qpn", "0x1000000"}, "--qpn: 0x1000000 is above 0xFFFFFF");
  expect_refused({"--pcap", "a.pcap", "--psn", "16777216"}, "--psn");
  expect_refused({"--pcap", "a.pcap", "--mtu", "1500"}, "--mtu: 1500 is not 256");
  expect_refused({"--pcap", "a.pcap", "-m", "1500"}, "--mtu: 1500 is not 256");
  expect_refused({"--pcap", "a.pcap", "--size", "2000"}, "above the PMTU");
  expect_refused({"--pcap", "a.pcap", "--opcode", "RC_SEND_LAST", "--size", "0"}, "cannot carry 0");
  expect_refused({"--pcap", "a.pcap", "--pps", "fast"}, "--pps: 'fast' is not a number");
  expect_refused({"--pcap", "a.pcap", "--pps", "-5"}, "--pps");
  expect_refused({"--pcap", "a.pcap", "--pps", "1M", "--gbps", "10"}, "not both");
  expect_refused({"--pcap", "a.pcap", "--ecn", "red"}, "--ecn: 'red'");
  expect_refused({"--pcap", "a.pcap", "--psn-mode", "sideways"}, "--psn-mode");
  expect_refused({"--pcap", "a.pcap", "--psn-mode", "random", "--psn-dup-every", "3"}, "increment or wrap");
  expect_refused({"--pcap", "a.pcap", "--vlan", "4095"}, "--vlan: 4095 is above 4094");
  expect_refused({"--pcap", "a.pcap", "--vlan", "1,2,3"}, "at most two tags");
  expect_refused({"--pcap", "a.pcap", "--pcp", "3"}, "--pcp needs --vlan");
  expect_refused({"--pcap", "a.pcap", "--src-ip", "fd00::1"}, "same IP family");
  expect_refused({"--pcap", "a.pcap", "--dst-ip", "10.0.0.300"}, "not an IPv4 or IPv6 address");
  expect_refused({"--pcap", "a.pcap", "--src-mac", "02:00:00"}, "not a MAC address");
  expect_refused({"--pcap", "a.pcap", "--count", "ten"}, "--count: 'ten' is not a number");
  expect_refused({"--pcap", "a.pcap", "--count", "0"}, "at least one packet");
  expect_refused({"--pcap", "a.pcap", "--duration", "1"}, "--duration works with --dev only");
  expect_refused({"--pcap", "a.pcap", "--payload", "stripes"}, "--payload");
  expect_refused({"--pcap", "a.pcap", "--dscp", "64"}, "--dscp: 64 is above 63");
  expect_refused({"--pcap", "a.pcap", "--no-such-option"}, "no-such-option");
  expect_refused({"--pcap", "a.pcap", "stray"}, "unexpected argument 'stray'");
  expect_refused({"--pcap"}, "pcap");
}

// The old name and spellings keep working for scripts: roce-craft is `roce-gen raw`, --port
// is --dev, --pmtu is --mtu; -p, the TCP port in the other tools, is refused with a pointer.
TEST(RawGenCli, OldNameAndSpellingsStillWork) {
  test::TempDir dir;
  const std::string a = (dir / "a.pcap").string(), b = (dir / "b.pcap").string();
  const auto r1 = old_name({"--pcap", a, "--count", "30", "--size", "2048", "--pmtu", "2048", "--start-time", "1"});
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const auto r2 = craft({"--pcap", b, "--count", "30", "--size", "2048", "--mtu", "2048", "--start-time", "1"});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(read_pcap(a).bytes, read_pcap(b).bytes);
  const auto help = old_name({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("roce-craft --pcap w.pcap"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("roce-gen raw"), std::string::npos) << help.out;

  const std::string prefix = "--file-prefix=craft_cli_old_" + std::to_string(getpid());
  const auto r3 = old_name({"--no-huge", "--no-pci", "-m", "256", prefix, "--vdev=net_null0", "--log-level=error",
                            "--no-telemetry", "--", "--port", "net_null0", "--count", "100"});
  ASSERT_EQ(r3.exit_code, 0) << r3.err;
  EXPECT_NE(r3.out.find("net_null0: 100 frames"), std::string::npos) << r3.out;

  const auto r4 = old_name({"--pcap", a, "--pmtu", "1500"});
  EXPECT_EQ(r4.exit_code, 2);
  EXPECT_EQ(r4.err.rfind("roce-craft: --pmtu: 1500 is not 256", 0), 0u) << r4.err;
  expect_refused({"--pcap", "a.pcap", "--mtu", "1024", "--pmtu", "1024"}, "--pmtu is the old name of --mtu");
  expect_refused({"--dev", "0", "--port", "0"}, "--port is the old name of --dev");
  expect_refused({"-p", "0"}, "the DPDK port is --dev");
}

}  // namespace
}  // namespace roce::gen
