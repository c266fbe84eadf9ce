// A worker hands the port at most one burst per iteration, as it takes at most one: a READ of
// several bursts of packets must not land in the peer's queue all at once, where it would wait
// long enough to leave the cache before the peer reads it.
#include <gtest/gtest.h>

#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::worker_tx_burst_test {
namespace {

TEST(WorkerTxBurst, ALongReadIsAnsweredOneBurstPerIteration) {
  auto pair = DataplanePair::create("txb", PairOptions{});
  ASSERT_TRUE(pair);
  const QpOptions o;  // MTU 1024
  Endpoint a = make_endpoint(pair->a->worker(0).engine(), o);
  Endpoint b = make_endpoint(pair->b->worker(0).engine(), o);
  connect_pair(a, b, o);
  constexpr std::uint32_t kPackets = 3 * dp::kBurst + 4;
  std::vector<std::byte> local(kPackets * 1024, std::byte{0}), remote(kPackets * 1024);
  for (std::size_t i = 0; i < remote.size(); ++i) remote[i] = static_cast<std::byte>(i * 7 + 1);
  const rdma::MemoryRegion* local_mr = reg(*a.engine, a.pd, local, IBV_ACCESS_LOCAL_WRITE);
  const rdma::MemoryRegion* remote_mr = reg(*b.engine, b.pd, remote, IBV_ACCESS_REMOTE_READ);
  ibv_sge g = sge(local.data(), static_cast<std::uint32_t>(local.size()), local_mr);
  ASSERT_EQ(post(a, IBV_WR_RDMA_READ, 1, &g, 1, reinterpret_cast<std::uint64_t>(remote.data()), remote_mr->rkey()), 0);

  dp::Worker& requester = pair->a->worker(0);
  dp::Worker& responder = pair->b->worker(0);
  const std::uint64_t rx0 = responder.stats().rx_packets, tx0 = responder.stats().tx_packets;  // ARP
  requester.poll(pair->a->now());
  requester.flush();
  responder.poll(pair->b->now());  // takes the READ request, answers the first burst
  EXPECT_EQ(responder.stats().rx_packets - rx0, 1u);
  EXPECT_EQ(responder.stats().tx_packets - tx0, dp::kBurst);
  responder.poll(pair->b->now());
  EXPECT_EQ(responder.stats().tx_packets - tx0, 2 * dp::kBurst);

  std::vector<ibv_wc> wcs;
  ASSERT_TRUE(pair->step_until([&] {
    auto got = drain(a);
    wcs.insert(wcs.end(), got.begin(), got.end());
    return !wcs.empty();
  }));
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  EXPECT_EQ(responder.stats().tx_packets - tx0, kPackets);
  EXPECT_EQ(local, remote);
  pair->expect_no_mbuf_leak();
}

}  // namespace
}  // namespace roce::test::worker_tx_burst_test
