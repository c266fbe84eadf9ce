// Every drop the engine counts reaches roce-appliance's counters command, its JSON report and
// rte_telemetry, checked from outside the process and by name from the engine's own tables
// (EngineDrop, ParseError, Counter): a counter added to one of them is checked here without a
// change. Crafted frames of every kind go through a real port (a veth pair in a network
// namespace this test makes, the appliance on net_af_packet); the same frames go into an
// Engine in this process set up the same way, and every counter must agree. Root only; it
// skips, saying why, otherwise.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/apps/appliance/appliance_process.hpp"
#include "tests/apps/appliance/veth_namespace.hpp"
#include "tests/dataplane/telemetry_client.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::client::drop_counters_test {
namespace {

using namespace roce::proto;
using test::ApplianceProcess;
using test::ControlClient;
using test::RawPeer;
using test::reth;
using test::Json;
using test::VethNamespace;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0x99};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
using namespace roce::test::frame_edit;

// One frame of (at least) every kind of drop the engine knows, aimed at an appliance at
// 10.0.0.2 whose only QP is an RC QP 0x11 in INIT.
std::vector<std::vector<std::byte>> hostile_frames(rdma::Engine& oracle) {
  RawPeer peer(oracle, kPeerMac, kPeerIp, 0x77, 0x11);
  const std::vector<std::byte> payload(16, std::byte{0x5a});
  auto send_only = [&] { return peer.frame(Opcode::RcSendOnly, 0, {}, payload); };
  std::vector<std::vector<std::byte>> out;
  out.push_back(send_only());  // to a QP in INIT: a bad-state drop on the QP
  auto f = send_only();
  f[f.size() - 1] ^= std::byte{0xff};
  out.push_back(f);  // bad ICRC
  {
    RawPeer stranger(oracle, kPeerMac, kPeerIp, 0x77, 0x99);
    out.push_back(stranger.frame(Opcode::RcSendOnly, 0, {}, payload));  // unknown QP
  }
  out.push_back(peer.frame(Opcode::UcSendOnly, 0, {}, payload));  // UC opcode to an RC QP
  peer.spec().bth.pkey.set(0x1234);
  out.push_back(send_only());  // another partition
  peer.spec().bth.pkey.set(0xFFFF);
  peer.spec().ipv4.dst = Ipv4Addr{10, 0, 0, 3};
  out.push_back(send_only());  // not for us
  peer.spec().ipv4.dst = Ipv4Addr{10, 0, 0, 2};
  f = send_only();
  auto ip = read_header<Ipv4Header>(f, kIpOffset);
  ip.checksum.set(static_cast<std::uint16_t>(ip.checksum.get() ^ 0x0101));
  write_header(f, kIpOffset, ip);
  out.push_back(f);  // bad IPv4 header checksum
  f = send_only();
  f.resize(kBthOffset + 6);
  out.push_back(f);  // cut inside the BTH
  for (std::uint16_t type : {std::uint16_t{0x88B5}, kEtherTypeRoceV1}) {
    f = send_only();
    auto eth = read_header<EthernetHeader>(f, 0);
    eth.ether_type.set(type);
    write_header(f, 0, eth);
    out.push_back(f);  // not IP; RoCEv1
  }
  f = send_only();
  f[kIpOffset] = std::byte{0x55};  // IP version 5
  out.push_back(f);
  // No IPv4 fragment: net_af_packet's fanout asks the kernel to reassemble fragments first, so
  // a lone one never reaches the port (HostileInput.NonRoceFramesAreCountedDrops counts it).
  f = send_only();
  ip = read_header<Ipv4Header>(f, kIpOffset);
  ip.protocol = 6;
  write_header(f, kIpOffset, ip);
  fix_ipv4_checksum(f);
  out.push_back(f);  // TCP
  f = send_only();
  auto udp = read_header<UdpHeader>(f, kUdpOffset);
  udp.dst_port.set(4792);
  write_header(f, kUdpOffset, udp);
  out.push_back(f);  // UDP to another port
  f = send_only();
  ip = read_header<Ipv4Header>(f, kIpOffset);
  ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + 8));
  write_header(f, kIpOffset, ip);
  fix_ipv4_checksum(f);
  out.push_back(f);  // IP length longer than the frame
  peer.spec().bth.flags = static_cast<std::uint8_t>(peer.spec().bth.flags | 0x1);
  out.push_back(send_only());  // TVer 1
  peer.spec().bth.flags = static_cast<std::uint8_t>(peer.spec().bth.flags & ~0x1);
  peer.spec().validate = false;
  f = send_only();
  auto bth = read_header<Bth>(f, kBthOffset);
  bth.opcode = 0x45;  // a reserved RC opcode
  write_header(f, kBthOffset, bth);
  reseal(f);
  out.push_back(f);
  f = peer.frame(Opcode::RcReadRequest, 0, reth(0x1000, 0x100, 8));
  bth = read_header<Bth>(f, kBthOffset);
  bth.set_pad_count(3);
  write_header(f, kBthOffset, bth);
  reseal(f);
  out.push_back(f);  // pad on an opcode without payload
  out.push_back(peer.frame(Opcode::RcWriteOnly, 0, reth(0x1000, 0x100, 4100), std::vector<std::byte>(4100)));  // > 4096
  // IPv4 with options (IHL 6): the header grows by one word.
  f = send_only();
  ip = read_header<Ipv4Header>(f, kIpOffset);
  std::vector<std::byte> with_options(f.begin(), f.begin() + kUdpOffset);
  with_options.insert(with_options.end(), 4, std::byte{1});  // four NOP options
  with_options.insert(with_options.end(), f.begin() + kUdpOffset, f.end());
  ip.version_ihl = 0x46;
  ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + 4));
  write_header(with_options, kIpOffset, ip);
  out.push_back(with_options);
  return out;
}

std::uint64_t field(const Json& object, const std::string& name) {
  return object.has(name) ? object[name].u64() : ~std::uint64_t{0};
}

// Every name of the engine's drop tables, with its value in `object` ({"drops":..., "parse_drops":...}).
void expect_every_drop(const Json& object, const rdma::Engine& oracle, const std::string& where) {
  ASSERT_TRUE(object.has("drops") && object.has("parse_drops")) << where;
  for (std::size_t i = 0; i < static_cast<std::size_t>(rdma::EngineDrop::Count); ++i) {
    const auto d = static_cast<rdma::EngineDrop>(i);
    EXPECT_EQ(field(object["drops"], to_string(d)), oracle.drops(d)) << where << ": drops." << to_string(d);
  }
  for (std::size_t i = 1; i < static_cast<std::size_t>(ParseError::Count); ++i) {
    const auto e = static_cast<ParseError>(i);
    std::string name = to_string(e);
    std::replace(name.begin(), name.end(), '-', '_');
    EXPECT_EQ(field(object["parse_drops"], name), oracle.parse_drops(e)) << where << ": parse_drops." << name;
  }
}

TEST(DropCounters, EveryEngineDropReachesTheCountersTheReportAndTelemetry) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace and a veth pair";
  VethNamespace net;
  if (!net.ready()) GTEST_SKIP() << net.why_not();
  test::ApplianceSetup setup;
  setup.wrapper = {"ip", "netns", "exec", net.ns()};
  setup.vdev = "net_af_packet0,iface=" + net.port() + ",blocksz=36864,framesz=4608,framecnt=512";
  setup.dev = "net_af_packet0";
  setup.telemetry = true;
  ApplianceProcess appliance({}, "drops", setup);
  ASSERT_TRUE(appliance.running()) << appliance.stderr_text();
  ControlClient ctl(appliance.socket());
  const Json qp = ctl.call(R"({"cmd":"create_qp"})");
  ASSERT_TRUE(test::ok(qp)) << test::error_of(qp);
  ASSERT_EQ(qp["qpn"].u64(), 0x11u);

  // The oracle: an engine at the same address with the same QP.
  rdma::MrTable mrs;
  rdma::EngineConfig cfg;
  cfg.path.local.ip = rdma::IpAddress::ipv4({10, 0, 0, 2});
  rdma::Engine oracle(cfg, mrs);
  test::QpOptions o;
  test::Endpoint ep = test::make_endpoint(oracle, o);
  const rdma::QpTransition init = rdma::init_transition(IBV_QPT_RC, IBV_ACCESS_LOCAL_WRITE, 0);
  ASSERT_TRUE(oracle.modify_qp(ep.qp, init.attr, init.mask).ok());
  ASSERT_EQ(ep.qp->qpn(), 0x11u);
  const auto frames = hostile_frames(oracle);
  for (const auto& f : frames) {
    oracle.receive(f, 0);
    ASSERT_TRUE(net.send(f)) << "send " << f.size() << " bytes: " << std::strerror(errno);
  }
  std::size_t kinds = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(rdma::EngineDrop::Count); ++i)
    kinds += oracle.drops(static_cast<rdma::EngineDrop>(i)) > 0;
  for (std::size_t i = 1; i < static_cast<std::size_t>(ParseError::Count); ++i)
    kinds += oracle.parse_drops(static_cast<ParseError>(i)) > 0;
  EXPECT_GE(kinds, 15u) << "the frames should hit most kinds of drop";

  // The counters command, once every frame has arrived.
  Json counters = ctl.call(R"({"cmd":"counters"})");
  for (int i = 0; i < 100 && counters["workers"].array()[0]["received"].u64() < oracle.received(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    counters = ctl.call(R"({"cmd":"counters"})");
  }
  ASSERT_EQ(counters["workers"].array()[0]["received"].u64(), oracle.received());
  expect_every_drop(counters, oracle, "counters");
  expect_every_drop(counters["workers"].array()[0], oracle, "counters.workers[0]");
  for (std::size_t k = 0; k < rdma::kCounterCount; ++k) {
    const std::string name(rdma::counter_name(static_cast<rdma::Counter>(k)));
    EXPECT_EQ(field(counters["transport"], name), oracle.total_counters().values()[k]) << "transport." << name;
  }

  // rte_telemetry: the same names and values (from the snapshot the worker publishes).
  test::TelemetryClient tel;
  ASSERT_EQ(tel.connect_to(appliance.telemetry_socket()), "");
  Json engine;
  for (int i = 0; i < 50; ++i) {
    const Json reply = test::parse_json(tel.command("/rocev2/engine,appliance"));
    engine = reply["/rocev2/engine"];
    if (engine.has("received") && engine["received"].u64() == oracle.received()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  expect_every_drop(engine, oracle, "telemetry /rocev2/engine");

  // The report written at exit.
  EXPECT_EQ(appliance.terminate(), 0) << appliance.stderr_text();
  const Json report = test::parse_json(test::file_text(appliance.report_path()));
  expect_every_drop(report, oracle, "report");
}

}  // namespace
}  // namespace roce::client::drop_counters_test
