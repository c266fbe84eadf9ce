// roce-appliance's TCP exchange port under clients that connect and say nothing, stall in the
// middle of the exchange, or come when no session or QP is left, tried with real sockets from
// outside the process: nobody locks the port, every refusal is said on stderr and to the
// client ("REFUSED <reason>" where the client waits for the server's next record), and stalled
// connections give their slot back. Outcomes are counted; every wait is generous.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "tests/apps/appliance/appliance_process.hpp"

namespace roce::client::exchange_port_test {
namespace {

using test::ApplianceProcess;
using test::ControlClient;
using test::error_of;
using test::Json;
using test::ok;
using test::RawTcp;

// perftest (5.31 and later) starts with its version in 16 bytes; the server answers with its own.
const std::string kVersion = std::string("6.06") + std::string(12, '\0');

std::size_t count_of(const std::string& text, const std::string& words) {
  std::size_t n = 0;
  for (auto at = text.find(words); at != std::string::npos; at = text.find(words, at + 1)) ++n;
  return n;
}

// The server's answer to a version: its own version (a session), or a refusal.
std::string version_answer(RawTcp& c) {
  c.send_raw(kVersion);
  return c.read_some(16, 10'000);
}

TEST(ExchangePort, HundredsOfSilentConnectionsDoNotLockOutAClient) {
  ApplianceProcess appliance({"--handshake-timeout", "3"});
  ASSERT_TRUE(appliance.running()) << appliance.stderr_text();
  // More than --max-sessions (64) and more than may wait at once (256).
  constexpr int kSilent = 300;
  std::vector<std::unique_ptr<RawTcp>> silent;
  for (int i = 0; i < kSilent; ++i) {
    silent.push_back(std::make_unique<RawTcp>(appliance.port()));
    ASSERT_TRUE(silent.back()->connected()) << i;
  }
  // A client that speaks is served at once: its version is answered with the server's.
  RawTcp client(appliance.port());
  ASSERT_TRUE(client.connected());
  const std::string answer = version_answer(client);
  EXPECT_EQ(answer.substr(0, 5), std::string("6.06\0", 5)) << answer;
  // Every silent one is closed, told why: made way for newer ones, or the handshake timeout.
  int told = 0, timed_out = 0, made_way = 0;
  for (auto& s : silent) {
    const std::string line = s->read_some(512, 30'000);
    if (line.rfind("REFUSED ", 0) == 0) ++told;
    if (line.find("sent nothing within 3000 ms of connecting (handshake timeout)") != std::string::npos) ++timed_out;
    if (line.find("closed to make way for a new one") != std::string::npos) ++made_way;
    EXPECT_TRUE(s->closed()) << line;
  }
  EXPECT_EQ(told, kSilent);
  // With room for 256, the oldest make way for the last ones unless the machine is so slow that
  // they time out first: either way each is closed and told why.
  EXPECT_EQ(timed_out + made_way, kSilent);
  std::printf("silent connections: %d made way, %d timed out\n", made_way, timed_out);
  // The client that stalled after its version gives its session up too, told why.
  const std::string stalled = client.read_some(512, 30'000);
  EXPECT_NE(stalled.find("REFUSED handshake not finished in time"), std::string::npos) << stalled;
  // The session is counted once the accept loop has reaped it (within its next turns).
  ControlClient ctl(appliance.socket());
  Json report = ctl.call(R"({"cmd":"counters"})");
  for (int i = 0; i < 100 && report["sessions_running"].u64() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    report = ctl.call(R"({"cmd":"counters"})");
  }
  EXPECT_EQ(report["handshakes_dropped"].u64(), static_cast<std::uint64_t>(kSilent));
  EXPECT_EQ(report["sessions_failed"].u64(), 1u);
  EXPECT_EQ(report["sessions_running"].u64(), 0u);
  EXPECT_EQ(report["errors"].array().size(), 32u) << "the report keeps the last 32 errors";
  EXPECT_EQ(report["errors_total"].u64(), static_cast<std::uint64_t>(kSilent + 1));
  EXPECT_EQ(report["errors_not_listed"].u64(), static_cast<std::uint64_t>(kSilent + 1 - 32));
  // Each refusal is one line on stderr.
  const std::string err = appliance.stderr_text();
  EXPECT_EQ(count_of(err, "roce-appliance: refused 127.0.0.1:"), static_cast<std::size_t>(kSilent)) << err.substr(0, 2000);
  EXPECT_EQ(count_of(err, "session failed: 127.0.0.1:"), 1u);
  EXPECT_EQ(appliance.terminate(), 0) << err.substr(0, 2000);
}

TEST(ExchangePort, AClientPastMaxSessionsIsToldWhyAndAStalledSessionGivesItsSlotBack) {
  ApplianceProcess appliance({"--max-sessions", "1", "--handshake-timeout", "3"});
  ASSERT_TRUE(appliance.running()) << appliance.stderr_text();
  RawTcp first(appliance.port());
  EXPECT_EQ(version_answer(first).substr(0, 4), "6.06");
  // The one session is taken (first stalls in its exchange): the next client is refused, told why.
  RawTcp second(appliance.port());
  second.send_raw(kVersion);
  const std::string refused = second.read_some(512, 10'000);
  EXPECT_EQ(refused.rfind("REFUSED 1 sessions are running (--max-sessions 1); try again when one has ended", 0), 0u) << refused;
  EXPECT_TRUE(second.closed());
  // The stalled session ends at the handshake timeout; then a client is served again.
  const std::string stalled = first.read_some(512, 30'000);
  EXPECT_NE(stalled.find("REFUSED handshake not finished in time"), std::string::npos) << stalled;
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    RawTcp next(appliance.port());
    served = version_answer(next).substr(0, 4) == "6.06";
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(served);
  ControlClient ctl(appliance.socket());
  const Json report = ctl.call(R"({"cmd":"counters"})");
  EXPECT_GE(report["sessions_refused"].u64(), 1u);
  const std::string err = appliance.stderr_text();
  EXPECT_NE(err.find("sessions are running (--max-sessions 1)"), std::string::npos) << err;
  EXPECT_NE(err.find("session failed: 127.0.0.1:"), std::string::npos) << err;
  EXPECT_EQ(appliance.terminate(), 0) << err;
}

// ibv_rc_pingpong's record: LID:QPN:PSN:GID, the GID ::ffff:10.0.0.9 in 32 hex digits.
std::string pingpong_record() {
  std::string r = "0000:000011:000001:00000000000000000000ffff0a000009";
  r.push_back('\0');
  return r;
}

TEST(ExchangePort, AClientRefusedForWantOfQpsIsToldWhyAndServedOnceTheyAreFree) {
  ApplianceProcess appliance({"--max-qps", "1"});
  ASSERT_TRUE(appliance.running()) << appliance.stderr_text();
  auto holder = std::make_unique<ControlClient>(appliance.socket());
  ASSERT_TRUE(ok(holder->call(R"({"cmd":"create_qp"})")));
  {
    RawTcp c(appliance.port());
    c.send_raw(pingpong_record());
    const std::string line = c.read_some(512, 10'000);
    EXPECT_EQ(line.rfind("REFUSED QP limit reached (max_qps 1)", 0), 0u) << line;
  }
  // The control client goes with its QP: the next pingpong client gets a QP (and, on this null
  // port where nobody answers ARP, is told that instead).
  holder.reset();
  std::string line;
  for (int i = 0; i < 20; ++i) {
    RawTcp c(appliance.port());
    c.send_raw(pingpong_record());
    line = c.read_some(512, 15'000);
    if (line.find("QP limit") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(line.rfind("REFUSED no ARP answer from 10.0.0.9", 0), 0u) << line;
  const std::string err = appliance.stderr_text();
  EXPECT_NE(err.find("session failed: 127.0.0.1:"), std::string::npos) << err;
  EXPECT_NE(err.find("QP limit reached (max_qps 1)"), std::string::npos) << err;
  EXPECT_EQ(appliance.terminate(), 0) << err;
}

}  // namespace
}  // namespace roce::client::exchange_port_test
