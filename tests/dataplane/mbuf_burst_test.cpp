// free_burst (dataplane/mbuf_burst.hpp): a plain burst goes back to its pool in one put; a burst
// with any mbuf that is not plain is freed as rte_pktmbuf_free_bulk frees it (segments, other
// references, other pools, attached clones), and either way every pool gets back what it lent.
#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dataplane/mbuf_burst.hpp"
#include "tests/dataplane/clocked_write_pair.hpp"

namespace roce::test::mbuf_burst_test {
namespace {

// Counted per stem: a pair's ring names are near DPDK's 29 characters, so the fixture's pools
// (two a test) must not lengthen them as tests are added.
std::string fresh(const std::string& stem) {
  static std::map<std::string, int> n;
  return stem + std::to_string(n[stem]++);
}

class MbufBurst : public ::testing::Test {
 protected:
  void SetUp() override {
    for (rte_mempool*& p : pools_) {
      p = rte_pktmbuf_pool_create(fresh("mbb_pool").c_str(), 127, 32, 0, 2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
      ASSERT_NE(p, nullptr) << rte_strerror(rte_errno);
    }
  }
  void TearDown() override {
    for (rte_mempool* p : pools_) {
      EXPECT_EQ(rte_mempool_avail_count(p), 127u) << "a pool did not get back every mbuf it lent";
      rte_mempool_free(p);
    }
  }
  std::vector<rte_mbuf*> take(unsigned n, unsigned pool = 0) {
    std::vector<rte_mbuf*> out(n);
    EXPECT_EQ(rte_pktmbuf_alloc_bulk(pools_[pool], out.data(), n), 0);
    for (rte_mbuf* m : out) rte_pktmbuf_append(m, 64);
    return out;
  }
  std::array<rte_mempool*, 2> pools_{};
};

TEST_F(MbufBurst, AFreshMbufIsPlainAndEachDifferenceIsNot) {
  std::vector<rte_mbuf*> m = take(5);
  for (rte_mbuf* x : m) EXPECT_TRUE(dp::plain_mbuf_of(x, pools_[0]));
  EXPECT_FALSE(dp::plain_mbuf_of(m[0], pools_[1])) << "another pool";
  rte_mbuf_refcnt_update(m[1], 1);
  EXPECT_FALSE(dp::plain_mbuf_of(m[1], pools_[0])) << "another reference";
  rte_pktmbuf_chain(m[2], m[3]);
  EXPECT_FALSE(dp::plain_mbuf_of(m[2], pools_[0])) << "a chain's head";
  rte_mbuf* clone = rte_pktmbuf_alloc(pools_[0]);
  rte_pktmbuf_attach(clone, m[4]);
  EXPECT_FALSE(dp::plain_mbuf_of(clone, pools_[0])) << "an indirect mbuf";
  m[4]->nb_segs = 2;  // inconsistent with a null `next`: still not handed over as it is
  EXPECT_FALSE(dp::plain_mbuf_of(m[4], pools_[0])) << "nb_segs 2";
  m[4]->nb_segs = 1;
  rte_pktmbuf_free(clone);
  rte_pktmbuf_free(m[4]);
  rte_pktmbuf_free(m[2]);  // and m[3], its tail
  rte_pktmbuf_free(m[1]);
  rte_pktmbuf_free(m[1]);
  rte_pktmbuf_free(m[0]);
}

// Worker::keep_in_stash resets a received mbuf with reset_plain, which leaves out what the plain
// test proved (`next`, nb_segs, the EXTERNAL flag): on an mbuf that passed it, every byte of the
// header ends as rte_pktmbuf_reset leaves it, whatever the frame left in the other fields.
TEST_F(MbufBurst, ResetPlainLeavesAPlainMbufAsRtePktmbufResetDoes) {
  std::vector<rte_mbuf*> m = take(3);
  for (unsigned i = 0; i < m.size(); ++i) {
    rte_mbuf* x = m[i];
    x->data_off = static_cast<std::uint16_t>(7 + i);  // an RX queue's or a prepend's headroom
    x->data_len = 1234;
    x->pkt_len = 1234;
    x->port = 3;
    x->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP;
    x->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_VLAN;
    x->vlan_tci = 0x123;
    x->vlan_tci_outer = 0x456;
    x->tx_offload = 0x0102030405060708ull + i;
    x->hash.rss = 0xabcdef;
    ASSERT_TRUE(dp::plain_mbuf_of(x, pools_[0])) << "the fields above are not what the plain test reads";
    alignas(RTE_CACHE_LINE_SIZE) rte_mbuf want;
    std::memcpy(&want, x, sizeof want);
    rte_pktmbuf_reset(&want);
    dp::reset_plain(x);
    EXPECT_EQ(std::memcmp(&want, x, sizeof want), 0) << "mbuf " << i << " differs from rte_pktmbuf_reset's";
    EXPECT_EQ(x->data_off, RTE_PKTMBUF_HEADROOM);
    EXPECT_TRUE(dp::plain_mbuf_of(x, pools_[0]));
  }
  dp::free_burst(m.data(), static_cast<unsigned>(m.size()));
}

TEST_F(MbufBurst, APlainBurstGoesBackWholeAndComesOutPlain) {
  std::vector<rte_mbuf*> m = take(32);
  dp::free_burst(m.data(), 32);
  EXPECT_EQ(rte_mempool_avail_count(pools_[0]), 127u);
  // Taken raw (no reset), every mbuf of the pool keeps the pool's invariant.
  std::vector<rte_mbuf*> again;
  for (unsigned i = 0; i < 127; ++i) {
    again.push_back(rte_mbuf_raw_alloc(pools_[0]));
    ASSERT_NE(again.back(), nullptr);
    EXPECT_TRUE(dp::plain_mbuf_of(again.back(), pools_[0]));
  }
  for (rte_mbuf* x : again) rte_mbuf_raw_free(x);
  dp::free_burst(m.data(), 0);
}

// Each burst has one mbuf that is not plain, at its front, middle or end.
TEST_F(MbufBurst, ABurstWithOneMbufNotPlainFreesEveryMbufAsTheLibraryDoes) {
  for (unsigned at : {0u, 3u, 7u}) {
    {  // another reference: only this burst's is dropped
      std::vector<rte_mbuf*> m = take(8);
      rte_mbuf* held = m[at];
      rte_mbuf_refcnt_update(held, 1);
      dp::free_burst(m.data(), 8);
      EXPECT_EQ(rte_mbuf_refcnt_read(held), 1u) << at;
      EXPECT_EQ(rte_mempool_avail_count(pools_[0]), 126u) << at;
      rte_pktmbuf_free(held);
    }
    {  // a chain of two: both segments go back
      std::vector<rte_mbuf*> m = take(8);
      rte_mbuf* tail = rte_pktmbuf_alloc(pools_[1]);
      ASSERT_EQ(rte_pktmbuf_chain(m[at], tail), 0);
      dp::free_burst(m.data(), 8);
    }
    {  // another pool's mbuf among them
      std::vector<rte_mbuf*> m = take(8);
      rte_pktmbuf_free(m[at]);
      m[at] = rte_pktmbuf_alloc(pools_[1]);
      dp::free_burst(m.data(), 8);
    }
    {  // a clone attached to a direct mbuf the test still holds
      std::vector<rte_mbuf*> m = take(8);
      rte_mbuf* direct = take(1, 1)[0];
      rte_pktmbuf_attach(m[at], direct);
      EXPECT_EQ(rte_mbuf_refcnt_read(direct), 2u);
      dp::free_burst(m.data(), 8);
      EXPECT_EQ(rte_mbuf_refcnt_read(direct), 1u) << "the clone was not detached";
      rte_pktmbuf_free(direct);
    }
  }
}

// The worker's burst path frees with free_burst: a burst of WRITEs in which an RX callback kept a
// reference to one mbuf. The worker drops only its own reference; the frame the callback holds
// is intact; every WRITE lands; nothing leaks (the pair's teardown counts both pools).
struct Held {
  rte_mbuf* m = nullptr;
  unsigned burst = 0;
  unsigned at = 0;
  std::uint64_t bytes = 0;  // the burst's pkt_len, summed
};

std::uint16_t hold_one(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  auto* h = static_cast<Held*>(arg);
  if (h->m == nullptr && n > h->at) {
    h->m = pkts[h->at];
    h->burst = n;
    for (std::uint16_t i = 0; i < n; ++i) h->bytes += pkts[i]->pkt_len;
    rte_mbuf_refcnt_update(h->m, 1);
  }
  return n;
}

class WorkerBurstFree : public ClockedWritePair, public ::testing::WithParamInterface<unsigned> {
 protected:
  void SetUp() override {
    PairOptions o;
    ClockedWritePair::start(fresh("mbbw"), o, std::byte{9});
  }
};

TEST_P(WorkerBurstFree, AnMbufHeldElsewhereOutlivesTheBurstAndTheRestGoBack) {
  pair_->step_until([] { return false; }, 20);  // whatever ARP left in flight is read
  Held held{nullptr, 0, GetParam()};
  const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(pair_->ports.b, 0, hold_one, &held);
  ASSERT_NE(cb, nullptr);
  constexpr unsigned kWrites = 8;
  for (unsigned i = 0; i < kWrites; ++i) post_write(i + 1);
  poll_a();  // the WRITEs are on b's ring now, in one burst
  const dp::WorkerStats before = pair_->b->worker(0).stats();
  pair_->b->poll_once();
  ASSERT_NE(held.m, nullptr);
  EXPECT_EQ(held.burst, kWrites) << "not one burst: the worker's burst path was not taken";
  // The burst's frames and bytes, counted once after its loop (Worker::receive).
  const dp::WorkerStats after = pair_->b->worker(0).stats();
  EXPECT_EQ(after.rx_packets - before.rx_packets, kWrites);
  EXPECT_EQ(after.rx_bytes - before.rx_bytes, held.bytes);
  EXPECT_EQ(rte_mbuf_refcnt_read(held.m), 1u) << "the worker dropped more than its own reference";
  EXPECT_EQ(held.m->nb_segs, 1u);
  EXPECT_GT(held.m->data_len, 256u) << "the held frame's mbuf was reused";
  rte_pktmbuf_free(held.m);
  ASSERT_NO_FATAL_FAILURE(complete(kWrites));
  EXPECT_EQ(dst_, src_);
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cb);
}

INSTANTIATE_TEST_SUITE_P(HeldAt, WorkerBurstFree, ::testing::Values(0u, 3u, 7u));

}  // namespace
}  // namespace roce::test::mbuf_burst_test
