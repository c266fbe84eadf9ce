// roce-gen's command line as a user meets it: --help, and every bad option or value refused
// with exit status 2 and one line on stderr, before DPDK starts. Failures after the EAL is up
// (a bad --vdev, a missing port) exit 1 with one line of ours and leave no runtime folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/json.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::client::gen_cli_test {
namespace {

#ifndef ROCE_GEN_BIN
#define ROCE_GEN_BIN ""
#endif
#ifndef ROCE_CRAFT_BIN
#define ROCE_CRAFT_BIN ""
#endif

test::CommandResult gen(const std::vector<std::string>& args) { return test::run_command(ROCE_GEN_BIN, args); }

std::string joined(const std::vector<std::string>& args) {
  std::string line;
  for (const auto& a : args) line += a + " ";
  return line;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// A complete client command line with `extra` appended (cxxopts keeps the last of a repeat).
std::vector<std::string> client(std::vector<std::string> extra) {
  std::vector<std::string> a{"write", "--dev", "net_null0", "--ip", "10.0.0.1", "--server", "10.0.0.2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void expect_refused(const std::vector<std::string>& args, const std::string& words,
                    const std::string& prefix = "roce-gen: ") {
  const auto r = gen(args);
  EXPECT_EQ(r.signal, 0) << joined(args);
  EXPECT_EQ(r.exit_code, 2) << joined(args) << "\n" << r.err;
  EXPECT_EQ(lines(r.err), 1u) << joined(args) << "\n" << r.err;
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << joined(args) << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(GenCli, HelpNamesEveryTestAndTheMainOptions) {
  const auto r = gen({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* w : {"write, read, send, atomic", "pingpong", "--server", "--listen", "--size", "--iters",
                        "--duration", "--qps", "--mtu", "--verify", "--json", "--vdev", "--dev", "--ip", "--dcqcn",
                        "Examples", "--tx-depth", "--rx-depth", "--cq-mod", "--post_list", "--inline_size", "--outs",
                        "--bidirectional", "--events", "--tos", "--tclass", "--run_infinitely", "--report_gbits",
                        "--output", "--cpu_util", "--mr_per_qp", "--ib-dev", "--ib-port", "--gid-index", "--CPU-freq",
                        "ib_write_bw"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
  EXPECT_EQ(gen({"-h"}).out, r.out);
}

TEST(GenCli, TestAndRoleMistakesAreRefused) {
  expect_refused({}, "name a test");
  expect_refused({"--dev", "x", "--ip", "10.0.0.1", "--listen"}, "name a test");
  expect_refused({"writ", "--dev", "x", "--ip", "10.0.0.1", "--listen"}, "unknown test 'writ'");
  expect_refused({"write", "--dev", "x", "--ip", "10.0.0.1"}, "exactly one of --server ADDR (client) or --listen");
  expect_refused(client({"--listen"}), "exactly one of --server");
  expect_refused(client({"--bw", "--lat"}), "--bw and --lat exclude each other");
  expect_refused(client({"stray"}), "two servers: --server 10.0.0.2 and stray");
  expect_refused(client({"10.0.0.2", "stray"}), "unexpected argument 'stray'");
  expect_refused(client({"--no-such-flag"}), "no-such-flag");
}

// What perftest 4.5's parser refuses, refused the same way.
TEST(GenCli, PerftestCombinationsPerftestRefusesAreRefused) {
  auto test = [](std::string t, std::vector<std::string> extra) {
    std::vector<std::string> a{t, "--dev", "net_null0", "--ip", "10.0.0.1", "--server", "10.0.0.2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_refused(client({"-c", "XRC"}), "bad --connection 'XRC'");
  expect_refused(test("read", {"-c", "UC"}), "UC runs write and send tests only");
  expect_refused(test("atomic", {"-c", "UC"}), "UC runs write and send tests only");
  expect_refused(client({"-c", "UD"}), "-c UD runs send tests only");
  expect_refused(test("pingpong", {"-c", "UC"}), "-c is for the perftest tests");
  expect_refused(test("atomic", {"-A", "SWAP"}), "bad --atomic_type 'SWAP'");
  expect_refused(client({"-A", "CMP_AND_SWAP"}), "-A is for the atomic test");
  expect_refused(client({"--lat", "-q", "2"}), "-q 2: Multiple QPs only available on bw tests");
  expect_refused(test("atomic", {"-a"}), "atomics are 8 bytes");
}

TEST(GenCli, WhereToRunMistakesAreRefused) {
  expect_refused({"write", "--ip", "10.0.0.1", "--server", "10.0.0.2"}, "--dev is required");
  expect_refused({"write", "--dev", "x", "--server", "10.0.0.2"}, "--ip is required");
  expect_refused(client({"--ip", "10.0.0.300"}), "got '10.0.0.300'");
  expect_refused(client({"--ip", "fe80::1::2"}), "got 'fe80::1::2'");
  expect_refused(client({"--oob-port", "70000"}), "oob-port");
  expect_refused(client({"--oob-port", "0"}), "--oob-port 0 works with --listen only");
  expect_refused(client({"--workers", "0"}), "--workers must be 1..16");
  expect_refused(client({"--dcqcn", "maybe"}), "--dcqcn takes on or off");
  expect_refused(client({"--dcqcn-profile", "fast"}), "--dcqcn-profile takes paper, mlx or hpcc");
  expect_refused(client({"--line-rate-gbps", "0"}), "--line-rate-gbps must be positive");
  expect_refused(client({"--line-rate", "-10"}), "--line-rate-gbps must be positive");  // the old spelling
}

TEST(GenCli, BadSizesCountsAndRatesAreRefusedInPerftestsWords) {
  expect_refused(client({"-s", "0"}), "-s 0: Message Size should be between 1 and 2147483647");
  expect_refused(client({"-s", "4X"}), "-s 4X: Message Size should be between 1 and 2147483647");
  expect_refused(client({"-s", "-1"}), "Message Size should be between 1 and 2147483647");
  expect_refused(client({"-s", "3G"}), "Message Size should be between 1 and 2147483647");
  expect_refused(client({"-n", "0"}), "-n 0: Iteration num should be between 5 and 100000000");
  expect_refused(client({"-n", "-5"}), "Iteration num should be between 5 and 100000000");
  expect_refused(client({"-n", "many"}), "-n many: Iteration num argument many should be int");
  expect_refused(client({"-D", "-1"}), "-D -1: Duration period must be positive");
  expect_refused(client({"-D", "soon"}), "-D soon: Duration period argument soon should be a number of seconds");
  expect_refused(client({"-q", "0"}), "-q 0: num of Qps should be between 1 and 16384");
  expect_refused(client({"-q", "-2"}), "num of Qps should be between 1 and 16384");
  expect_refused(client({"-q", "20000"}), "num of Qps should be between 1 and 16384");
  expect_refused(client({"-t", "0"}), "-t 0: Tx depth should be between 1 and 15000");
  expect_refused(client({"-m", "1500"}), "bad --mtu '1500'");
  expect_refused(client({"-m", "0"}), "bad --mtu '0'");
  expect_refused(client({"--rate-limit", "fast"}), "bad --rate-limit 'fast'");
  expect_refused(client({"--rate-limit", "-1"}), "--rate-limit must not be negative");
  expect_refused({"pingpong", "--dev", "x", "--ip", "10.0.0.1", "--server", "10.0.0.2", "-s", "1M"},
                 "pingpong sizes above 64 KiB");
}

// With --json an error is also a JSON object on stdout, and the exit status stays 2.
TEST(GenCli, ErrorsComeOutAsJsonWithJson) {
  for (const auto& args : {client({"-t", "0", "--json"}), std::vector<std::string>{"write", "--json"},
                           client({"--json", "--no-such-flag"})}) {
    const auto r = gen(args);
    EXPECT_EQ(r.exit_code, 2) << joined(args);
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    const test::Json j = test::parse_json(r.out);
    EXPECT_EQ(j["exit_status"].u64(), 2u) << r.out;
    EXPECT_EQ("roce-gen: " + j["error"].str() + "\n", r.err) << r.out;
  }
}

// Flags about a device the transport does not have are taken, each with one note on stderr;
// the run then stops at the missing port, past the parser.
TEST(GenCli, DeviceFlagsAreAcceptedWithANoteEach) {
  const std::string prefix = "gen_cli_apptests_dev_" + std::to_string(::getpid());
  const auto r = gen({"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix, "--log-level=error",
                      "--no-telemetry", "--", "ib_write_bw", "-d", "rxe0", "-i", "1", "-x", "3", "-F", "--vdev",
                      "net_null0", "--dev", "net_null7", "--ip", "10.0.0.1", "10.0.0.2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const char* w : {"-d rxe0: ignored", "-i 1: port 1", "-x 3: the GID is --ip's", "-F: nothing to check",
                        "no DPDK port named 'net_null7'"})
    EXPECT_NE(r.err.find(w), std::string::npos) << w << "\n" << r.err;
  EXPECT_EQ(lines(r.err), 5u) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix));
}

// The EAL's own complaints go to stderr as DPDK prints them; ours is the last line.
std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TEST(GenCli, ABadVdevStopsAtTheEalWithAReasonAndNoLeftovers) {
  const std::string prefix = "gen_cli_apptests_" + std::to_string(::getpid());
  const auto r = gen({"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix, "--log-level=error",
                      "--no-telemetry", "--", "write", "--vdev", "net_nosuchdriver0", "--dev", "net_nosuchdriver0",
                      "--ip", "10.0.0.1", "--server", "10.0.0.2"});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(last_line(r.err).rfind("roce-gen: DPDK EAL initialisation failed", 0), 0u) << r.err;
  EXPECT_NE(last_line(r.err).find("net_nosuchdriver0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "runtime folder left behind";
}

// A well-formed command line gets past the parser to a port that is not there: bad input too.
TEST(GenCli, AMissingPortIsOneLineAndNoLeftovers) {
  const std::string prefix = "gen_cli_apptests_np_" + std::to_string(::getpid());
  const auto r = gen({"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix, "--log-level=error",
                      "--no-telemetry", "--", "write", "--vdev", "net_null0", "--dev", "net_null7", "--ip",
                      "10.0.0.1", "--server", "10.0.0.2"});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("net_null7"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "runtime folder left behind";
}

// `roce-gen raw` is roce-craft: the same options give the same packets.
TEST(GenRaw, WritesTheSameStreamAsRoceCraft) {
  test::TempDir dir;
  const std::vector<std::string> opts{"--count", "64", "--opcode", "RC_SEND_FIRST,RC_SEND_MIDDLE,RC_SEND_LAST",
                                      "--ce-every", "4", "--bad-icrc-every", "9", "--start-time", "1700000000"};
  std::vector<std::string> a{"raw", "--pcap", (dir / "gen.pcap").string()}, b{"--pcap", (dir / "craft.pcap").string()};
  a.insert(a.end(), opts.begin(), opts.end());
  b.insert(b.end(), opts.begin(), opts.end());
  const auto ra = gen(a);
  const auto rb = test::run_command(ROCE_CRAFT_BIN, b);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_NE(ra.out.find("64 frames"), std::string::npos) << ra.out;
  EXPECT_NE(ra.out.find("CE 16"), std::string::npos) << ra.out;
  const auto pa = test::read_file(dir / "gen.pcap"), pb = test::read_file(dir / "craft.pcap");
  EXPECT_GT(pa.size(), 64u * 60);
  EXPECT_EQ(pa, pb);
}

TEST(GenRaw, HelpAndErrorsNameRoceGenRaw) {
  const auto r = gen({"raw", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("roce-gen raw --pcap"), std::string::npos);
  EXPECT_EQ(r.out.find("roce-craft"), std::string::npos);
  expect_refused({"raw", "--pcap", "a.pcap", "--vlan", "5000"}, "--vlan: 5000 is above 4094", "roce-gen raw: ");
  expect_refused({"raw"}, "no output", "roce-gen raw: ");
}

TEST(GenEmulate, BadFaultsAndPortsAreRefused) {
  const auto help = gen({"emulate", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* w : {"--port-a", "--port-b", "--loss", "--dup", "--reorder", "--delay", "--rate", "--red", "--seed"})
    EXPECT_NE(help.out.find(w), std::string::npos) << w;
  const std::string p = "roce-gen emulate: ";
  const std::vector<std::string> ports{"emulate", "--port-a", "net_null0", "--port-b", "net_null1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = ports;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_refused({"emulate", "--port-a", "x"}, "give both ports", p);
  expect_refused({"emulate", "--port-a", "x", "--port-b", "x"}, "two different ports", p);
  expect_refused(with({"--loss", "1.5"}), "loss must be a probability", p);
  expect_refused(with({"--dup", "-0.1"}), "duplicate must be a probability", p);
  expect_refused(with({"--reorder", "2"}), "reorder must be a probability", p);
  expect_refused(with({"--delay", "-5"}), "delays must not be negative", p);
  expect_refused(with({"--rate", "-1"}), "--rate must be 0", p);
  expect_refused(with({"--rate", "10", "--red", "9,5,0.1"}), "bottleneck queue", p);
  expect_refused(with({"--red", "1,2"}), "bad --red '1,2'", p);
  expect_refused(with({"--red", "a,b,c"}), "bad --red", p);
  expect_refused(with({"--seed", "x"}), "--seed", p);
  expect_refused(with({"--duration", "-1"}), "must not be negative", p);
  expect_refused(with({"stray"}), "unexpected argument 'stray'", p);
}

// Two null ports: each "receives" an endless stream of 64-byte frames, so the emulator forwards
// at full speed both ways and the seeded loss shows in the counters.
TEST(GenEmulate, ForwardsBothWaysAndLosesTheShareAsked) {
  const std::string prefix = "gen_emu_apptests_" + std::to_string(::getpid());
  const auto r = gen({"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix, "--log-level=error",
                      "--no-telemetry", "-l", "0", "--", "emulate", "--vdev", "net_null0", "--vdev", "net_null1",
                      "--port-a", "net_null0", "--port-b", "net_null1", "--loss", "0.25", "--dup", "0.05", "--seed",
                      "7", "--duration", "1.5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix));
  EXPECT_NE(r.err.find("net_null0->net_null1"), std::string::npos) << "a progress line per second\n" << r.err;
  const test::Json j = test::parse_json(r.out);
  EXPECT_GT(j["seconds"].num(), 1.4);
  EXPECT_EQ(j["seed"].u64(), 7u);
  for (const char* dir : {"a_to_b", "b_to_a"}) {
    const test::Json& d = j[dir];
    const double received = d["received"].num(), lost = d["lost"].num();
    ASSERT_GT(received, 10'000) << dir;
    EXPECT_NEAR(lost / received, 0.25, 0.02) << dir;
    EXPECT_NEAR(d["duplicated"].num() / (received - lost), 0.05, 0.01) << dir;
    // Every frame received is lost, forwarded, or still held; every duplicate is forwarded too.
    EXPECT_LE(d["forwarded"].num() + lost, received + d["duplicated"].num()) << dir;
    EXPECT_GT(d["forwarded"].num(), 0) << dir;
  }
}

}  // namespace
}  // namespace roce::client::gen_cli_test
