// Every tool answers bad input the same way, tried by running the binaries: one line on stderr
// naming the tool and the problem, nothing on stdout, exit status 2, and nothing left behind:
// no DPDK runtime folder (/var/run/dpdk/<prefix>), no socket file. Bad input is a bad option
// or value, a bad DPDK (EAL) option, a --vdev its driver cannot make, a port that is not there,
// a path that cannot be written or read, a TCP port in use, and a bad input line.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::test {
namespace {

#ifndef ROCE_APPLIANCE_BIN
#define ROCE_APPLIANCE_BIN ""
#define ROCE_GEN_BIN ""
#define ROCE_DEMO_BIN ""
#define ROCE_CRAFT_BIN ""
#define ROCE_REPLAY_BIN ""
#define ROCE_INSPECT_BIN ""
#define DCQCN_TRACE_BIN ""
#endif

const std::string kSource = ROCE_SOURCE_ROOT;

struct Case {
  std::string tool;   // its name, as it starts its message
  std::string binary;
  std::vector<std::string> args;
  std::string words;  // what the one line must say
  std::string stdin_text = {};
};

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// Runtime folders a run may have left: the default prefix carries the pid, an explicit one is
// unique to this test.
std::vector<std::string> leftovers(pid_t pid, const std::string& prefix) {
  std::vector<std::string> out;
  for (const char* base : {"/var/run/dpdk", "/tmp/dpdk"}) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const std::string p = std::to_string(pid);
      const bool mine = name == prefix ||
                        (name.size() > p.size() && name.compare(name.size() - p.size(), p.size(), p) == 0 &&
                         (name[name.size() - p.size() - 1] == '_' || name[name.size() - p.size() - 1] == '-'));
      if (mine) out.push_back(it->path().string());
    }
  }
  return out;
}

class ToolsBadInput : public ::testing::Test {
 protected:
  void expect_refused(const Case& c) {
    SCOPED_TRACE(c.tool + " " + [&] {
      std::string a;
      for (const auto& x : c.args) a += x + " ";
      return a;
    }());
    std::string in = "/dev/null";
    if (!c.stdin_text.empty()) {
      in = (dir_ / "stdin").string();
      std::ofstream(in) << c.stdin_text;
    }
    const CommandResult r = run_command(c.binary, c.args, in);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind(c.tool + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    const auto left = leftovers(r.pid, prefix_);
    EXPECT_TRUE(left.empty()) << "left behind: " << left.front();
    for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
      EXPECT_NE(e.path().filename().string(), "ctl.sock") << "control socket left behind";
    std::error_code ec;
    for (const std::string& p : left) std::filesystem::remove_all(p, ec);
  }

  // DPDK options for a run that brings its own: a private prefix, no hugepages.
  std::vector<std::string> eal(std::vector<std::string> app) const {
    std::vector<std::string> a{"--no-huge", "--no-pci", "-m", "256", "--file-prefix=" + prefix_, "--log-level=error",
                               "--no-telemetry", "--"};
    a.insert(a.end(), app.begin(), app.end());
    return a;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  TempDir dir_;
  const std::string prefix_ = "badinput_apptests_" + std::to_string(::getpid());
};

TEST_F(ToolsBadInput, Appliance) {
  const std::string a = ROCE_APPLIANCE_BIN;
  const std::vector<std::string> base{"--ip", "10.0.0.2", "--control", path("ctl.sock"), "--status-interval", "0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = base;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  // A TCP port that is taken.
  const int taken = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  ASSERT_EQ(::getsockname(taken, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const std::string port = std::to_string(ntohs(sa.sin_port));
  const std::vector<Case> cases{
      {"roce-appliance", a, with({"--dev", "net_null0", "--bogus"}), "bogus"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--mr-size", "0"}), "bad --mr-size"},
      {"roce-appliance", a, {"--bogus-eal", "--", "--dev", "x", "--ip", "10.0.0.2"}, "unrecognized option '--bogus-eal'"},
      {"roce-appliance", a, {"-l", "99", "--file-prefix=" + prefix_, "--", "--dev", "x", "--ip", "10.0.0.2"}, "lcore 99"},
      {"roce-appliance", a, eal(with({"--vdev", "net_nosuchdriver0", "--dev", "net_nosuchdriver0"})), "net_nosuchdriver0"},
      {"roce-appliance", a, eal(with({"--vdev", "net_pcap0,rx_pcap=" + path("none.pcap"), "--dev", "net_pcap0"})),
       "a --vdev device could not be created"},
      {"roce-appliance", a, eal(with({"--vdev", "net_null0", "--dev", "net_null7"})), "no DPDK port named 'net_null7'"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--report", "/proc/x/report.json"}), "--report /proc/x/report.json"},
      {"roce-appliance", a, {"--dev", "net_null0", "--ip", "10.0.0.2", "--control", "/proc/x/ctl.sock"}, "--control /proc/x/ctl.sock"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--mr-file", "/proc/x/mem"}), "--mr-file /proc/x/mem"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--mr-quota", "1M"}), "exceed the memory region quota"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--handshake-timeout", "0"}), "--handshake-timeout"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--rdma-cm", "rping,bogus"}), "unknown listener 'bogus'"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--rdma-cm", "ucmatose,rdma_server:7471"}), "two listeners on one TCP"},
      {"roce-appliance", a, with({"--dev", "net_null0", "--rdma-cm", "udaddy", "--cm-message-size", "9000"}), "--cm-message-size"},
      {"roce-appliance", a, eal(with({"--vdev", "net_null0", "--dev", "net_null0", "--oob-port", port})),
       "cannot listen on TCP port " + port},
  };
  for (const Case& c : cases) expect_refused(c);
  ::close(taken);
}

TEST_F(ToolsBadInput, Gen) {
  const std::string g = ROCE_GEN_BIN;
  const std::vector<std::string> to{"--ip", "10.0.0.1", "--server", "10.0.0.2"};
  auto with = [&](std::vector<std::string> v) {
    v.insert(v.end(), to.begin(), to.end());
    return v;
  };
  const std::vector<Case> cases{
      {"roce-gen", g, with({"write", "--dev", "x", "--bogus"}), "bogus"},
      {"roce-gen", g, with({"write", "--dev", "x", "-s", "0"}), "Message Size should be between"},
      {"roce-gen", g, {"--bogus-eal", "--", "write", "--dev", "x", "--ip", "10.0.0.1", "--server", "10.0.0.2"}, "unrecognized option"},
      {"roce-gen", g, eal(with({"write", "--vdev", "net_nosuchdriver0", "--dev", "net_nosuchdriver0"})), "net_nosuchdriver0"},
      {"roce-gen", g, eal(with({"write", "--vdev", "net_null0", "--dev", "net_null7"})), "no DPDK port named 'net_null7'"},
      {"roce-gen emulate", g, {"emulate", "--bogus"}, "bogus"},
      {"roce-gen rping", g, {"rping", "--dev", "x", "--ip", "10.0.0.1", "-a", "10.0.0.2", "--bogus"}, "bogus"},
      {"roce-gen rping", g, {"rping", "--dev", "x", "--ip", "10.0.0.1"}, "the server's address is required"},
      {"roce-gen rping", g, {"rping", "--dev", "x", "--ip", "10.0.0.1", "-a", "10.0.0.2", "stray"}, "unexpected argument 'stray'"},
      {"roce-gen rping", g, {"rping", "--dev", "x", "--ip", "10.0.0.1", "-a", "10.0.0.2", "-C", "ten"}, "failed to parse (-C)"},
      {"roce-gen rping", g, {"rping", "--dev", "x", "--ip", "10.0.0.1", "-a", "10.0.0.2", "-S", "70000"}, "rping -S must be 23..65535"},
      {"roce-gen rdma_client", g, {"rdma_client", "--dev", "x", "--ip", "10.0.0.1", "-s", "10.0.0.2", "-C", "5"}, "rdma_client takes no -C"},
      {"roce-gen udaddy", g, {"udaddy", "--dev", "x", "--ip", "10.0.0.1", "-a", "10.0.0.2", "-S", "5000"}, "does not fit a UD datagram"},
      {"roce-gen ucmatose", g, eal({"ucmatose", "--vdev", "net_null0", "--dev", "net_null7", "--ip", "10.0.0.1", "-a", "10.0.0.2"}),
       "no DPDK port named 'net_null7'"},
      {"roce-gen emulate", g, eal({"emulate", "--vdev", "net_null0", "--port-a", "net_null0", "--port-b", "nope"}), "no DPDK port named 'nope'"},
      {"roce-gen raw", g, {"raw", "--pcap", "/proc/x/y.pcap", "-c", "1"}, "cannot write /proc/x/y.pcap"},
  };
  for (const Case& c : cases) expect_refused(c);
}

TEST_F(ToolsBadInput, Demo) {
  const std::string d = ROCE_DEMO_BIN;
  const std::vector<Case> cases{
      // The out directory cannot be made: refused before DPDK starts (it used to abort, exit 134).
      {"roce-demo", d, {"--out", "/proc/x", "-n", "10"}, "--out /proc/x: cannot make the directory"},
      {"roce-demo", d, {"--out", "/etc/passwd", "-n", "10"}, "--out /etc/passwd"},
      // DPDK's usage text (109 lines) is not printed: one line says which option it was.
      {"roce-demo", d, {"--bogus-eal", "--", "-n", "10"}, "unrecognized option '--bogus-eal'"},
      {"roce-demo", d, {"--size", "0"}, "bad --size"},
      {"roce-demo", d, {"--loss", "2"}, "--loss"},
  };
  for (const Case& c : cases) expect_refused(c);
}

TEST_F(ToolsBadInput, Craft) {
  const std::string c = ROCE_CRAFT_BIN;
  const std::vector<Case> cases{
      {"roce-craft", c, {"--bogus"}, "bogus"},
      {"roce-craft", c, {"--pcap", "/proc/x/y.pcap", "-c", "1"}, "cannot write /proc/x/y.pcap"},
      {"roce-craft", c, {"--port", "nope", "-c", "1"}, "no DPDK port named 'nope'"},
      {"roce-craft", c, {"--bogus-eal", "--", "--port", "x", "-c", "1"}, "unrecognized option"},
  };
  for (const Case& k : cases) expect_refused(k);
}

TEST_F(ToolsBadInput, Replay) {
  const std::string r = ROCE_REPLAY_BIN;
  const std::string in = kSource + "/pcap/replay/gap_nak.in.pcap", sc = kSource + "/pcap/replay/gap_nak.scenario";
  const std::vector<Case> cases{
      {"roce-replay", r, {"--bogus"}, "bogus"},
      {"roce-replay", r, {"-i", in, "-s", sc, "--max-diffs", "many"}, "failed to parse (--max-diffs)"},
      {"roce-replay", r, {"-i", path("missing.pcap"), "--derive"}, "missing.pcap"},
      {"roce-replay", r, {"-i", in, "-s", sc, "-o", "/proc/x/out.pcap"}, "/proc/x/out.pcap"},
      {"roce-replay", r, {"-i", in, "-s", sc, "--dpdk", "-o", "/proc/x/out.pcap"}, "/proc/x/out.pcap"},
      {"roce-replay", r, {"--bogus-eal", "--", "-i", in, "-s", sc, "--dpdk"}, "unrecognized option"},
  };
  for (const Case& c : cases) expect_refused(c);
}

TEST_F(ToolsBadInput, Inspect) {
  const std::string i = ROCE_INSPECT_BIN;
  std::ofstream(path("notes.pcap")) << "hello\n";
  const std::vector<Case> cases{
      {"roce-inspect", i, {"--bogus", "x"}, "bogus"},
      {"roce-inspect", i, {path("missing.pcap")}, "missing.pcap"},
      {"roce-inspect", i, {path("notes.pcap")}, "notes.pcap"},
      {"roce-inspect", i, {dir_.path().string()}, dir_.path().string()},
  };
  for (const Case& c : cases) expect_refused(c);
}

TEST_F(ToolsBadInput, DcqcnTrace) {
  const std::string t = DCQCN_TRACE_BIN;
  const std::vector<Case> cases{
      {"dcqcn-trace", t, {"--bogus"}, "bogus"},
      {"dcqcn-trace", t, {"stray"}, "unexpected argument 'stray'"},
      {"dcqcn-trace", t, {"--profile", "x"}, "--profile"},
      {"dcqcn-trace", t, {}, "line 1: time 'garbage'", "garbage\n"},
  };
  for (const Case& c : cases) expect_refused(c);
}

}  // namespace
}  // namespace roce::test
