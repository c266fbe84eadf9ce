// Worker::recycle: a received mbuf the engine is done with becomes the stash's next fresh mbuf
// when it is a plain mbuf of the worker's pool (one segment, direct, refcnt 1) and the stash has
// room; any other goes back as before. At queue depth 1 over one shared pool, a WRITE and its ACK
// then travel in one mbuf and the pool is not touched; a frame someone else still holds, an
// indirect mbuf and another pool's mbuf are never kept. The pair's teardown counts the pools.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <set>
#include <string>
#include <vector>

#include "tests/dataplane/clocked_write_pair.hpp"

namespace roce::test::mbuf_recycle_test {
namespace {

std::string fresh(const std::string& stem) {
  static int n = 0;
  return stem + std::to_string(n++);
}

// What an RX callback saw: every frame's mbuf and pool, and (when asked) one reference kept to
// the frame at `hold_at` of the first burst long enough.
struct Seen {
  std::vector<const rte_mbuf*> mbufs;
  std::vector<const rte_mempool*> pools;
  bool hold = false;
  unsigned hold_at = 0;
  rte_mbuf* held = nullptr;
  std::uint16_t held_len = 0;
  unsigned held_burst = 0;
};

std::uint16_t see(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  auto* s = static_cast<Seen*>(arg);
  for (unsigned i = 0; i < n; ++i) {
    s->mbufs.push_back(pkts[i]);
    s->pools.push_back(pkts[i]->pool);
  }
  if (s->hold && s->held == nullptr && n > s->hold_at) {
    s->held = pkts[s->hold_at];
    s->held_len = s->held->data_len;
    s->held_burst = n;
    rte_mbuf_refcnt_update(s->held, 1);
  }
  return n;
}

// Each frame replaced by an indirect clone from the same pool (the direct mbuf then held by the
// clone alone): refcnt 1, one segment, the pool's, and still not a plain mbuf.
std::uint16_t clone_each(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  auto* clones = static_cast<unsigned*>(arg);
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* c = rte_pktmbuf_clone(pkts[i], pkts[i]->pool);
    if (c == nullptr) continue;  // the pool is far from empty here; the test counts the clones
    rte_pktmbuf_free(pkts[i]);
    pkts[i] = c;
    ++*clones;
  }
  return n;
}

// Frames whose data is not in their own mbuf's buffer (an indirect mbuf, or one kept with its
// INDIRECT flag cleared by a reset: its buffer still another mbuf's).
std::uint16_t count_borrowed(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  for (unsigned i = 0; i < n; ++i)
    if (pkts[i]->buf_addr != rte_mbuf_to_baddr(pkts[i])) ++*static_cast<unsigned*>(arg);
  return n;
}

class WorkerRecycle : public ClockedWritePair {
 protected:
  void start_pair(bool shared) {
    PairOptions o;
    o.shared_pool = shared;
    ClockedWritePair::start(fresh("mbrc"), o, std::byte{7});
    pair_->step_until([] { return false; }, 20);  // whatever ARP left in flight is read
  }
  // Round trips at queue depth 1, each WRITE completed before the next.
  void round_trips(unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      post_write(i + 1);
      complete();
    }
  }
  const rte_eth_rxtx_callback* watch(std::uint16_t port, rte_rx_callback_fn fn, void* arg) {
    const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(port, 0, fn, arg);
    EXPECT_NE(cb, nullptr);
    return cb;
  }
};

TEST_F(WorkerRecycle, AtDepthOneAWriteAndItsAckTravelInOneMbufAndThePoolIsNotTouched) {
  start_pair(true);
  round_trips(3);  // each side's stash holds the mbuf its last frame came in
  Seen at_a, at_b;
  const auto* ca = watch(pair_->ports.a, see, &at_a);
  const auto* cb = watch(pair_->ports.b, see, &at_b);
  const unsigned avail = rte_mempool_avail_count(pair_->pool);
  constexpr unsigned kTrips = 100;  // more than a stash refill (32) on each side without recycling
  round_trips(kTrips);
  ASSERT_EQ(at_b.mbufs.size(), kTrips);
  ASSERT_EQ(at_a.mbufs.size(), kTrips);
  EXPECT_EQ(rte_mempool_avail_count(pair_->pool), avail) << "mbufs went to or came from the pool";
  std::set<const rte_mbuf*> used(at_b.mbufs.begin(), at_b.mbufs.end());
  used.insert(at_a.mbufs.begin(), at_a.mbufs.end());
  EXPECT_EQ(used.size(), 1u) << "each WRITE and ACK in the mbuf the last frame came in";
  EXPECT_EQ(dst_, src_);
  rte_eth_remove_rx_callback(pair_->ports.a, 0, ca);
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cb);
}

TEST_F(WorkerRecycle, AFrameAnRxCallbackStillHoldsIsNotReused) {
  start_pair(true);
  round_trips(2);
  Seen at_a, at_b;
  at_b.hold = true;
  const auto* ca = watch(pair_->ports.a, see, &at_a);
  const auto* cb = watch(pair_->ports.b, see, &at_b);
  round_trips(5);
  ASSERT_NE(at_b.held, nullptr);
  EXPECT_EQ(rte_mbuf_refcnt_read(at_b.held), 1u) << "the worker dropped more than its own reference";
  EXPECT_EQ(at_b.held->data_len, at_b.held_len) << "the held frame's mbuf was reused";
  for (const rte_mbuf* m : at_a.mbufs) EXPECT_NE(m, at_b.held) << "an ACK went out in the held mbuf";
  for (std::size_t i = 1; i < at_b.mbufs.size(); ++i) EXPECT_NE(at_b.mbufs[i], at_b.held) << "a WRITE went out in it";
  rte_pktmbuf_free(at_b.held);
  rte_eth_remove_rx_callback(pair_->ports.a, 0, ca);
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cb);
}

// The burst path (recycle_burst): 8 WRITEs in one burst, one of them held at the front, middle
// or end: none of the burst is kept (the held one is not plain), all are freed as before.
class WorkerRecycleBurst : public WorkerRecycle, public ::testing::WithParamInterface<unsigned> {};

TEST_P(WorkerRecycleBurst, ABurstWithAHeldFrameKeepsNoneOfIt) {
  start_pair(true);
  Seen at_a, at_b;
  at_b.hold = true;
  at_b.hold_at = GetParam();
  const auto* ca = watch(pair_->ports.a, see, &at_a);
  const auto* cb = watch(pair_->ports.b, see, &at_b);
  constexpr unsigned kWrites = 8;
  for (unsigned i = 0; i < kWrites; ++i) post_write(i + 1);
  poll_a();  // the WRITEs are on b's ring now, in one burst
  pair_->b->poll_once();
  ASSERT_NE(at_b.held, nullptr);
  EXPECT_EQ(at_b.held_burst, kWrites) << "not one burst: the worker's burst path was not taken";
  const std::set<const rte_mbuf*> burst(at_b.mbufs.begin(), at_b.mbufs.end());
  ASSERT_NO_FATAL_FAILURE(complete(kWrites));
  EXPECT_EQ(rte_mbuf_refcnt_read(at_b.held), 1u);
  EXPECT_EQ(at_b.held->data_len, at_b.held_len) << "the held frame's mbuf was reused";
  for (const rte_mbuf* m : at_a.mbufs) EXPECT_EQ(burst.count(m), 0u) << "an ACK went out in an mbuf of the burst";
  rte_pktmbuf_free(at_b.held);
  EXPECT_EQ(dst_, src_);
  rte_eth_remove_rx_callback(pair_->ports.a, 0, ca);
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cb);
}

INSTANTIATE_TEST_SUITE_P(HeldAt, WorkerRecycleBurst, ::testing::Values(0u, 3u, 7u));

TEST_F(WorkerRecycle, AnIndirectMbufOfThePoolIsFreedNotKept) {
  start_pair(true);
  unsigned clones = 0, borrowed = 0;
  const auto* cc = watch(pair_->ports.b, clone_each, &clones);
  const auto* ca = watch(pair_->ports.a, count_borrowed, &borrowed);
  round_trips(40);
  EXPECT_EQ(clones, 40u) << "the WRITEs were not all cloned";
  EXPECT_EQ(borrowed, 0u) << "an ACK went out in a buffer not its mbuf's own";
  EXPECT_EQ(dst_, src_);
  // Kept, a clone would leave its direct mbuf referenced forever: the teardown's count finds it.
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cc);
  rte_eth_remove_rx_callback(pair_->ports.a, 0, ca);
}

TEST_F(WorkerRecycle, AFrameOfAnotherPoolIsNeverKept) {
  start_pair(false);
  Seen at_a, at_b;
  const auto* ca = watch(pair_->ports.a, see, &at_a);
  const auto* cb = watch(pair_->ports.b, see, &at_b);
  round_trips(50);
  ASSERT_EQ(at_b.pools.size(), 50u);
  for (const rte_mempool* p : at_b.pools) EXPECT_EQ(p, pair_->a->pool()) << "b sent a frame in a's mbuf";
  for (const rte_mempool* p : at_a.pools) EXPECT_EQ(p, pair_->b->pool()) << "a sent a frame in b's mbuf";
  rte_eth_remove_rx_callback(pair_->ports.a, 0, ca);
  rte_eth_remove_rx_callback(pair_->ports.b, 0, cb);
}

}  // namespace
}  // namespace roce::test::mbuf_recycle_test
