// roce-appliance's control socket as an operator uses it: one appliance on a null port, driven
// through its Unix socket with JSON lines. Every command, bad lines answered with an error (the
// appliance keeps serving), owner-only permissions, peers of another uid refused, and `stop`
// ending the process cleanly with its report. The tests run in order on one process.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "tests/apps/appliance/appliance_process.hpp"

namespace roce::client::control_socket_test {
namespace {

using test::ControlClient;
using test::error_of;
using test::file_text;
using test::Json;
using test::ok;
using Clock = std::chrono::steady_clock;

class ApplianceControl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { appliance_ = std::make_unique<test::ApplianceProcess>(std::vector<std::string>{}, "ctl"); }
  static void TearDownTestSuite() { appliance_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(appliance_->running()) << "roce-appliance did not start:\n" << appliance_->stderr_text();
    socket_ = appliance_->socket();
  }

  static inline std::unique_ptr<test::ApplianceProcess> appliance_;
  std::string socket_;
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

  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"cmd":"create_mr"})", "create_mr: \"size\" is missing"},
      {R"({"cmd":"create_mr","size":0})", "create_mr: \"size\" 0 is outside 1 .."},
      {R"({"cmd":"create_mr","size":-5})", "create_mr: \"size\" must be a whole number"},
      {R"({"cmd":"create_mr","size":"big"})", "not a string"},
      {R"({"cmd":"create_mr","size":4096,"access":"all"})", "create_mr: unknown field \"access\" (create_mr takes size)"},
      {R"({"cmd":"create_mr","size":99999999999999})", "refused: the memory region quota is"},
  };
  for (const auto& [cmd, words] : bad) {
    const Json j = c.call(cmd);
    EXPECT_FALSE(ok(j)) << cmd;
    EXPECT_NE(error_of(j).find(words), std::string::npos) << cmd << ": " << error_of(j);
  }
  EXPECT_EQ(c.call(R"({"cmd":"list_mrs"})")["mrs"].array().size(), 3u);
}

std::uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (in >> key >> kib)
    if (key == "MemTotal:") return kib * 1024;
  return 0;
}

// The default quota is half the machine's memory, so 33 GiB on a 24 GiB host is refused, and
// so is anything above what is left of the quota, whatever the host.
TEST_F(ApplianceControl, CreateMrBeyondTheMemoryQuotaIsRefused) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  // Only the exposed region and the receive buffer (earlier tests' regions went with their clients).
  constexpr std::uint64_t kOwn = (1u << 20) + (64u << 10);
  Json listed = c.call(R"({"cmd":"list_mrs"})");
  for (const auto deadline = Clock::now() + std::chrono::seconds(10); listed["bytes_in_use"].u64() != kOwn && Clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    listed = c.call(R"({"cmd":"list_mrs"})");
  }
  const std::uint64_t quota = listed["quota_bytes"].u64();
  EXPECT_EQ(quota, mem_total_bytes() / 2);
  EXPECT_EQ(listed["bytes_in_use"].u64(), kOwn);
  const std::uint64_t left = quota - listed["bytes_in_use"].u64();
  Json j = c.call(R"({"cmd":"create_mr","size":)" + std::to_string(left + 1) + "}");
  EXPECT_FALSE(ok(j));
  EXPECT_NE(error_of(j).find("refused: the memory region quota is"), std::string::npos) << error_of(j);
  if (mem_total_bytes() < (66ull << 30)) {
    j = c.call(R"({"cmd":"create_mr","size":35433480192})");
    EXPECT_NE(error_of(j).find("create_mr: 33 GiB refused"), std::string::npos) << error_of(j);
  }
  EXPECT_EQ(c.call(R"({"cmd":"list_mrs"})")["bytes_in_use"].u64(), listed["bytes_in_use"].u64()) << "a refusal takes nothing";
}

// Which of two equal keys wins differs between parsers: the command is refused whole, and this
// one must not stop the appliance.
TEST_F(ApplianceControl, ARepeatedKeyIsRefusedAndDoesNotStopTheAppliance) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  for (const char* cmd : {R"({"cmd":"counters","cmd":"stop"})", R"({"cmd":"stop","cmd":"counters"})",
                          R"({"cmd":"create_mr","size":4096,"size":8192})"}) {
    const Json j = c.call(cmd);
    EXPECT_FALSE(ok(j)) << cmd;
    EXPECT_NE(error_of(j).find("duplicate key"), std::string::npos) << cmd << ": " << error_of(j);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the accept loop would have seen a stop by now
  EXPECT_EQ(::kill(appliance_->pid(), 0), 0) << "the appliance stopped";
  EXPECT_TRUE(ok(c.call(R"({"cmd":"status"})")));
}

TEST_F(ApplianceControl, EveryCommandRefusesUnknownFieldsAndWrongTypes) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  for (const char* name : {"status", "counters", "list_qps", "list_mrs", "list_sessions", "create_mr", "destroy_mr",
                           "create_qp", "connect_qp", "destroy_qp", "disconnect", "stop", "help"}) {
    const Json j = c.call(std::string(R"({"cmd":")") + name + R"(","bogus":1})");
    EXPECT_FALSE(ok(j)) << name;
    EXPECT_NE(error_of(j).find(std::string(name) + ": unknown field \"bogus\""), std::string::npos) << error_of(j);
  }
  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"cmd":["stop"]})", "\"cmd\" must be a string"},
      {R"({"cmd":null})", "\"cmd\" must be a string"},
      {R"({"cmd":"create_qp","type":5})", "create_qp: \"type\" must be a string, not a number"},
      {R"({"cmd":"destroy_qp","qpn":true})", "destroy_qp: \"qpn\" must be a whole number"},
      {R"({"cmd":"destroy_mr","rkey":4294967296})", "destroy_mr: \"rkey\" 4294967296 is outside 1 .. 4294967295"},
      {R"({"cmd":"disconnect","session":"1"})", "disconnect: \"session\" must be a whole number"},
      {R"({"cmd":"disconnect"})", "disconnect: \"session\" is missing"},
  };
  for (const auto& [cmd, words] : bad) {
    const Json j = c.call(cmd);
    EXPECT_FALSE(ok(j)) << cmd;
    EXPECT_NE(error_of(j).find(words), std::string::npos) << cmd << ": " << error_of(j);
  }
  EXPECT_EQ(::kill(appliance_->pid(), 0), 0) << "the appliance stopped";
}

TEST_F(ApplianceControl, CreateQpMakesTheTypeAskedForOrRefusesIt) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  std::map<std::uint64_t, std::string> made;
  for (const char* type : {"rc", "uc", "ud", "UD"}) {
    const Json j = c.call(std::string(R"({"cmd":"create_qp","type":")") + type + "\"}");
    ASSERT_TRUE(ok(j)) << type << ": " << error_of(j);
    made[j["qpn"].u64()] = j["type"].str();
    EXPECT_EQ(j["state"].str(), std::string(type) == "rc" || std::string(type) == "uc" ? "INIT" : "RTS") << type;
  }
  const Json listed = c.call(R"({"cmd":"list_qps"})");
  std::map<std::uint64_t, std::string> seen;
  for (const Json& q : listed["qps"].array())
    if (made.count(q["qpn"].u64())) seen[q["qpn"].u64()] = q["type"].str();
  EXPECT_EQ(seen, made);
  std::vector<std::string> types;
  for (const auto& [qpn, type] : made) types.push_back(type);
  std::sort(types.begin(), types.end());
  EXPECT_EQ(types, (std::vector<std::string>{"RC", "UC", "UD", "UD"}));
  for (const char* type : {"xx", "xrc", "", "rd"}) {
    const Json j = c.call(std::string(R"({"cmd":"create_qp","type":")") + type + "\"}");
    EXPECT_FALSE(ok(j)) << type;
    EXPECT_NE(error_of(j).find("is not a QP type: rc, uc or ud"), std::string::npos) << error_of(j);
  }
  // A UD QP has no peer.
  const std::string ud = std::to_string(std::prev(made.end())->first);
  Json j = c.call(R"({"cmd":"connect_qp","qpn":)" + ud + R"(,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.9"})");
  for (const auto& [qpn, type] : made)
    if (type == "UD") j = c.call(R"({"cmd":"connect_qp","qpn":)" + std::to_string(qpn) + R"(,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.9"})");
  EXPECT_NE(error_of(j).find("is UD: it has no peer"), std::string::npos) << error_of(j);
}

bool listed_qpn(ControlClient& c, std::uint64_t qpn) {
  const Json j = c.call(R"({"cmd":"list_qps"})");
  for (const Json& q : j["qps"].array())
    if (q["qpn"].u64() == qpn) return true;
  return false;
}

bool listed_rkey(ControlClient& c, std::uint64_t rkey) {
  const Json j = c.call(R"({"cmd":"list_mrs"})");
  for (const Json& m : j["mrs"].array())
    if (m["rkey"].u64() == rkey) return true;
  return false;
}

TEST_F(ApplianceControl, DestroyQpAndDestroyMrFreeWhatCreateMade) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  const Json q = c.call(R"({"cmd":"create_qp"})");
  const Json m = c.call(R"({"cmd":"create_mr","size":65536})");
  ASSERT_TRUE(ok(q) && ok(m)) << error_of(q) << error_of(m);
  const std::uint64_t in_use = c.call(R"({"cmd":"list_mrs"})")["bytes_in_use"].u64();
  EXPECT_TRUE(listed_qpn(c, q["qpn"].u64()));
  EXPECT_TRUE(listed_rkey(c, m["rkey"].u64()));
  Json j = c.call(R"({"cmd":"destroy_qp","qpn":)" + std::to_string(q["qpn"].u64()) + "}");
  EXPECT_TRUE(ok(j)) << error_of(j);
  j = c.call(R"({"cmd":"destroy_mr","rkey":)" + std::to_string(m["rkey"].u64()) + "}");
  EXPECT_TRUE(ok(j)) << error_of(j);
  EXPECT_FALSE(listed_qpn(c, q["qpn"].u64()));
  EXPECT_FALSE(listed_rkey(c, m["rkey"].u64()));
  EXPECT_EQ(c.call(R"({"cmd":"list_mrs"})")["bytes_in_use"].u64(), in_use - 65536);
  // Twice, or something create did not make: an error saying so.
  j = c.call(R"({"cmd":"destroy_qp","qpn":)" + std::to_string(q["qpn"].u64()) + "}");
  EXPECT_NE(error_of(j).find("no QP " + std::to_string(q["qpn"].u64()) + " made by create_qp"), std::string::npos) << error_of(j);
  j = c.call(R"({"cmd":"destroy_mr","rkey":)" + std::to_string(m["rkey"].u64()) + "}");
  EXPECT_NE(error_of(j).find("no region with rkey"), std::string::npos) << error_of(j);
  const Json all = c.call(R"({"cmd":"list_mrs"})");
  const std::uint64_t exposed = all["mrs"].array()[0]["rkey"].u64();
  j = c.call(R"({"cmd":"destroy_mr","rkey":)" + std::to_string(exposed) + "}");
  EXPECT_NE(error_of(j).find("the appliance's own region; it stays"), std::string::npos) << error_of(j);
  EXPECT_TRUE(listed_rkey(c, exposed));
}

// What a control client made is its own: when it disconnects, its QPs and regions go.
TEST_F(ApplianceControl, QpsAndRegionsGoWithTheClientThatMadeThem) {
  ControlClient watcher(socket_);
  ASSERT_TRUE(watcher.connected()) << watcher.error();
  std::uint64_t qpn = 0, rkey = 0;
  const std::uint64_t in_use = watcher.call(R"({"cmd":"list_mrs"})")["bytes_in_use"].u64();
  {
    ControlClient maker(socket_);
    ASSERT_TRUE(maker.connected()) << maker.error();
    qpn = maker.call(R"({"cmd":"create_qp"})")["qpn"].u64();
    rkey = maker.call(R"({"cmd":"create_mr","size":8192})")["rkey"].u64();
    ASSERT_TRUE(listed_qpn(watcher, qpn));
    ASSERT_TRUE(listed_rkey(watcher, rkey));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && (listed_qpn(watcher, qpn) || listed_rkey(watcher, rkey)))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(listed_qpn(watcher, qpn)) << "QP still there 10 s after its client went";
  EXPECT_FALSE(listed_rkey(watcher, rkey)) << "region still there 10 s after its client went";
  EXPECT_EQ(watcher.call(R"({"cmd":"list_mrs"})")["bytes_in_use"].u64(), in_use);
}

TEST_F(ApplianceControl, ListSessionsAndDisconnectOfAnUnknownSession) {
  ControlClient c(socket_);
  ASSERT_TRUE(c.connected()) << c.error();
  const Json j = c.call(R"({"cmd":"list_sessions"})");
  ASSERT_TRUE(ok(j)) << error_of(j);
  EXPECT_TRUE(j["sessions"].array().empty());
  const Json d = c.call(R"({"cmd":"disconnect","session":99})");
  EXPECT_NE(error_of(d).find("no running session 99 (see list_sessions)"), std::string::npos) << error_of(d);
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
  EXPECT_NE(error_of(j).find("connect_qp: \"remote_psn\" is missing"), std::string::npos) << error_of(j);
  j = c.call(R"({"cmd":"connect_qp","qpn":)" + qpn + R"(,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.999"})");
  EXPECT_NE(error_of(j).find("\"remote_ip\" '10.0.0.999' is not an IPv4 or IPv6 address"), std::string::npos) << error_of(j);
  j = c.call(R"({"cmd":"connect_qp","qpn":1,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.9"})");
  EXPECT_NE(error_of(j).find("no QP 1 made by create_qp"), std::string::npos) << error_of(j);
  // Every number within its range: 2^40 would have been stored as 0, 2^24 as 0 too.
  const std::vector<std::pair<std::string, std::string>> out_of_range{
      {R"("remote_qpn":1099511627776,"remote_psn":1)", "\"remote_qpn\" 1099511627776 is outside 2 .. 16777215"},
      {R"("remote_qpn":16777216,"remote_psn":1)", "\"remote_qpn\" 16777216 is outside 2 .. 16777215"},
      {R"("remote_qpn":1,"remote_psn":1)", "0 and 1 are special QPs"},
      {R"("remote_qpn":17,"remote_psn":16777216)", "\"remote_psn\" 16777216 is outside 0 .. 16777215 (24 bits)"},
      {R"("remote_qpn":17,"remote_psn":1.5)", "\"remote_psn\" must be a whole number"},
      {R"("remote_qpn":"17","remote_psn":1)", "\"remote_qpn\" must be a whole number 2 .. 16777215, not a string"},
      {R"("remote_qpn":17,"remote_psn":1,"remote_gid":"::1")", "unknown field \"remote_gid\""},
  };
  for (const auto& [fields, words] : out_of_range) {
    j = c.call(R"({"cmd":"connect_qp","qpn":)" + qpn + "," + fields + R"(,"remote_ip":"10.0.0.9"})");
    EXPECT_FALSE(ok(j)) << fields;
    EXPECT_NE(error_of(j).find(words), std::string::npos) << fields << ": " << error_of(j);
  }
  j = c.call(R"({"cmd":"connect_qp","qpn":16777216,"remote_qpn":17,"remote_psn":1,"remote_ip":"10.0.0.9"})");
  EXPECT_NE(error_of(j).find("\"qpn\" 16777216 is outside 0 .. 16777215"), std::string::npos) << error_of(j);
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
  for (const char* name : {"list_qps", "list_mrs", "list_sessions", "create_mr", "destroy_mr", "create_qp", "connect_qp",
                           "destroy_qp", "disconnect", "counters", "stop"})
    EXPECT_NE(error_of(unknown).find(name), std::string::npos) << name;
  // Several commands in one write are answered in order; an empty line gets an answer too.
  c.send_raw("{\"cmd\":\"list_mrs\"}\n\n{\"cmd\":\"nope\"}\n{\"cmd\":\"list_qps\"}\n");
  EXPECT_TRUE(test::parse_json(c.read_line()).has("mrs"));
  const Json empty = test::parse_json(c.read_line());
  EXPECT_NE(error_of(empty).find("empty line"), std::string::npos) << error_of(empty);
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
  const std::string dir = appliance_->dir().path().string();
  ASSERT_EQ(::chmod(dir.c_str(), 0711), 0);
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
  ::chmod(dir.c_str(), 0700);
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
  const int status = appliance_->wait_exit(20'000);
  ASSERT_NE(status, -1) << "still running 20 s after stop";
  EXPECT_EQ(status, 0) << appliance_->stderr_text();
  EXPECT_FALSE(std::filesystem::exists(socket_)) << "socket file left behind";
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + appliance_->prefix())) << "DPDK runtime folder left behind";
  const Json report = test::parse_json(file_text(appliance_->report_path()));
  EXPECT_TRUE(ok(report));
  EXPECT_EQ(report["sessions_failed"].u64(), 0u);
}

}  // namespace
}  // namespace roce::client::control_socket_test
