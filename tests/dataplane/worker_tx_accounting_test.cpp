// The worker's transmit side counts a burst once (docs/perf-changes.md section 45, loop14): every
// frame the engine built is counted in tx_packets and tx_bytes when it is queued, exactly once,
// whether the port takes it at once or only after its ring had room again; none is dropped.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "tests/dataplane/clocked_write_pair.hpp"

namespace roce::test::worker_tx_accounting_test {
namespace {

// A 256 B WRITE_ONLY over IPv4: Ethernet 14, IPv4 20, UDP 8, BTH 12, RETH 16, payload, ICRC 4.
constexpr std::uint64_t kWriteFrameBytes = 14 + 20 + 8 + 12 + 16 + 256 + 4;

std::uint64_t port_sent(std::uint16_t port) {
  rte_eth_stats s{};
  EXPECT_EQ(rte_eth_stats_get(port, &s), 0);
  return s.opackets;
}

class WorkerTxAccounting : public ClockedWritePair {
 protected:
  void SetUp() override { start("txa", PairOptions{}, std::byte{0x5a}); }
  const dp::WorkerStats& a_stats() const { return pair_->a->worker(0).stats(); }
};

TEST_F(WorkerTxAccounting, ABurstIsCountedOnceWhetherThePortTookItAtOnceOrLater) {
  constexpr unsigned kWrites = 10, kRoom = 3;
  // b's RX ring full but for kRoom frames (placeholders that b does not read: it is not polled).
  rte_ring* to_b = dp::ring_port_rx_ring(pair_->ports.b, 0);
  ASSERT_NE(to_b, nullptr);
  std::vector<void*> fill(rte_ring_free_count(to_b) - kRoom, nullptr);
  ASSERT_EQ(rte_ring_enqueue_bulk(to_b, fill.data(), static_cast<unsigned>(fill.size()), nullptr), fill.size());
  const std::uint64_t packets0 = a_stats().tx_packets, bytes0 = a_stats().tx_bytes, dropped0 = a_stats().tx_dropped;
  const std::uint64_t port0 = port_sent(pair_->ports.a);
  for (unsigned i = 0; i < kWrites; ++i) post_write(i);
  poll_a();
  const std::uint64_t built = a_stats().tx_packets - packets0;
  ASSERT_GT(built, kRoom) << "the test needs a burst larger than the ring's room";
  EXPECT_EQ(a_stats().tx_bytes - bytes0, built * kWriteFrameBytes);
  EXPECT_EQ(port_sent(pair_->ports.a) - port0, kRoom) << "the port took what its ring had room for";
  EXPECT_EQ(a_stats().tx_dropped, dropped0) << "a refused frame stays pending, it is not dropped";
  // Room again (the placeholders leave, the frames behind them stay): what waited goes, and is
  // not counted a second time.
  ASSERT_EQ(rte_ring_dequeue_bulk(to_b, fill.data(), static_cast<unsigned>(fill.size()), nullptr), fill.size());
  poll_a();
  EXPECT_GE(port_sent(pair_->ports.a) - port0, built) << "the frames held back by the full ring did not go";
  std::vector<ibv_wc> done;
  for (int i = 0; i < 100000 && done.size() < kWrites; ++i) {
    poll_a();
    pair_->b->poll_once();
    for (const ibv_wc& wc : drain(a_)) {
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
      done.push_back(wc);
    }
  }
  ASSERT_EQ(done.size(), kWrites);
  EXPECT_EQ(dst_, src_);
  // Every frame a counted is one its port sent and b received, byte for byte the same total.
  const std::uint64_t sent = a_stats().tx_packets - packets0;
  EXPECT_EQ(port_sent(pair_->ports.a) - port0, sent);
  EXPECT_EQ(a_stats().tx_bytes - bytes0, sent * kWriteFrameBytes) << "only WRITEs of one size were sent";
  EXPECT_EQ(a_stats().tx_dropped, dropped0);
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::SentPkts), sent);
}

}  // namespace
}  // namespace roce::test::worker_tx_accounting_test
