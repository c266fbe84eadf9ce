// One QP flooding duplicate 16 MiB READ requests must not hold up another QP's answer, tried
// from outside the process: roce-appliance on a real port (a veth pair in a network namespace
// this test makes, net_af_packet), two RC QPs made and connected through its control socket, a
// raw socket on the peer end sending crafted requests and reading every frame the appliance
// sends, in wire order. The claim (docs/robustness.md): every QP with something to send gets
// tx_quantum frames per turn, so QP B's READ response leaves after a few turns of A's stream,
// not after A's 16 MiB. Frames are counted, never timed. Root only; it skips, saying why.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "tests/apps/appliance/appliance_process.hpp"
#include "tests/apps/appliance/veth_namespace.hpp"
#include "tests/support/raw_peer.hpp"

namespace roce::client::read_fairness_test {
namespace {

using namespace roce::proto;
using test::ApplianceProcess;
using test::ControlClient;
using test::Json;
using test::RawPeer;
using test::reth;

constexpr MacAddr kApplianceMac{2, 0, 0, 0, 0, 0x02};
constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0x99};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kLongRead = 16u << 20;
constexpr std::uint32_t kShortRead = 64;
constexpr std::uint32_t kMtu = 1024;
constexpr int kDuplicates = 50;

struct Seen {
  std::uint32_t dest_qpn = 0;
  Opcode opcode{};
  std::size_t payload = 0;
};

// The next RoCE frame from the appliance (ARP and ICMP from the peer's kernel are skipped).
std::optional<Seen> next_roce(const test::VethNamespace& net, int timeout_ms) {
  for (;;) {
    const auto f = net.receive(timeout_ms);
    if (f.empty()) return std::nullopt;
    Packet p;
    if (parse_frame(f, {}, p) != ParseError::None) continue;
    return Seen{p.bth.dest_qp.get(), static_cast<Opcode>(p.bth.opcode), p.payload.size()};
  }
}

TEST(ReadFairness, FiftyDuplicateLargeReadsDoNotHoldUpAnotherQpOnARealPort) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace and a veth pair";
  // The peer end has 10.0.0.9, so the kernel answers the appliance's ARP when it connects.
  test::VethNamespace net({"02:00:00:00:00:02", "02:00:00:00:00:99", "10.0.0.9/24"});
  if (!net.ready()) GTEST_SKIP() << net.why_not();
  test::ApplianceSetup setup;
  setup.wrapper = {"ip", "netns", "exec", net.ns()};
  setup.vdev = "net_af_packet0,iface=" + net.port() + ",blocksz=36864,framesz=4608,framecnt=512";
  setup.dev = "net_af_packet0";
  ApplianceProcess appliance({"--mtu", std::to_string(kMtu)}, "fair", setup);
  ASSERT_TRUE(appliance.running()) << appliance.stderr_text();
  ControlClient ctl(appliance.socket());

  const Json mr = ctl.call(R"({"cmd":"create_mr","size":)" + std::to_string(kLongRead) + "}");
  ASSERT_TRUE(test::ok(mr)) << test::error_of(mr);
  const std::uint64_t addr = mr["addr"].u64();
  const auto rkey = static_cast<std::uint32_t>(mr["rkey"].u64());
  std::uint32_t qpn[2] = {};
  const std::uint32_t peer_qpn[2] = {0x77, 0x78};
  for (int i = 0; i < 2; ++i) {
    const Json qp = ctl.call(R"({"cmd":"create_qp"})");
    ASSERT_TRUE(test::ok(qp)) << test::error_of(qp);
    qpn[i] = static_cast<std::uint32_t>(qp["qpn"].u64());
    const Json c = ctl.call(R"({"cmd":"connect_qp","qpn":)" + std::to_string(qpn[i]) + R"(,"remote_qpn":)" +
                            std::to_string(peer_qpn[i]) + R"(,"remote_psn":0,"remote_ip":"10.0.0.9"})");
    ASSERT_TRUE(test::ok(c)) << test::error_of(c);
  }

  // Requests are built as an engine at the appliance's address would expect them.
  rdma::MrTable mrs;
  rdma::EngineConfig cfg;
  cfg.path.local.mac = kApplianceMac;
  cfg.path.local.ip = rdma::IpAddress::ipv4({10, 0, 0, 2});
  rdma::Engine shape(cfg, mrs);
  RawPeer a(shape, kPeerMac, kPeerIp, peer_qpn[0], qpn[0]);
  RawPeer b(shape, kPeerMac, kPeerIp, peer_qpn[1], qpn[1]);
  while (!net.receive(50).empty()) {
  }
  (void)net.receive_drops();

  // A's READ and its duplicates, then B's short READ once A's stream is flowing.
  const auto long_read = a.frame(Opcode::RcReadRequest, 0, reth(addr, rkey, kLongRead));
  for (int i = 0; i < kDuplicates; ++i) ASSERT_TRUE(net.send(long_read));
  std::size_t a_before = 0;
  for (auto s = next_roce(net, 5000); s && s->dest_qpn == peer_qpn[0]; s = next_roce(net, 5000))
    if (++a_before == 64) break;
  ASSERT_EQ(a_before, 64u) << "A's READ responses did not start: " << appliance.stderr_text();

  const auto short_read = b.frame(Opcode::RcReadRequest, 0, reth(addr, rkey, kShortRead));
  ASSERT_TRUE(net.send(short_read));
  const auto sent = std::chrono::steady_clock::now();
  std::size_t a_between = 0;
  std::optional<Seen> answer;
  for (auto s = next_roce(net, 10000); s; s = next_roce(net, 10000)) {
    if (s->dest_qpn == peer_qpn[1]) {
      answer = s;
      break;
    }
    ++a_between;
  }
  const double waited_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - sent).count();
  ASSERT_TRUE(answer) << "no answer to B's READ (" << a_between << " frames of A's stream came instead)";
  EXPECT_EQ(answer->opcode, Opcode::RcReadResponseOnly);
  EXPECT_EQ(answer->payload, kShortRead);
  // A's stream goes on after B's answer: B did not just wait for A to finish.
  std::size_t a_after = 0;
  for (auto s = next_roce(net, 500); s && a_after < 256; s = next_roce(net, 500)) a_after += s->dest_qpn == peer_qpn[0];
  const unsigned dropped = net.receive_drops();
  std::printf("read fairness: B answered after %zu frames of A's 16 MiB READ (%u frames a stream), %.0f us; "
              "%zu of A's frames after it; %u dropped by the receiving socket\n",
              a_between, kLongRead / kMtu, waited_us, a_after, dropped);
  ASSERT_EQ(dropped, 0u) << "the test's socket lost frames: the counts above are not the wire's order";
  EXPECT_GT(a_after, 0u) << "A's stream had ended before B's answer: nothing was measured";
  // Frames already on their way when B's request arrived (the PMD's transmit ring, one burst per
  // worker turn) come first; a 16 MiB stream is 16384 frames.
  EXPECT_LT(a_between, 2048u) << "B's answer waited behind A's stream";

  const Json counters = ctl.call(R"({"cmd":"counters"})");
  ASSERT_TRUE(counters.has("transport") && counters["transport"].has("duplicate_request")) << test::error_of(counters);
  EXPECT_GE(counters["transport"]["duplicate_request"].u64(), 1u);
  EXPECT_EQ(appliance.terminate(), 0) << appliance.stderr_text();
}

}  // namespace
}  // namespace roce::client::read_fairness_test
