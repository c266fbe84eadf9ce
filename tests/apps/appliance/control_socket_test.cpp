// roce-appliance's control socket as an operator uses it: one appliance on a null port, driven
// through its Unix socket with JSON lines. Every command, bad lines answered with an error (the
// appliance keeps serving), owner-only permissions, peers of another uid refused, and `stop`
// ending the process cleanly with its report. The tests run in order on one process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/json.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::app {
namespace {

#ifndef ROCE_APPLIANCE_BIN
#define ROCE_APPLIANCE_BIN ""
#endif

using test::Json;
using Clock = std::chrono::steady_clock;

std::string file_text(const std::filesystem::path& p) {
  const auto v = test::read_file(p);
  return {v.begin(), v.end()};
}

// One client connection; each call sends lines and reads as many response lines.
class ControlClient {
 public:
  explicit ControlClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      error_ = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~ControlClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

  void send_raw(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
  // The next response line ("" when the appliance closed the connection or went silent).
  std::string read_line(int timeout_ms = 10'000) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) return "";
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return "";
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  Json call(const std::string& line, int timeout_ms = 10'000) {
    send_raw(line + "\n");
    const std::string out = read_line(timeout_ms);
    if (out.empty()) throw std::runtime_error("no answer to " + line);
    return test::parse_json(out);
  }

 private:
  int fd_ = -1;
  std::string buf_;
  std::string error_;
};

bool ok(const Json& j) { return j.has("ok") && j["ok"].boolean(); }
std::string error_of(const Json& j) { return j.has("error") ? j["error"].str() : "(no error field)"; }

class ApplianceControl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<test::TempDir>();
    socket_ = (*dir_ / "ctl.sock").string();
    report_ = (*dir_ / "report.json").string();
    prefix_ = "ctl_apptests_" + std::to_string(::getpid());
    const std::vector<std::string> args{ROCE_APPLIANCE_BIN, "--no-huge", "--no-pci", "-m", "256",
                                        "--file-prefix=" + prefix_, "--log-level=error", "--no-telemetry", "-l", "0",
                                        "--", "--vdev", "net_null0", "--dev", "net_null0", "--ip", "10.0.0.2",
                                        "--oob-port", "0", "--mr-size", "1M", "--recv-size", "64K", "--status-interval",
                                        "0", "--control", socket_, "--report", report_};
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string out = (*dir_ / "stdout").string(), err = (*dir_ / "stderr").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Should this test die, the appliance gets SIGTERM and stops cleanly instead of lingering.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      const int in = ::open("/dev/null", O_RDONLY);
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (in < 0 || o < 0 || e < 0 || ::dup2(in, 0) < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(127);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    // Ready once the socket exists (it is made after the dataplane is up).
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (pid_ > 0 && Clock::now() < deadline && !std::filesystem::exists(socket_)) {
      int st;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
    std::error_code ec;
    std::filesystem::remove_all("/var/run/dpdk/" + prefix_, ec);
    dir_.reset();
  }

  void SetUp() override {
    ASSERT_GT(pid_, 0) << "roce-appliance did not start:\n" << file_text(*dir_ / "stderr");
    ASSERT_TRUE(std::filesystem::exists(socket_)) << file_text(*dir_ / "stderr");
  }

  static inline std::unique_ptr<test::TempDir> dir_;
  static inline std::string socket_, report_, prefix_;
  static inline pid_t pid_ = -1;
};

TEST_F(ApplianceControl, SocketIsOwnerOnly) {
  struct stat st {};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u) << std::oct << (st.st_mode & 0777);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST_F(ApplianceControl, ListMrsShowsTheExposedAndReceiveRegions) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  const Json j = c.call(R"({"cmd":"list_mrs"})");
  ASSERT_TRUE(ok(j)) << error_of(j);
  const auto& mrs = j["mrs"].array();
  ASSERT_EQ(mrs.size(), 2u);
  EXPECT_EQ(mrs[0]["role"].str(), "exposed");
  EXPECT_EQ(mrs[0]["length"].u64(), 1u << 20);
  EXPECT_EQ(mrs[0]["access"].str(), "local_write remote_write remote_read remote_atomic");
  EXPECT_NE(mrs[0]["rkey"].u64(), 0u);
  EXPECT_EQ(mrs[1]["role"].str(), "receive");
  EXPECT_EQ(mrs[1]["length"].u64(), 64u << 10);
  EXPECT_EQ(mrs[1]["access"].str(), "local_write");
}

TEST_F(ApplianceControl, CreateMrAddsARemotelyAccessibleRegion) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  const Json made = c.call(R"({"cmd":"create_mr","size":8192})");
  ASSERT_TRUE(ok(made)) << error_of(made);
  EXPECT_EQ(made["length"].u64(), 8192u);
  const Json listed = c.call(R"({"cmd":"list_mrs"})");
  const auto& mrs = listed["mrs"].array();
  ASSERT_EQ(mrs.size(), 3u);
  EXPECT_EQ(mrs[2]["role"].str(), "created");
  EXPECT_EQ(mrs[2]["rkey"].u64(), made["rkey"].u64());
  EXPECT_EQ(mrs[2]["addr"].u64(), made["addr"].u64());
  EXPECT_NE(made["rkey"].u64(), mrs[0]["rkey"].u64());

  for (const char* bad : {R"({"cmd":"create_mr"})", R"({"cmd":"create_mr","size":0})",
                          R"({"cmd":"create_mr","size":-5})", R"({"cmd":"create_mr","size":"big"})",
                          R"({"cmd":"create_mr","size":99999999999999})"}) {
    const Json j = c.call(bad);
    EXPECT_FALSE(ok(j)) << bad;
    EXPECT_NE(error_of(j).find("create_mr needs \"size\""), std::string::npos) << bad << ": " << error_of(j);
  }
  EXPECT_EQ(c.call(R"({"cmd":"list_mrs"})")["mrs"].array().size(), 3u);
}

TEST_F(ApplianceControl, CreateQpGivesAnInitQpThatListQpsShows) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  const Json made = c.call(R"({"cmd":"create_qp"})");
  ASSERT_TRUE(ok(made)) << error_of(made);
  EXPECT_EQ(made["gid"].str(), "10.0.0.2");
  EXPECT_LE(made["psn"].u64(), 0xffffffu);
  const Json listed = c.call(R"({"cmd":"list_qps"})");
  ASSERT_TRUE(ok(listed));
  bool found = false;
  for (const Json& q : listed["qps"].array()) {
    if (q["qpn"].u64() != made["qpn"].u64()) continue;
    found = true;
    EXPECT_EQ(q["state"].str(), "INIT");
    EXPECT_EQ(q["type"].str(), "RC");
    EXPECT_EQ(q["sent_pkts"].u64(), 0u);
  }
  EXPECT_TRUE(found) << "QP " << made["qpn"].u64() << " not listed";
}

TEST_F(ApplianceControl, ConnectQpChecksItsArgumentsAndThePeer) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  const Json made = c.call(R"({"cmd":"create_qp"})");
  ASSERT_TRUE(ok(made)) << error_of(made);
  const std::string qpn = std::to_string(made["qpn"].u64());
  Json j = c.call(R"({"cmd":"connect_qp","qpn":)" + qpn + R"(,"remote_qpn":17})");
  EXPECT_FALSE(ok(j));
  EXPECT_NE(error_of(j).find("connect_qp needs"), std::string::npos) << error_of(j);
  j = c.call(R"({"cmd":"connect_qp","qpn":)" + qpn + R"(,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.999"})");
  EXPECT_NE(error_of(j).find("connect_qp needs"), std::string::npos) << error_of(j);
  j = c.call(R"({"cmd":"connect_qp","qpn":1,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.9"})");
  EXPECT_NE(error_of(j).find("no QP 1 made by create_qp"), std::string::npos) << error_of(j);
  // Nothing answers ARP on a null port: a clear error after the ARP wait, and the QP stays INIT.
  j = c.call(R"({"cmd":"connect_qp","qpn":)" + qpn + R"(,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.9"})",
             15'000);
  EXPECT_FALSE(ok(j));
  EXPECT_NE(error_of(j).find("no ARP answer from 10.0.0.9"), std::string::npos) << error_of(j);
  const Json listed = c.call(R"({"cmd":"list_qps"})");
  for (const Json& q : listed["qps"].array())
    if (std::to_string(q["qpn"].u64()) == qpn) {
      EXPECT_EQ(q["state"].str(), "INIT");
    }
}

TEST_F(ApplianceControl, CountersAndStatusGiveTheReport) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  for (const char* cmd : {R"({"cmd":"counters"})", R"({"cmd":"status"})"}) {
    const Json j = c.call(cmd);
    ASSERT_TRUE(ok(j)) << cmd << ": " << error_of(j);
    EXPECT_EQ(j["port"]["name"].str(), "net_null0");
    EXPECT_EQ(j["port"]["ip"].str(), "10.0.0.2");
    EXPECT_EQ(j["workers"].array().size(), 1u);
    EXPECT_TRUE(j["transport"].has("retransmitted_pkts")) << cmd;
    EXPECT_EQ(j["sessions_running"].u64(), 0u);
    EXPECT_GT(j["uptime_s"].num(), 0);
  }
}

TEST_F(ApplianceControl, BadLinesGetAnErrorAndTheConnectionStaysUsable) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  for (const std::string& bad : std::vector<std::string>{"{", "not json", "[1,2,3]", "\"list_qps\"", "{\"cmd\":5}", "{\"command\":\"list_qps\"}",
                                "{\"cmd\":\"list_qps\"} trailing", std::string("\x01\xff\xfe{\x00}", 6),
                                "{\"cmd\":\"list_qps\",\"cmd\":}", std::string(60000, '[')}) {
    const Json j = c.call(bad);
    EXPECT_FALSE(ok(j)) << bad.substr(0, 40);
    EXPECT_FALSE(error_of(j).empty());
  }
  const Json unknown = c.call(R"({"cmd":"reboot"})");
  EXPECT_NE(error_of(unknown).find("unknown command 'reboot'"), std::string::npos) << error_of(unknown);
  EXPECT_NE(error_of(unknown).find("list_qps, list_mrs, create_mr, create_qp, connect_qp"), std::string::npos);
  // Several commands in one write are answered in order; blank lines are skipped.
  c.send_raw("{\"cmd\":\"list_mrs\"}\n\n{\"cmd\":\"nope\"}\n{\"cmd\":\"list_qps\"}\n");
  EXPECT_TRUE(test::parse_json(c.read_line()).has("mrs"));
  EXPECT_FALSE(ok(test::parse_json(c.read_line())));
  EXPECT_TRUE(test::parse_json(c.read_line()).has("qps"));
  EXPECT_TRUE(ok(c.call(R"({"cmd":"list_qps"})")));
}

TEST_F(ApplianceControl, AnEndlessLineIsCutOffAndTheNextClientIsServed) {
  {
    ControlClient c(socket_);
    ASSERT_TRUE(c.connected()) << c.error();
    c.send_raw(std::string(100 * 1024, 'x'));
    const std::string line = c.read_line();
    ASSERT_FALSE(line.empty());
    EXPECT_NE(error_of(test::parse_json(line)).find("longer than 64 KiB"), std::string::npos) << line;
    EXPECT_EQ(c.read_line(3000), "") << "the connection should be closed";
  }
  ControlClient next(socket_);
  ASSERT_TRUE(next.connected()) << next.error();
  EXPECT_TRUE(ok(next.call(R"({"cmd":"list_qps"})")));
}

// Runs `body` in a child that has become `nobody`; returns the child's exit status.
template <typename Body>
int as_nobody(Body body) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(90);
    ::_exit(body());
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

TEST_F(ApplianceControl, PeersOfAnotherUserAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  // First line of defence: the 0600 socket file; `nobody` cannot even connect.
  const std::string path = socket_;
  const int denied = as_nobody([&path] {
    ControlClient c(path);
    return c.connected() ? 1 : (errno == EACCES ? 0 : 2);
  });
  EXPECT_EQ(denied, 0) << "nobody connected to a 0600 socket (1) or failed otherwise (2)";

  // Second line: the peer's credentials. Open the file (and the test's private folder) up for a
  // moment so `nobody` gets through the permission checks; the appliance must still refuse it
  // and say why.
  ASSERT_EQ(::chmod(dir_->path().c_str(), 0711), 0);
  ASSERT_EQ(::chmod(socket_.c_str(), 0666), 0);
  const int refused = as_nobody([&path] {
    ControlClient c(path);
    if (!c.connected()) return 3;
    c.send_raw("{\"cmd\":\"stop\"}\n");
    const std::string line = c.read_line();
    if (line.find("refused: the control socket serves only its owner") == std::string::npos) return 4;
    return c.read_line(2000).empty() ? 0 : 5;  // and closed
  });
  ::chmod(socket_.c_str(), 0600);
  ::chmod(dir_->path().c_str(), 0700);
  EXPECT_EQ(refused, 0) << "3: could not connect, 4: not refused, 5: not closed";
  ControlClient owner(socket_);
  ASSERT_TRUE(owner.connected());
  EXPECT_TRUE(ok(owner.call(R"({"cmd":"list_qps"})"))) << "the refused stop must not have stopped it";
}

// Last: stop ends the process cleanly, removes the socket and writes the report.
TEST_F(ApplianceControl, StopEndsTheApplianceWithItsReport) {
  {
    ControlClient c(socket_);
    ASSERT_TRUE(c.connected()) << c.error();
    const Json j = c.call(R"({"cmd":"stop"})");
    EXPECT_TRUE(ok(j)) << error_of(j);
    EXPECT_TRUE(j["stopping"].boolean());
  }
  int st = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  pid_t got = 0;
  while (Clock::now() < deadline && (got = ::waitpid(pid_, &st, WNOHANG)) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(got, pid_) << "still running 20 s after stop";
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << file_text(*dir_ / "stderr");
  EXPECT_FALSE(std::filesystem::exists(socket_)) << "socket file left behind";
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix_)) << "DPDK runtime folder left behind";
  const Json report = test::parse_json(file_text(report_));
  EXPECT_TRUE(ok(report));
  EXPECT_EQ(report["sessions_failed"].u64(), 0u);
}

}  // namespace
}  // namespace roce::app
