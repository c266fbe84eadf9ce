// roce-gen's command line as a user meets it: --help, and every bad option or value refused
// with exit status 2 and one line on stderr, before DPDK starts. Failures after the EAL is up
// (a bad --vdev, a missing port) exit 1 with one line of ours and leave no runtime folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"

namespace roce::app {
namespace {

#ifndef ROCE_GEN_BIN
#define ROCE_GEN_BIN ""
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

void expect_refused(const std::vector<std::string>& args, const std::string& words) {
  const auto r = gen(args);
  EXPECT_EQ(r.signal, 0) << joined(args);
  EXPECT_EQ(r.exit_code, 2) << joined(args) << "\n" << r.err;
  EXPECT_EQ(lines(r.err), 1u) << joined(args) << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("roce-gen: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << joined(args) << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(GenCli, HelpNamesEveryTestAndTheMainOptions) {
  const auto r = gen({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* w : {"write, read, send, atomic", "pingpong", "--server", "--listen", "--size", "--iters",
                        "--duration", "--qps", "--mtu", "--verify", "--json", "--vdev", "--dev", "--ip", "--dcqcn",
                        "Examples"})
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
  expect_refused(client({"stray"}), "unexpected argument 'stray'");
  expect_refused(client({"--no-such-flag"}), "no-such-flag");
}

TEST(GenCli, WhereToRunMistakesAreRefused) {
  expect_refused({"write", "--ip", "10.0.0.1", "--server", "10.0.0.2"}, "--dev is required");
  expect_refused({"write", "--dev", "x", "--server", "10.0.0.2"}, "--ip is required");
  expect_refused(client({"--ip", "10.0.0.300"}), "got '10.0.0.300'");
  expect_refused(client({"--ip", "fe80::1"}), "got 'fe80::1'");
  expect_refused(client({"--oob-port", "70000"}), "oob-port");
  expect_refused(client({"--oob-port", "0"}), "--oob-port 0 works with --listen only");
  expect_refused(client({"--workers", "0"}), "--workers must be 1..16");
  expect_refused(client({"--dcqcn", "maybe"}), "--dcqcn takes on or off");
  expect_refused(client({"--dcqcn-profile", "fast"}), "--dcqcn-profile takes paper, mlx or hpcc");
  expect_refused(client({"--line-rate", "0"}), "--line-rate must be positive");
  expect_refused(client({"--line-rate", "-10"}), "--line-rate must be positive");
}

TEST(GenCli, BadSizesCountsAndRatesAreRefused) {
  expect_refused(client({"-s", "0"}), "bad --size '0'");
  expect_refused(client({"-s", "4X"}), "bad --size '4X'");
  expect_refused(client({"-s", "-1"}), "bad --size '-1'");
  expect_refused(client({"-s", "3G"}), "bad --size '3G'");
  expect_refused(client({"-n", "0"}), "--iters must be at least 1");
  expect_refused(client({"-n", "-5"}), "-5");
  expect_refused(client({"-n", "many"}), "many");
  expect_refused(client({"-D", "-1"}), "--duration must not be negative");
  expect_refused(client({"-D", "soon"}), "soon");
  expect_refused(client({"-q", "0"}), "--qps must be 1..1024");
  expect_refused(client({"-q", "-2"}), "-2");
  expect_refused(client({"-q", "2000"}), "--qps must be 1..1024");
  expect_refused(client({"-t", "0"}), "--tx-depth must be 1..8192");
  expect_refused(client({"-m", "1500"}), "bad --mtu '1500'");
  expect_refused(client({"-m", "0"}), "bad --mtu '0'");
  expect_refused(client({"--rate-limit", "fast"}), "bad --rate-limit 'fast'");
  expect_refused(client({"--rate-limit", "-1"}), "--rate-limit must not be negative");
  expect_refused({"pingpong", "--dev", "x", "--ip", "10.0.0.1", "--server", "10.0.0.2", "-s", "1M"},
                 "pingpong sizes above 64 KiB");
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
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(last_line(r.err).rfind("roce-gen: DPDK EAL initialisation failed", 0), 0u) << r.err;
  EXPECT_NE(last_line(r.err).find("net_nosuchdriver0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "runtime folder left behind";
}

// A well-formed command line gets past the parser (exit status 1, not 2) to a port that is not there.
TEST(GenCli, AMissingPortIsOneLineAndNoLeftovers) {
  const std::string prefix = "gen_cli_apptests_np_" + std::to_string(::getpid());
  const auto r = gen({"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix, "--log-level=error",
                      "--no-telemetry", "--", "write", "--vdev", "net_null0", "--dev", "net_null7", "--ip",
                      "10.0.0.1", "--server", "10.0.0.2"});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("net_null7"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "runtime folder left behind";
}

}  // namespace
}  // namespace roce::app
