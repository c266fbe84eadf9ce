#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "lib/cc/pacer.hpp"

namespace roce::cc::pacer_test {
namespace {

struct Sent {
  Nanos t;
  std::uint32_t bytes;
};

// A sender that always has data and sends each packet as soon as the pacer allows.
std::vector<Sent> greedy(Pacer& pacer, Nanos start, int n, const std::vector<std::uint32_t>& sizes) {
  std::vector<Sent> out;
  Nanos now = start;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t w = sizes[static_cast<std::size_t>(i) % sizes.size()];
    const Nanos earliest = pacer.earliest_departure(w);
    if (earliest > now) {
      EXPECT_FALSE(pacer.may_send(earliest - 1, w)) << "earliest_departure is not the earliest at " << i;
      now = earliest;
    }
    EXPECT_TRUE(pacer.may_send(now, w));
    pacer.on_sent(now, w);
    out.push_back({now, w});
  }
  return out;
}

TEST(Pacer, LongRunAverageRateEqualsRcWithinOnePerMille) {
  std::mt19937 rng(5);
  std::vector<std::uint32_t> mixed(997);
  for (auto& s : mixed) s = 64 + rng() % 4033;
  for (double rate : {1e9, 25e9, 37.3e9, 99.951171875e9, 100e9}) {
    for (const auto& sizes : {std::vector<std::uint32_t>{1000}, std::vector<std::uint32_t>{4096 + 58}, mixed}) {
      Pacer pacer(rate, 1);
      const auto sent = greedy(pacer, 0, 200'000, sizes);
      double bytes = 0;
      for (std::size_t i = 0; i + 1 < sent.size(); ++i) bytes += sent[i].bytes;
      const double measured = bytes * 8 / ((sent.back().t - sent.front().t) * 1e-9);
      EXPECT_NEAR(measured / rate, 1.0, 1e-3) << "rate " << rate << " first size " << sizes[0];
    }
  }
}

// Over any window [t_i, t_j] the bytes sent are at most burst + Rc*(t_j - t_i + 1 ns)/8.
void expect_no_burst_above(const std::vector<Sent>& sent, double rate, std::uint32_t burst) {
  for (std::size_t i = 0; i < sent.size(); ++i) {
    double bytes = 0;
    for (std::size_t j = i; j < sent.size() && sent[j].t - sent[i].t < 20'000; ++j) {
      bytes += sent[j].bytes;
      const double allowed = burst + rate * ((sent[j].t - sent[i].t) + 1) * 1e-9 / 8;
      ASSERT_LE(bytes, allowed) << "window " << i << ".." << j;
    }
  }
}

TEST(Pacer, NoBurstLargerThanTheAllowance) {
  constexpr double kRate = 40e9;
  constexpr std::uint32_t kBurst = 3000;
  Pacer pacer(kRate, kBurst);
  std::mt19937 rng(9);
  std::vector<Sent> sent;
  Nanos now = 0;
  for (int i = 0; i < 20'000; ++i) {
    if (rng() % 50 == 0) now += rng() % 5000;  // idle gaps refill the bucket
    const std::uint32_t w = rng() % 2 ? 1000 : 64 + rng() % 1400;
    now = std::max(now, pacer.earliest_departure(w));
    pacer.on_sent(now, w);
    sent.push_back({now, w});
  }
  expect_no_burst_above(sent, kRate, kBurst);
  // A fresh pacer sends exactly three 1000 B packets back to back, then paces.
  Pacer fresh(kRate, kBurst);
  const auto b = greedy(fresh, 0, 5, {1000});
  EXPECT_EQ(b[0].t, 0);
  EXPECT_EQ(b[2].t, 0);
  EXPECT_EQ(b[3].t, 200);
  EXPECT_EQ(b[4].t, 400);
}

TEST(Pacer, PacketsLargerThanTheBurstGoOneAtATime) {
  Pacer pacer(10e9, 1000);
  const auto s = greedy(pacer, 0, 4, {4000});
  EXPECT_EQ(s[1].t - s[0].t, 3200);
  EXPECT_EQ(s[3].t - s[2].t, 3200);
}

TEST(Pacer, RateChangeAppliesFromTheNextPacket) {
  Pacer pacer(10e9, 1);
  pacer.on_sent(0, 1000);
  EXPECT_EQ(pacer.earliest_departure(1000), 800);
  pacer.set_rate(0, 1e9);
  EXPECT_EQ(pacer.earliest_departure(1000), 8000);
  pacer.on_sent(8000, 1000);
  EXPECT_EQ(pacer.earliest_departure(1000), 16000);
  // Half the gap at 10 Gb/s, then the rest at 1 Gb/s: 400 ns earn 500 B, the other 500 B take 4 us.
  pacer.set_rate(16000, 10e9);
  pacer.on_sent(16000, 1000);
  pacer.set_rate(16400, 1e9);
  EXPECT_EQ(pacer.earliest_departure(1000), 16400 + 4000);
  EXPECT_FALSE(pacer.may_send(20399, 1000));
  EXPECT_TRUE(pacer.may_send(20400, 1000));
}

TEST(Pacer, LinkBytesAddFcsPreambleAndGap) {
  static_assert(link_bytes(74) == 98);  // an untagged CNP: 74 B frame, 78 B with FCS
  // 1024 B payload RC WRITE MIDDLE: 14 + 20 + 8 + 12 + 1024 + 4 = 1082 B frame.
  Pacer pacer(100e9, 1);
  pacer.on_sent(0, link_bytes(1082));
  EXPECT_EQ(pacer.earliest_departure(link_bytes(1082)), 89) << "1106 B at 100 Gb/s = 88.48 ns, rounded up";
}

TEST(Pacer, ZeroRateNeverDeparts) {
  Pacer pacer(0, 1);
  pacer.on_sent(0, 1000);
  EXPECT_EQ(pacer.earliest_departure(1000), kNever);
  EXPECT_FALSE(pacer.may_send(from_ms(1000), 1000));
}

TEST(Pacer, LongIdleDoesNotOverflowTheCredit) {
  Pacer pacer(100e9, 9000);
  pacer.on_sent(0, 9000);
  EXPECT_TRUE(pacer.may_send(Nanos{1} << 60, 9000));
  pacer.on_sent(Nanos{1} << 60, 9000);
  EXPECT_FALSE(pacer.may_send((Nanos{1} << 60) + 1, 1000));
}

}  // namespace
}  // namespace roce::cc::pacer_test
