// dcqcn.md T8(a) and spec section 6: RED marking on dequeue, tail drop, serialisation.
#include <gtest/gtest.h>

#include <cstdint>

#include "lib/cc/congestion_point.hpp"
#include "tests/cc/rel_near.hpp"

namespace roce::cc::congestion_point_test {
namespace {

using proto::Ecn;
const RedParams kT8{5'000, 200'000, 0.01};

TEST(MarkProbability, T8PiecewiseLinearBetweenKminAndKmax) {
  EXPECT_EQ(mark_probability(kT8, 0), 0.0);
  EXPECT_EQ(mark_probability(kT8, 5'000), 0.0);
  EXPECT_REL(mark_probability(kT8, 5'001), 0.01 / 195'000);
  EXPECT_NEAR(mark_probability(kT8, 5'001), 5.128205e-8, 1e-14);
  EXPECT_REL(mark_probability(kT8, 100'000), 0.004871794871794872);
  EXPECT_REL(mark_probability(kT8, 102'500), 0.005);
  EXPECT_REL(mark_probability(kT8, 200'000), 0.01);
  EXPECT_EQ(mark_probability(kT8, 200'001), 1.0);
  EXPECT_EQ(mark_probability(kT8, 1'000'000), 1.0);
}

// A queue held at a fixed occupancy: every departure is replaced by an arrival, so each
// dequeue sees the same Q after removal.
double marked_fraction(std::uint64_t q_after, int n, std::uint64_t seed, Ecn ecn = Ecn::Ect0) {
  CpParams p;
  p.red = kT8;
  p.capacity_bytes = 10'000'000;
  p.capacity_packets = 8192;
  p.seed = seed;
  CongestionPoint<int> cp(p);
  constexpr std::uint32_t kPkt = 500;
  Nanos now = 0;
  for (std::uint64_t b = 0; b < q_after + kPkt; b += kPkt) cp.enqueue(now, 0, kPkt, ecn);
  int marked = 0;
  for (int i = 0; i < n; ++i) {
    now = cp.next_dequeue_time();
    const auto d = cp.dequeue(now);
    EXPECT_EQ(d->queue_bytes_after, q_after);
    marked += d->marked;
    cp.enqueue(now, i, kPkt, ecn);
  }
  return static_cast<double>(marked) / n;
}

TEST(CongestionPoint, T8SeededMarkingFrequencyFollowsTheProbability) {
  constexpr int kN = 200'000;
  for (std::uint64_t q : {100'000ull, 150'000ull, 200'000ull}) {
    const double p = mark_probability(kT8, q);
    const double sigma = std::sqrt(p * (1 - p) / kN);
    EXPECT_NEAR(marked_fraction(q, kN, 7), p, 5 * sigma) << "Q=" << q;
  }
  EXPECT_EQ(marked_fraction(5'000, 10'000, 7), 0.0);
  EXPECT_EQ(marked_fraction(200'500, 10'000, 7), 1.0);
  EXPECT_EQ(marked_fraction(150'000, 10'000, 11), marked_fraction(150'000, 10'000, 11)) << "same seed, same marks";
}

TEST(CongestionPoint, OnlyEctPacketsAreMarked) {
  EXPECT_EQ(marked_fraction(300'000, 1000, 1, Ecn::NotEct), 0.0);
  EXPECT_EQ(marked_fraction(300'000, 1000, 1, Ecn::Ect1), 1.0);
  EXPECT_EQ(marked_fraction(300'000, 1000, 1, Ecn::Ce), 0.0) << "already CE: this queue did not mark it";
}

TEST(CongestionPoint, OccupancyIsMeasuredAfterRemovingTheDepartingPacket) {
  CpParams p;
  p.red = {5'000, 10'000, 1.0};
  CongestionPoint<int> cp(p);
  cp.enqueue(0, 1, 10'000, Ecn::Ect0);
  cp.enqueue(0, 2, 5'000, Ecn::Ect0);
  const auto first = cp.dequeue(0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->packet, 1);
  EXPECT_EQ(first->queue_bytes_after, 5'000u);
  EXPECT_FALSE(first->marked) << "15 KB before removal would be above Kmax; 5 KB after is not above Kmin";
}

TEST(CongestionPoint, SerialisesAtLineRateWithoutDrift) {
  CpParams p;
  p.line_rate_bps = 100e9;
  p.ecn_marking = false;
  p.capacity_bytes = 100'000'000;
  p.capacity_packets = 100'000;
  CongestionPoint<int> cp(p);
  constexpr int kN = 10'000;
  for (int i = 0; i < kN; ++i) ASSERT_EQ(cp.enqueue(0, i, 1000, Ecn::Ect0), EnqueueResult::Queued);
  EXPECT_EQ(cp.next_dequeue_time(), 0);
  Nanos last_end = 0;
  for (int i = 0; i < kN; ++i) {
    const Nanos t = cp.next_dequeue_time();
    const auto d = cp.dequeue(t);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->packet, i);
    last_end = d->end;
  }
  EXPECT_EQ(last_end, kN * 80) << "1000 B at 100 Gb/s is 80 ns, back to back";
  EXPECT_EQ(cp.next_dequeue_time(), kNever);
}

TEST(CongestionPoint, FractionalSerialisationTimesAccumulateExactly) {
  CpParams p;
  p.line_rate_bps = 40e9;  // 1024 B = 204.8 ns
  p.capacity_packets = 16;
  CongestionPoint<int> cp(p);
  for (int i = 0; i < 10; ++i) cp.enqueue(0, i, 1024, Ecn::Ect0);
  Nanos end = 0;
  while (cp.size() > 0) end = cp.dequeue(cp.next_dequeue_time())->end;
  EXPECT_EQ(end, 2048);
}

TEST(CongestionPoint, DequeueWaitsForTheLinkAndForArrival) {
  CongestionPoint<int> cp(CpParams{});
  EXPECT_FALSE(cp.dequeue(100));
  cp.enqueue(100, 1, 1000, Ecn::Ect0);
  cp.enqueue(100, 2, 1000, Ecn::Ect0);
  EXPECT_EQ(cp.dequeue(100)->end, 180);
  EXPECT_EQ(cp.next_dequeue_time(), 180);
  EXPECT_FALSE(cp.dequeue(179));
  EXPECT_EQ(cp.dequeue(200)->start, 180) << "work conserving: starts when the link freed";
}

TEST(CongestionPoint, TailDropsWhenTheBufferIsFull) {
  CpParams p;
  p.capacity_bytes = 3'000;
  p.capacity_packets = 8;
  CongestionPoint<int> cp(p);
  EXPECT_EQ(cp.enqueue(0, 1, 1'500, Ecn::Ect0), EnqueueResult::Queued);
  EXPECT_EQ(cp.enqueue(0, 2, 1'500, Ecn::Ect0), EnqueueResult::Queued);
  EXPECT_EQ(cp.enqueue(0, 3, 64, Ecn::Ect0), EnqueueResult::DroppedBufferFull);
  EXPECT_EQ(cp.counters().dropped_buffer_full, 1u);
  EXPECT_EQ(cp.occupancy_bytes(), 3'000u);
  EXPECT_EQ(cp.counters().max_occupancy_bytes, 3'000u);
  p.capacity_bytes = 1'000'000;
  p.capacity_packets = 1;
  CongestionPoint<int> one_slot(p);
  one_slot.enqueue(0, 1, 64, Ecn::Ect0);
  EXPECT_EQ(one_slot.enqueue(0, 2, 64, Ecn::Ect0), EnqueueResult::DroppedNoSlot);
  EXPECT_EQ(to_string(EnqueueResult::DroppedNoSlot), "dropped_no_slot");
}

TEST(CongestionPoint, MarkingDisabledForTheCnpQueue) {
  CpParams p;
  p.red = {0, 1, 1.0};
  p.ecn_marking = false;
  CongestionPoint<int> cp(p);
  for (int i = 0; i < 4; ++i) cp.enqueue(0, i, 1000, Ecn::Ect0);
  EXPECT_FALSE(cp.dequeue(0)->marked);
  EXPECT_EQ(check(p), std::nullopt);
  p.red = {10, 10, 0.5};
  EXPECT_NE(check(p), std::nullopt);
}

}  // namespace
}  // namespace roce::cc::congestion_point_test
