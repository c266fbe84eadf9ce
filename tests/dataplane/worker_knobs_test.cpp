// The two knobs a capture replay needs from the dataplane: QPNs that start where the
// configuration says, and a worker that takes frames from its queue only as fast as asked.
#include <gtest/gtest.h>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::worker_knobs_test {
namespace {

using dp::Dataplane;

// Rings, pools and dataplanes live for the whole process: every test run needs fresh names
// (--gtest_repeat).
std::string fresh(const std::string& stem) {
  static int n = 0;
  return stem + "_" + std::to_string(n++);
}

std::unique_ptr<Dataplane> make_dp(const std::string& name, std::uint16_t port, proto::Ipv4Addr ip, proto::MacAddr mac,
                                   unsigned workers, std::uint32_t qpn_base) {
  dp::DataplaneOptions o;
  o.name = name;
  o.port.name = std::to_string(port);
  o.ip = rdma::IpAddress::ipv4(ip);
  o.mac = mac;
  o.workers = workers;
  o.mode = workers > 1 ? dp::Mode::Pipeline : dp::Mode::RunToCompletion;  // a ring port has one queue
  o.mbufs = 1023;
  o.engine.qpns.base = qpn_base;
  auto d = Dataplane::create(o);
  EXPECT_TRUE(d.ok()) << d.error().message;
  return d.ok() ? std::move(*d) : nullptr;
}

TEST(DataplaneKnobs, QpnsStartAtTheConfiguredBaseAndShardFromThere) {
  auto pair = dp::make_ring_pair(fresh("knobA"), fresh("knobB"));
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  auto d = make_dp(fresh("knob"), pair->a, {10, 0, 1, 1}, {2, 0, 0, 0, 1, 1}, 2, 0x169);
  ASSERT_TRUE(d);
  QpOptions o;
  for (unsigned w = 0; w < 2; ++w) {
    for (unsigned k = 0; k < 2; ++k) {
      Endpoint ep = make_endpoint(d->worker(w).engine(), o);
      EXPECT_EQ(ep.qp->qpn(), 0x169u + w + 2 * k);
      EXPECT_EQ(d->owner_of(ep.qp->qpn()).value_or(dp::kMaxWorkers), w);
    }
  }
}

TEST(DataplaneKnobs, QpnBaseBelowTwoIsRefused) {
  dp::DataplaneOptions o;
  o.engine.qpns.base = 1;
  auto d = Dataplane::create(o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("qpns.base"), std::string::npos) << d.error().message;
}

TEST(DataplaneKnobs, RxBurstZeroHoldsFramesAndOneTakesOneFramePerPoll) {
  auto pair = dp::make_ring_pair(fresh("knobA"), fresh("knobB"));
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  auto a = make_dp(fresh("knob"), pair->a, {10, 0, 2, 1}, {2, 0, 0, 0, 2, 1}, 1, 0x11);
  auto b = make_dp(fresh("knob"), pair->b, {10, 0, 2, 2}, {2, 0, 0, 0, 2, 2}, 1, 0x11);
  ASSERT_TRUE(a && b);
  b->worker(0).set_rx_burst(0);
  for (int i = 0; i < 3; ++i) a->worker(0).request_arp({10, 0, 2, 2});
  a->poll_once();
  a->flush();
  for (int i = 0; i < 10; ++i) b->poll_once();
  EXPECT_EQ(b->worker(0).stats().rx_packets, 0u);
  b->worker(0).set_rx_burst(1);
  for (std::uint64_t want = 1; want <= 3; ++want) {
    b->poll_once();
    EXPECT_EQ(b->worker(0).stats().rx_packets, want);
  }
  b->worker(0).set_rx_burst(1000);
  EXPECT_EQ(b->worker(0).rx_burst(), dp::kBurst);
}

}  // namespace
}  // namespace roce::test::worker_knobs_test
