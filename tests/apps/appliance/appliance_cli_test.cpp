// roce-appliance's command line as a user meets it: --help, and every bad option or value
// refused with exit status 2 and one line on stderr, before DPDK starts. A bad --vdev stops at
// the EAL with exit status 2 too, one line, and no runtime folder left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::client::appliance_cli_test {
namespace {

#ifndef ROCE_APPLIANCE_BIN
#define ROCE_APPLIANCE_BIN ""
#endif

test::CommandResult appliance(const std::vector<std::string>& args) {
  return test::run_command(ROCE_APPLIANCE_BIN, args);
}

std::string joined(const std::vector<std::string>& args) {
  std::string line;
  for (const auto& a : args) line += a + " ";
  return line;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> a{"--dev", "net_null0", "--ip", "10.0.0.2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void expect_refused(const std::vector<std::string>& args, const std::string& words) {
  const auto r = appliance(args);
  EXPECT_EQ(r.signal, 0) << joined(args);
  EXPECT_EQ(r.exit_code, 2) << joined(args) << "\n" << r.err;
  EXPECT_EQ(lines(r.err), 1u) << joined(args) << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("roce-appliance: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << joined(args) << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ApplianceCli, HelpExplainsWhatItServesAndTheMainOptions) {
  const auto r = appliance({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* w : {"ibv_rc_pingpong", "ib_write_bw", "--dev", "--ip", "--mr-size", "--mr-file", "--echo", "--write-echo",
                        "--perftest", "ib_send_lat", "ib_write_lat", "-c UC", "--control", "--report", "--duration", "--vdev", "Example"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
  EXPECT_EQ(appliance({"-h"}).out, r.out);
}

TEST(ApplianceCli, MissingOrBadAddressesAreRefused) {
  expect_refused({}, "--dev is required");
  expect_refused({"--ip", "10.0.0.2"}, "--dev is required");
  expect_refused({"--dev", "net_null0"}, "--ip is required");
  expect_refused(with({"--ip", "10.0.0.256"}), "got '10.0.0.256'");
  expect_refused(with({"--ip", "fd77::2::1"}), "got 'fd77::2::1'");
  expect_refused(with({"--listen-ip", "everywhere"}), "--listen-ip");
  expect_refused(with({"--oob-port", "65536"}), "oob-port");
  expect_refused(with({"--no-such-flag"}), "no-such-flag");
  expect_refused(with({"stray"}), "unexpected argument 'stray'");
}

TEST(ApplianceCli, BadSizesAndCountsAreRefused) {
  expect_refused(with({"--mr-size", "0"}), "bad --mr-size '0'");
  expect_refused(with({"--mr-size", "-4K"}), "bad --mr-size '-4K'");
  expect_refused(with({"--mr-size", "64Q"}), "bad --mr-size '64Q'");
  expect_refused(with({"--mr-size", "1024G"}), "bad --mr-size '1024G'");
  expect_refused(with({"--recv-size", "0"}), "bad --recv-size '0'");
  expect_refused(with({"--recv-size", "3G"}), "bad --recv-size '3G'");
  expect_refused(with({"--recv-depth", "0"}), "--recv-depth must be 1..16384");
  expect_refused(with({"--recv-depth", "-1"}), "-1");
  expect_refused(with({"-m", "9000"}), "bad --mtu '9000'");
  expect_refused(with({"--workers", "0"}), "--workers must be 1..16");
  expect_refused(with({"--workers", "17"}), "--workers must be 1..16");
  expect_refused(with({"--dcqcn", "yes"}), "--dcqcn takes on or off");
  expect_refused(with({"--dcqcn-profile", "x"}), "--dcqcn-profile takes paper, mlx or hpcc");
  expect_refused(with({"--line-rate-gbps", "0"}), "--line-rate-gbps must be positive");
  expect_refused(with({"--line-rate", "0"}), "--line-rate-gbps must be positive");  // the old spelling
  expect_refused(with({"--line-rate", "10", "--line-rate-gbps", "10"}), "--line-rate is the old name of --line-rate-gbps");
  expect_refused(with({"--overrun-marks", "yes"}), "--overrun-marks takes on or off");
  expect_refused(with({"--backlog-marks", "yes"}), "--backlog-marks takes off, on or KMIN,KMAX,PMAX");
  expect_refused(with({"--status-interval", "-1"}), "--status-interval must not be negative");
  expect_refused(with({"--duration", "-2"}), "--duration must not be negative");
  expect_refused(with({"--duration", "later"}), "later");
  expect_refused(with({"--write-echo", "0"}), "bad --write-echo '0'");
  expect_refused(with({"--write-echo", "2G"}), "1 byte up to 1G");
}

TEST(ApplianceCli, ThePerftestTestAndItsOptionsAreChecked) {
  expect_refused(with({"--perftest", "ib_write"}), "bad --perftest 'ib_write'");
  expect_refused(with({"--perftest", "ib_read_lat", "-s", "64"}), "-s, -n and -a are for --perftest ib_write_lat");
  expect_refused(with({"-a"}), "-s, -n and -a are for --perftest ib_write_lat");
  expect_refused(with({"--echo", "--write-echo", "8"}), "give one of --perftest, --echo and --write-echo");
  expect_refused(with({"--write-echo", "8", "-s", "8"}), "--write-echo gives the size");
  expect_refused(with({"--perftest", "ib_write_lat", "-n", "2"}), "-n must be at least 5");
  expect_refused(with({"--perftest", "ib_write_lat", "-s", "0"}), "bad -s '0'");
  expect_refused(with({"-c", "XRC"}), "bad --connection 'XRC'");
  expect_refused(with({"-c", "UC", "--perftest", "ib_read_bw"}), "UC serves write and send tests only");
  expect_refused(with({"-c", "UD", "--perftest", "ib_write_lat"}), "UD serves send tests only");
  expect_refused(with({"-b"}), "-b needs the bandwidth test it serves");
  expect_refused(with({"--perftest", "ib_write_lat", "-b"}), "-b needs the bandwidth test it serves");
  expect_refused(with({"--perftest", "ib_write_bw", "-b", "-n", "3"}), "-n must be at least 5");
  expect_refused(with({"--perftest", "ib_atomic_bw", "-b", "-a"}), "atomic tests run one size: no -a");
  expect_refused(with({"--perftest", "ib_send_bw", "-s", "64"}), "-s, -n and -a are for --perftest ib_write_lat and -b");
  // -b's -D and --run_infinitely, as perftest's parser takes them.
  expect_refused(with({"--perftest", "ib_write_bw", "-D", "2"}), "-D and --run_infinitely are for -b");
  expect_refused(with({"--perftest", "ib_write_bw", "-b", "-a", "-D", "2"}), "run one size, as perftest's: no -a");
  expect_refused(with({"--perftest", "ib_send_bw", "-b", "--run_infinitely"}), "refuses ib_send_bw -b --run_infinitely");
  expect_refused(with({"--perftest", "ib_read_bw", "-b", "-D", "0"}), "-D must be 0 .. 86400 seconds");
}

TEST(ApplianceCli, NvmfOptionsAreChecked) {
  expect_refused(with({"--nvmf-namespace", "mem:16M"}), "--nvmf-namespace and --nvmf-allow-host need --nvmf-subsystem");
  expect_refused(with({"--nvmf-subsystem", "nqn.2026-12.io.example:d", "--nvmf-namespace", "disk:/x"}),
                 "expected mem:SIZE or file:PATH[:SIZE]");
  expect_refused(with({"--nvmf-subsystem", "nqn.2026-12.io.example:d", "--nvmf-namespace", "mem:0"}),
                 "a memory namespace needs a size");
}

TEST(ApplianceCli, AnUnusableMrFileIsRefusedBeforeDpdkStarts) {
  test::TempDir dir;
  expect_refused(with({"--mr-file", dir.path().string()}), "--mr-file " + dir.path().string());
  expect_refused(with({"--mr-file", (dir / "no-such-dir" / "mem").string()}), "no-such-dir");
  expect_refused(with({"--mr-file", ""}), "--mr-file");
}

TEST(ApplianceCli, AControlSocketPathTooLongIsRefused) {
  expect_refused(with({"--control", "/tmp/" + std::string(120, 'c')}), "--control");
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TEST(ApplianceCli, ABadVdevStopsAtTheEalWithAReasonAndNoLeftovers) {
  const std::string prefix = "appl_cli_apptests_" + std::to_string(::getpid());
  const auto r = appliance({"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix, "--log-level=error",
                            "--no-telemetry", "--", "--vdev", "net_nosuchdriver0", "--dev", "net_nosuchdriver0", "--ip",
                            "10.0.0.2"});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(last_line(r.err).rfind("roce-appliance: DPDK EAL initialisation failed", 0), 0u) << r.err;
  EXPECT_NE(last_line(r.err).find("net_nosuchdriver0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "runtime folder left behind";
}

}  // namespace
}  // namespace roce::client::appliance_cli_test
