// perftest's figures: the peak of a bandwidth run (the same minimum as perftest's quadratic
// search, and never above what the link carried, whatever the completions' burstiness), the
// average and message rate, and the latency statistics as perftest computes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "client/traffic/perftest_math.hpp"

namespace roce::client::perftest_math_test {
namespace {

// perftest 4.5's loop in print_report_bw, as it stands (integer division per pair).
Nanos perftest_quadratic_peak(const std::vector<Nanos>& posted, const std::vector<Nanos>& completed, std::uint32_t cq_mod,
                              std::uint32_t post_list) {
  const std::int64_t n = static_cast<std::int64_t>(posted.size());
  Nanos best = completed[static_cast<std::size_t>(n - 1)] - posted[0];
  for (std::int64_t i = 0; i < n; i += post_list) {
    const std::int64_t first = ((i + 1 + cq_mod - 1) / cq_mod) * cq_mod - 1;
    for (std::int64_t j = first; j < n; j += cq_mod)
      best = std::min(best, (completed[static_cast<std::size_t>(j)] - posted[static_cast<std::size_t>(i)]) / (j - i + 1));
    if (n % cq_mod) best = std::min(best, (completed[static_cast<std::size_t>(n - 1)] - posted[static_cast<std::size_t>(i)]) / (n - i));
  }
  return best;
}

// A run through a link that serialises one operation per `wire` ns, `depth` in flight, whose
// completions arrive `burst` at a time (one ACK for many) after `delay`; posts refill the
// window when completions come, each post list at the same instant.
BwTimestamps simulate(std::size_t ops, Nanos wire, Nanos delay, std::size_t depth, std::size_t burst, std::uint32_t cq_mod) {
  BwTimestamps t;
  t.posted.assign(ops, 0);
  t.completed.assign(ops, 0);
  Nanos link_free = 0;
  std::vector<Nanos> arrive(ops);
  std::size_t next = 0, done = 0;
  Nanos now = 0;
  while (done < ops) {
    while (next < ops && next - done < depth) {
      t.posted[next] = now;
      link_free = std::max(link_free, now) + wire;
      arrive[next] = link_free + delay;
      ++next;
    }
    // The next completion event: the burst (or the last operation, or a signalled one) whose
    // acknowledgement arrives.
    std::size_t upto = std::min(ops, (done / burst + 1) * burst);
    upto = std::min(upto, next);
    while (upto > done + 1 && (upto % cq_mod) != 0 && upto != ops) --upto;
    now = std::max(now, arrive[upto - 1]);
    for (std::size_t k = done; k < upto; ++k) t.completed[k] = now;
    done = upto;
  }
  return t;
}

TEST(PerftestPeak, FindsTheSameMinimumAsPerftestsSearch) {
  std::mt19937_64 rng(19);
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = 1 + rng() % 300;
    const std::uint32_t cq_mod = 1 + static_cast<std::uint32_t>(rng() % 12);
    const std::uint32_t post_list = 1 + static_cast<std::uint32_t>(rng() % 5);
    std::vector<Nanos> posted(n), completed(n);
    Nanos p = static_cast<Nanos>(rng() % 1000);
    for (std::size_t k = 0; k < n; ++k) {
      p += static_cast<Nanos>(rng() % 5000);
      posted[k] = p;
    }
    Nanos c = 0;
    for (std::size_t k = 0; k < n; ++k) {
      c = std::max(c, posted[k]) + static_cast<Nanos>(rng() % (k % 7 == 0 ? 20000 : 300));
      completed[k] = c;
    }
    EXPECT_EQ(perftest_peak_interval(posted, completed, cq_mod, post_list),
              std::max<Nanos>(perftest_quadratic_peak(posted, completed, cq_mod, post_list), 1))
        << "round " << round << " n " << n << " cq_mod " << cq_mod << " post_list " << post_list;
  }
}

// The symptom of issue 19: a -a sweep on a 20 MB/s link showed a peak of 8000 MB/s, a rate
// over the 1 ms in which one coalesced ACK retired many WRs. The peak is now a rate over an
// interval in which the operations it counts were all posted and completed.
TEST(PerftestPeak, CoalescedAcksDoNotRaiseThePeakAboveTheLink) {
  constexpr double kLinkBytesPerS = 20e6;
  for (std::uint32_t size : {4096u, 65536u, 1u << 20}) {
    for (std::size_t burst : {1u, 16u, 64u}) {
      const Nanos wire = static_cast<Nanos>(size / kLinkBytesPerS * 1e9);
      const std::uint32_t cq_mod = size > 8192 ? 1 : 16;
      const BwTimestamps t = simulate(2000, wire, 50'000, 128, burst, cq_mod);
      BwInput in;
      in.size = size;
      in.ops = 2000;
      in.first = t.posted.front();
      in.last = t.completed.back();
      in.times = &t;
      in.cq_mod = cq_mod;
      const BwFigures f = perftest_bw(in);
      EXPECT_LE(f.bw_peak_bps, kLinkBytesPerS * 1.001) << size << " B, " << burst << " per ACK";
      EXPECT_GT(f.bw_peak_bps, kLinkBytesPerS * 0.5) << size << " B, " << burst << " per ACK";
      EXPECT_LE(f.bw_avg_bps, f.bw_peak_bps * 1.001);
      EXPECT_NEAR(f.bw_avg_bps, kLinkBytesPerS, kLinkBytesPerS * 0.1);
    }
  }
}

TEST(PerftestPeak, AllCompletionsAtThePostInstantCountAsOneTick) {
  const std::vector<Nanos> same(10, 5000);
  EXPECT_EQ(perftest_peak_interval(same, same, 1, 1), 1);
  EXPECT_EQ(perftest_peak_interval({}, {}, 1, 1), 0);
}

TEST(PerftestBw, AverageAndMessageRateOverTheSpan) {
  BwInput in;
  in.size = 65536;
  in.ops = 1000;
  in.first = 1'000'000;
  in.last = 1'000'000 + 2 * kSecond;
  const BwFigures f = perftest_bw(in);
  EXPECT_DOUBLE_EQ(f.bw_avg_bps, 65536.0 * 1000 / 2);
  EXPECT_DOUBLE_EQ(f.msg_rate_mpps, 1000 / 2 / 1e6);
  EXPECT_EQ(f.bw_peak_bps, 0) << "no timestamps: no peak, as perftest prints 0.00 under -D";
  EXPECT_EQ(f.iterations, 1000u);
  in.last = in.first;
  EXPECT_EQ(perftest_bw(in).bw_avg_bps, 0);
}

TEST(PerftestLatency, DropsTheTwoLargestAndTakesTheMedianOfTheRest) {
  // 8 iterations, 7 intervals (ns): sorted 1000..5000, then 90000 and 100000 left out.
  const LatFigures f = perftest_latency(2, 8, {5000, 1000, 3000, 2000, 4000, 100000, 90000}, 1);
  EXPECT_EQ(f.iterations, 8u);
  EXPECT_EQ(f.size, 2u);
  EXPECT_DOUBLE_EQ(f.t_min_us, 1.0);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 3.0);
  EXPECT_DOUBLE_EQ(f.t_avg_us, 3.0);
  EXPECT_DOUBLE_EQ(f.t_max_us, 90.0) << "t_max is the first sample left out";
  EXPECT_NEAR(f.t_stdev_us, std::sqrt(10.0 / 5), 1e-12);
  EXPECT_DOUBLE_EQ(f.p99_us, 90.0) << "index ceil(5 x 0.99) = 5";
  EXPECT_DOUBLE_EQ(f.p999_us, 90.0);
}

TEST(PerftestLatency, EvenCountsAverageTheMiddleTwoAndRoundTripsAreHalved) {
  // 4 kept (1, 2, 4, 8 us), 2 left out: median (2 + 4) / 2 = 3 us; halved for a round trip.
  const LatFigures f = perftest_latency(64, 7, {8000, 1000, 4000, 2000, 50000, 60000}, 2);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 1.5);
  EXPECT_DOUBLE_EQ(f.t_min_us, 0.5);
  EXPECT_DOUBLE_EQ(f.t_avg_us, 15.0 / 4 / 2);
  EXPECT_DOUBLE_EQ(f.t_max_us, 25.0);
}

TEST(PerftestLatency, TheDeviationUsesWholeMicrosecondDifferencesAsPerftestsIntsDo) {
  // Differences from the mean of 3.5 us are +-0.5 us, truncated to 0: perftest reports 0.
  const LatFigures f = perftest_latency(2, 7, {3000, 4000, 3000, 4000, 9000, 9000}, 1);
  EXPECT_DOUBLE_EQ(f.t_avg_us, 3.5);
  EXPECT_DOUBLE_EQ(f.t_stdev_us, 0.0);
  // 1.5 us from a 2.5 us mean truncates to 1 (and -1): a deviation of 1.
  const LatFigures g = perftest_latency(2, 7, {1000, 4000, 1000, 4000, 9000, 9000}, 1);
  EXPECT_DOUBLE_EQ(g.t_stdev_us, 1.0);
}

TEST(PerftestLatency, NoSamplesGiveZerosAndFewKeepOne) {
  EXPECT_EQ(perftest_latency(2, 0, {}, 1).t_avg_us, 0);
  const LatFigures f = perftest_latency(2, 2, {7000}, 1);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 7.0);
  EXPECT_DOUBLE_EQ(f.t_max_us, 7.0);
}

TEST(PerftestLatency, DurationRunsReportTheMeanAndTransactionsPerSecond) {
  const LatDurationFigures f = perftest_latency_duration(2, 20000, 2 * kSecond, 1);
  EXPECT_DOUBLE_EQ(f.t_avg_us, 100.0);
  EXPECT_DOUBLE_EQ(f.tps, 10000.0);
  EXPECT_DOUBLE_EQ(perftest_latency_duration(2, 20000, 2 * kSecond, 2).t_avg_us, 50.0);
  EXPECT_EQ(perftest_latency_duration(2, 0, kSecond, 1).tps, 0);
}

}  // namespace
}  // namespace roce::client::perftest_math_test
