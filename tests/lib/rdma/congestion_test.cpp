// DCQCN through the transport: CE marks on the path come back as CNPs, the sender's reaction
// point cuts its rate and the pacer spaces its packets at the new rate.
#include <gtest/gtest.h>

#include "protocol/parser.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::congestion_test {
namespace {

using namespace roce::proto;

rdma::EngineConfig cc_config(double line_bps) {
  rdma::EngineConfig c;
  c.tuning.congestion.enabled = true;
  c.tuning.congestion.rp = cc::paper_params(line_bps);
  return c;
}

struct Net {
  SimNetwork net{11};
  Endpoint a, b;
  std::vector<Nanos> a_data_times;
  std::vector<Nanos> b_cnp_times;
  Net(LinkFaults a_to_b, bool cc = true) {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cc ? cc_config(10e9) : rdma::EngineConfig{});
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cc ? cc_config(10e9) : rdma::EngineConfig{});
    net.connect("a", "b", a_to_b, {});
    net.on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos t) {
      Packet p;
      if (parse_frame(f, {}, p) != ParseError::None) return;
      if (from == "a" && p.info->operation == Operation::Write) a_data_times.push_back(t);
      if (from == "b" && p.opcode() == raw(Opcode::Cnp)) b_cnp_times.push_back(t);
    };
    QpOptions o;
    o.mtu = IBV_MTU_4096;
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
    connect_pair(a, b, o);
  }
  void write(std::size_t bytes, int count) {
    static std::vector<std::byte> src(4 << 20), dst(4 << 20);
    auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
    auto* dm = reg(*b.engine, b.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    for (int i = 0; i < count; ++i) {
      ibv_sge g = sge(src.data(), static_cast<std::uint32_t>(bytes), sm);
      ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, static_cast<std::uint64_t>(i), &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
    }
    int done = 0;
    ASSERT_TRUE(net.run_until([&] { done += static_cast<int>(drain(a).size()); return done == count; }, net.now() + 10 * kSecond));
  }
};

TEST(Congestion, CeMarkedDataIsAnsweredWithPacedCnpsThatCutTheSenderRate) {
  LinkFaults mark_all;
  mark_all.ce_mark = 1.0;
  mark_all.bandwidth_bps = 10e9;
  Net n(mark_all);
  n.write(1 << 20, 4);
  const rdma::QpCongestion* rp_side = n.a.qp->congestion();
  ASSERT_NE(rp_side, nullptr);
  EXPECT_LT(rp_side->reaction_point().rc_bps(), 10e9);
  EXPECT_GT(rp_side->reaction_point().counters().rate_decreases, 0u);
  EXPECT_GT(n.a.qp->counters().get(rdma::Counter::CnpReceived), 0u);
  EXPECT_EQ(n.a.qp->counters().get(rdma::Counter::CnpIgnored), 0u);
  EXPECT_EQ(n.b.qp->counters().get(rdma::Counter::CnpSent), n.b_cnp_times.size());
  // The notification point sends at most one CNP per 50 us for the QP.
  for (std::size_t i = 1; i < n.b_cnp_times.size(); ++i) EXPECT_GE(n.b_cnp_times[i] - n.b_cnp_times[i - 1], 50 * kMicro);
  EXPECT_GT(n.b.qp->counters().get(rdma::Counter::EcnCeReceived), 0u);
}

TEST(Congestion, PacerHoldsTheSenderToItsRateAfterACut) {
  LinkFaults mark_all;
  mark_all.ce_mark = 1.0;
  Net n(mark_all);
  n.write(1 << 20, 2);
  const double rc = n.a.qp->congestion()->reaction_point().rc_bps();
  ASSERT_LT(rc, 10e9);
  // Departures of the last full-size packets are spaced by at least their link time at Rc.
  const auto& t = n.a_data_times;
  ASSERT_GT(t.size(), 100u);
  const std::size_t k = t.size() - 50;
  const double span_ns = static_cast<double>(t.back() - t[k]);
  const double bits = 49.0 * cc::link_bytes(4096 + 58) * 8;
  EXPECT_GE(bits / span_ns * 1e9, 0.5 * rc);  // not slower than the rate (rc may rise in between)
  EXPECT_LE(bits / span_ns * 1e9, 10e9 * 1.01);
}

TEST(Congestion, DataGoesOutEct0AndNoCnpWithoutCe) {
  Net n(LinkFaults{});
  n.write(1 << 20, 2);
  EXPECT_TRUE(n.b_cnp_times.empty());
  EXPECT_EQ(n.a.qp->congestion()->reaction_point().rc_bps(), 10e9);
}

// A CNP from b to a's QP, as b's notification point would send it.
std::vector<std::byte> cnp_to(const Endpoint& sender, const Endpoint& receiver) {
  const rdma::PathConfig& to = sender.engine->config().path;
  const rdma::PathConfig& from = receiver.engine->config().path;
  cc::CnpEndpoints ep;
  ep.src4 = from.local.ip.v4;
  ep.dst4 = to.local.ip.v4;
  FrameSpec spec = cc::cnp_frame_spec(ep, sender.qp->qpn(), {});
  spec.with_ethernet = true;
  spec.eth.src = from.local.mac;
  spec.eth.dst = to.local.mac;
  std::vector<std::byte> frame(128);
  const FrameLayout l = build_frame(spec, {}, MutableByteSpan{frame.data(), frame.size()}, CrcBackend::Isal);
  EXPECT_TRUE(l.ok());
  frame.resize(l.length);
  return frame;
}

// Cut to the 1 Mb/s floor, a QP waits about 33 ms for the credit of its next 4 KB frame. When the
// increase timer raises the rate, that wait must shrink with it: the QP sleeps until its next
// frame may leave at the current rate, not at the rate of the moment it was held back.
TEST(Congestion, QpHeldByThePacerWakesEarlierWhenTheIncreaseTimerRaisesItsRate) {
  Net n(LinkFaults{});
  static std::vector<std::byte> src(4 << 20), dst(4 << 20);
  auto* sm = reg(*n.a.engine, n.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*n.b.engine, n.b.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge g = sge(src.data(), static_cast<std::uint32_t>(src.size()), sm);
  ASSERT_EQ(post(n.a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  n.net.run_until([&] { return n.a_data_times.size() >= 10; }, kMilli);

  // 14 CNPs in a row halve Rc 14 times (alpha stays 1): 10 Gb/s / 2^14 is below the floor.
  const std::vector<std::byte> cnp = cnp_to(n.a, n.b);
  for (int i = 0; i < 14; ++i) n.a.engine->receive(cnp, n.net.now());
  const cc::ReactionPoint& rp = n.a.qp->congestion()->reaction_point();
  ASSERT_EQ(rp.rc_bps(), 1e6);
  const Nanos cut = n.net.now();
  // What the pacer's burst allowance still lets through goes now; then the QP is held back.
  n.net.run_until([] { return false; }, cut + 10 * kMicro);
  const std::size_t held = n.a_data_times.size();

  // FR climbs back to Rt (2 Mb/s) in 5 x 55 us, then AI adds 40 Mb/s to Rt every 55 us: the
  // frame's debt is paid about 0.5 ms after the cut (at Rc near 0.12 Gb/s). A QP that kept the
  // wake time of the 1-2 Mb/s moment slept 13 ms, until Rc was back above 9 Gb/s.
  ASSERT_TRUE(n.net.run_until([&] { return n.a_data_times.size() > held; }, cut + 100 * kMilli));
  EXPECT_LT(n.a_data_times[held] - cut, kMilli) << "Rc now " << rp.rc_bps() / 1e9 << " Gb/s";
  EXPECT_GT(rp.counters().increases_additive, 0u);
}

TEST(Congestion, CnpForAQpWithoutReactionPointIsCountedAsIgnored) {
  LinkFaults mark_all;
  mark_all.ce_mark = 1.0;
  SimNetwork net{12};
  net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});               // no DCQCN
  net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cc_config(10e9));  // sends CNPs
  net.connect("a", "b", mark_all, {});
  QpOptions o;
  Endpoint a = make_endpoint(net.host("a"), o), b = make_endpoint(net.host("b"), o);
  connect_pair(a, b, o);
  std::vector<std::byte> src(4096), dst(4096);
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*b.engine, b.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge g = sge(src.data(), 4096, sm);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  net.run_idle(kSecond);
  EXPECT_EQ(drain(a).size(), 1u);
  EXPECT_GT(a.qp->counters().get(rdma::Counter::CnpIgnored), 0u);
}

}  // namespace
}  // namespace roce::test::congestion_test
