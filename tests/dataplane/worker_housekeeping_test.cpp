// The poll's clock checks (docs/perf-changes.md, poll15): the flush and the stats publication
// share one deadline, and the stall test reads the last iteration's time directly. Each must
// still fire exactly when its own rule says: a publication an interval after the last one
// (made by the loop or by hand), a stall only for a gap longer than stall_ns.
#include <gtest/gtest.h>

#include "tests/dataplane/clocked_write_pair.hpp"

namespace roce::test::worker_housekeeping_test {
namespace {

class WorkerHousekeeping : public ClockedWritePair {
 protected:
  void SetUp() override {
    PairOptions o;
    // No flush deadline comes first: the publication's own deadline decides alone when the
    // poll looks at its timers.
    o.tx_flush_ns = kSecond;
    start("hk", o, std::byte{3});
  }
  dp::Worker& a() { return pair_->a->worker(0); }
  std::uint64_t published() const { return pair_->a->worker(0).published_sequence(); }
  // Iterations 100 us apart (no stall) until just before `t`.
  void poll_a_until(Nanos t) {
    while (t - t_ > 100 * kMicro) poll_a(100 * kMicro);
  }
};

TEST_F(WorkerHousekeeping, StatsArePublishedOnceEachIntervalOfThePollsClock) {
  const Nanos interval = a().config().stats_interval_ns;
  poll_a();
  a().publish_stats(t_);
  const Nanos from = t_;
  const std::uint64_t seq = published();
  poll_a_until(from + interval - 1);
  poll_a_at(from + interval - 1);
  EXPECT_EQ(published(), seq) << "published before its interval";
  poll_a_at(from + interval);
  EXPECT_EQ(published(), seq + 1) << "not published at its interval";
  EXPECT_EQ(a().published_stats().taken_at, from + interval);
  poll_a(1);
  EXPECT_EQ(published(), seq + 1) << "published again at once";
  poll_a_until(from + 2 * interval);
  poll_a_at(from + 2 * interval);
  EXPECT_EQ(published(), seq + 2);
}

// By hand (Dataplane::publish_stats, a test): the next publication is an interval after it, also
// when it was stamped earlier than the loop's own last one (another clock reading).
TEST_F(WorkerHousekeeping, APublicationByHandSetsTheNextOne) {
  const Nanos interval = a().config().stats_interval_ns;
  poll_a();
  a().publish_stats(t_);
  const Nanos first = t_;
  poll_a_until(first + interval / 2);
  a().publish_stats(t_);
  const Nanos by_hand = t_;
  std::uint64_t seq = published();
  poll_a_until(first + interval);
  poll_a_at(first + interval);
  EXPECT_EQ(published(), seq) << "an interval after the earlier publication, not after the one by hand";
  poll_a_until(by_hand + interval);
  poll_a_at(by_hand + interval);
  EXPECT_EQ(published(), seq + 1);
  a().publish_stats(t_ - interval / 2);  // stamped half an interval before the loop's last one
  seq = published();
  poll_a_at(t_ + interval / 2);
  EXPECT_EQ(published(), seq + 1) << "an interval after the one stamped earlier";
}

TEST_F(WorkerHousekeeping, AGapIsAStallOnlyPastStallNs) {
  const Nanos stall = a().config().stall_ns;
  poll_a();
  const std::uint64_t stalls = a().stats().stalls;
  poll_a(stall);
  EXPECT_EQ(a().stats().stalls, stalls) << "a gap of exactly stall_ns";
  poll_a(stall + 1);
  EXPECT_EQ(a().stats().stalls, stalls + 1);
  poll_a_at(t_ - 10 * stall);  // the clock stepped back: no gap at all
  EXPECT_EQ(a().stats().stalls, stalls + 1);
  poll_a(stall + 1);
  EXPECT_EQ(a().stats().stalls, stalls + 2);
}

}  // namespace
}  // namespace roce::test::worker_housekeeping_test
