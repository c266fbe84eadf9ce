// TimerHeap: the earliest of many owners' deadlines, which Engine::timers_pending compares with
// the time every worker iteration. set() to the same deadline, or kNever for an absent owner,
// changes nothing; otherwise it moves, inserts or removes.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "lib/rdma/timer_heap.hpp"

namespace roce::test::timer_heap_test {
namespace {

using rdma::TimerHeap;

TEST(TimerHeap, SetsMovesAndRemovesDeadlines) {
  TimerHeap h(4);
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.earliest(), kNever);
  h.set(2, kNever);  // absent stays absent
  EXPECT_TRUE(h.empty());
  h.set(2, 50);
  h.set(1, 70);
  h.set(3, 60);
  EXPECT_EQ(h.earliest(), 50);
  EXPECT_EQ(h.earliest_owner(), 2u);
  h.set(2, 50);  // unchanged
  EXPECT_EQ(h.earliest_owner(), 2u);
  h.set(2, 80);  // later: another owner comes first
  EXPECT_EQ(h.earliest(), 60);
  EXPECT_EQ(h.earliest_owner(), 3u);
  h.set(1, 10);  // earlier
  EXPECT_EQ(h.earliest_owner(), 1u);
  h.set(1, kNever);  // removed
  EXPECT_EQ(h.deadline_of(1), kNever);
  EXPECT_EQ(h.earliest_owner(), 3u);
  EXPECT_EQ(h.deadline_of(2), 80);
  h.set(3, kNever);
  h.set(2, kNever);
  EXPECT_TRUE(h.empty());
}

// set(kNever) of an owner without a deadline returns before the heap (TimerHeap::set's test of
// the position): every other owner keeps its deadline and the earliest stays, at any heap size.
TEST(TimerHeap, SettingAnAbsentOwnerToNeverLeavesTheHeapAsItWas) {
  constexpr std::uint32_t kOwners = 9;
  TimerHeap h(kOwners);
  for (std::uint32_t n = 0; n < kOwners; ++n) {
    // Owners 0 .. n-1 hold deadlines (in a scrambled order), owner n none.
    for (std::uint32_t o = 0; o < n; ++o) h.set(o, static_cast<Nanos>(100 + (o * 5) % 7 * 10 + o));
    for (std::uint32_t o = n; o < kOwners; ++o) h.set(o, kNever);
    const Nanos earliest = h.earliest();
    const std::uint32_t first = n > 0 ? h.earliest_owner() : 0;
    h.set(n, kNever);
    h.set(n, kNever);
    EXPECT_EQ(h.empty(), n == 0);
    EXPECT_EQ(h.earliest(), earliest);
    if (n > 0) {
      EXPECT_EQ(h.earliest_owner(), first);
    }
    for (std::uint32_t o = 0; o < kOwners; ++o)
      EXPECT_EQ(h.deadline_of(o), o < n ? static_cast<Nanos>(100 + (o * 5) % 7 * 10 + o) : kNever) << "n " << n << " owner " << o;
    // ... and the heap still orders what comes next: the absent owner in first, then out again.
    h.set(n, 1);
    EXPECT_EQ(h.earliest_owner(), n);
    h.set(n, kNever);
    EXPECT_EQ(h.earliest(), earliest);
  }
}

// Against a plain array: after every set, the earliest is the minimum of what was set.
TEST(TimerHeap, EarliestIsTheMinimumAfterRandomSets) {
  constexpr std::uint32_t kOwners = 37;
  TimerHeap h(kOwners);
  std::vector<Nanos> want(kOwners, kNever);
  std::mt19937_64 rng(26);
  for (int i = 0; i < 20000; ++i) {
    const auto owner = static_cast<std::uint32_t>(rng() % kOwners);
    const Nanos d = rng() % 4 == 0 ? kNever : rng() % 3 == 0 ? want[owner] : static_cast<Nanos>(rng() % 1000);
    h.set(owner, d);
    want[owner] = d;
    Nanos min = kNever;
    for (const Nanos w : want) min = std::min(min, w);
    ASSERT_EQ(h.earliest(), min) << "after set " << i;
    ASSERT_EQ(h.deadline_of(owner), d);
    if (min != kNever) {
      ASSERT_EQ(want[h.earliest_owner()], min);
    }
  }
}

// The heap's order and positions after random sets and removes (Engine::refresh's inline set:
// insert, move, remove_at, the last entry removed alone): taking the earliest and removing it
// over and over gives every owner with a deadline once, in deadline order, with the deadline set.
TEST(TimerHeap, OwnersComeOutInDeadlineOrderAfterRandomSetsAndRemoves) {
  constexpr std::uint32_t kOwners = 23;
  std::mt19937_64 rng(65);
  for (int round = 0; round < 300; ++round) {
    TimerHeap h(kOwners);
    std::vector<Nanos> want(kOwners, kNever);
    const int ops = static_cast<int>(rng() % 200);
    for (int i = 0; i < ops; ++i) {
      const auto owner = static_cast<std::uint32_t>(rng() % kOwners);
      const auto what = rng() % 8;
      if (what == 0) {
        h.remove(owner);
        want[owner] = kNever;
        continue;
      }
      // Ties, an unchanged deadline, kNever, earlier and later moves.
      const Nanos d = what == 1 ? kNever : what == 2 ? want[owner] : static_cast<Nanos>(rng() % 50);
      h.set(owner, d);
      want[owner] = d;
    }
    std::vector<bool> seen(kOwners, false);
    Nanos prev = 0;
    while (!h.empty()) {
      const std::uint32_t o = h.earliest_owner();
      ASSERT_LT(o, kOwners);
      ASSERT_FALSE(seen[o]) << "round " << round << " owner " << o << " twice";
      ASSERT_EQ(h.earliest(), want[o]) << "round " << round;
      ASSERT_EQ(h.deadline_of(o), want[o]);
      ASSERT_GE(h.earliest(), prev) << "round " << round;
      prev = h.earliest();
      seen[o] = true;
      h.set(o, kNever);
      ASSERT_EQ(h.deadline_of(o), kNever);
    }
    for (std::uint32_t o = 0; o < kOwners; ++o) ASSERT_EQ(seen[o], want[o] != kNever) << "round " << round << " owner " << o;
  }
}

// set(owner, kNever) on the heap's last entry pops it in place (a QP alone in the heap: every
// ACK at queue depth 1; docs/perf-changes.md section 73): the owner is absent afterwards, so it
// can be set again, and the entries before it keep their order.
TEST(TimerHeap, TheLastEntrySetToNeverIsGoneAndItsOwnerCanComeBack) {
  TimerHeap h(4);
  h.set(0, 40);
  h.set(0, kNever);
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.earliest(), kNever);
  EXPECT_EQ(h.deadline_of(0), kNever);
  h.set(0, kNever);  // absent: nothing to do
  EXPECT_TRUE(h.empty());
  h.set(0, 70);
  EXPECT_EQ(h.earliest(), 70);
  EXPECT_EQ(h.earliest_owner(), 0u);
  // 10, 20, 30 in order: owner 3's entry is the last one; then owner 2's is.
  h.set(1, 10);
  h.set(2, 20);
  h.set(3, 30);
  h.set(0, kNever);  // the first entry (the earliest is owner 1's, at the root)
  h.set(3, kNever);
  EXPECT_EQ(h.deadline_of(3), kNever);
  h.set(2, kNever);
  EXPECT_EQ(h.deadline_of(2), kNever);
  EXPECT_EQ(h.earliest(), 10);
  EXPECT_EQ(h.earliest_owner(), 1u);
  h.set(3, 5);  // back, and first
  h.set(2, 15);
  EXPECT_EQ(h.earliest_owner(), 3u);
  h.set(3, kNever);
  EXPECT_EQ(h.earliest_owner(), 1u);
  h.set(1, kNever);
  EXPECT_EQ(h.earliest_owner(), 2u);
  EXPECT_EQ(h.earliest(), 15);
  h.set(2, kNever);
  EXPECT_TRUE(h.empty());
}

}  // namespace
}  // namespace roce::test::timer_heap_test
