// dcqcn.md T7: N = 50 us, one flow, CE-marked packets at 0, 10, 20, 60, 130, 135 us.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "lib/cc/notification_point.hpp"

namespace roce::cc::notification_point_test {
namespace {

// Replays CE arrivals and the NP's own deadlines in time order (a packet before a timer of
// the same timestamp) and returns the CNP times in microseconds.
std::vector<Nanos> cnp_times_us(NpMode mode, const std::vector<Nanos>& ce_us, Nanos end_us = 1000) {
  NotificationPoint np({mode, from_us(50)});
  std::vector<Nanos> out;
  std::size_t i = 0;
  for (;;) {
    const Nanos next_ce = i < ce_us.size() ? from_us(ce_us[i]) : kNever;
    const Nanos next = std::min(next_ce, np.next_deadline());
    if (next > from_us(end_us)) break;
    if (next_ce == next) {
      if (np.on_ce_packet(next)) out.push_back(next / 1000);
      ++i;
    } else if (np.advance(next)) {
      out.push_back(next / 1000);
    }
  }
  return out;
}

const std::vector<Nanos> kT7 = {0, 10, 20, 60, 130, 135};

TEST(NotificationPoint, T7PaperModeDefersOneCnpToTheEndOfTheWindow) {
  EXPECT_EQ(cnp_times_us(NpMode::Paper, kT7), (std::vector<Nanos>{0, 50, 100, 150}));
}

TEST(NotificationPoint, T7SuppressModeDropsMarksInsideTheWindow) {
  EXPECT_EQ(cnp_times_us(NpMode::Suppress, kT7), (std::vector<Nanos>{0, 60, 130}));
}

TEST(NotificationPoint, SampleModeSendsAtTheNextMultipleOfN) {
  EXPECT_EQ(cnp_times_us(NpMode::Sample, kT7), (std::vector<Nanos>{50, 100, 150}));
}

TEST(NotificationPoint, PerAckModeAnswersEveryMark) {
  EXPECT_EQ(cnp_times_us(NpMode::PerAck, kT7), (std::vector<Nanos>{0, 10, 20, 60, 130, 135}));
}

TEST(NotificationPoint, PaperModeCountsWhatHappenedToEachMark) {
  NotificationPoint np({NpMode::Paper, from_us(50)});
  for (Nanos t : kT7) {
    np.advance(from_us(t));
    np.on_ce_packet(from_us(t));
  }
  np.advance(from_us(1000));
  EXPECT_EQ(np.counters().ce_packets, 6u);
  EXPECT_EQ(np.counters().cnp_sent, 4u);
  EXPECT_EQ(np.counters().cnp_deferred, 3u);
  EXPECT_EQ(np.counters().ce_absorbed, 5u);
  EXPECT_EQ(np.next_deadline(), kNever);
}

TEST(NotificationPoint, PaperModeMarkAfterAMissedDeadlineIsServedAtOnce) {
  NotificationPoint np({NpMode::Paper, from_us(50)});
  EXPECT_TRUE(np.on_ce_packet(0));
  EXPECT_FALSE(np.on_ce_packet(from_us(10)));
  // The caller never ran the timer at 50 us; the mark at 70 us covers the pending one.
  EXPECT_TRUE(np.on_ce_packet(from_us(70)));
  EXPECT_FALSE(np.advance(from_us(80)));
  EXPECT_EQ(np.counters().cnp_sent, 2u);
}

TEST(NotificationPoint, MarkAtTheDeadlineIsSentOnceNotTwice) {
  NotificationPoint np({NpMode::Paper, from_us(50)});
  np.on_ce_packet(0);
  np.on_ce_packet(from_us(10));
  EXPECT_TRUE(np.on_ce_packet(from_us(50)));
  EXPECT_FALSE(np.advance(from_us(50)));
  EXPECT_EQ(np.counters().cnp_sent, 2u);
}

TEST(NotificationPoint, NoMarksNoCnpsNoTimers) {
  NotificationPoint np({NpMode::Paper, from_us(50)});
  EXPECT_EQ(np.next_deadline(), kNever);
  EXPECT_FALSE(np.advance(from_ms(10)));
  EXPECT_EQ(np.counters().cnp_sent, 0u);
}

TEST(NotificationPoint, ParamsAndNames) {
  EXPECT_EQ(check(NpParams{}), std::nullopt);
  EXPECT_NE(check(NpParams{NpMode::Sample, 0}), std::nullopt);
  EXPECT_EQ(np_mode_from_string("suppress"), NpMode::Suppress);
  EXPECT_EQ(np_mode_from_string("deferred"), std::nullopt);
  EXPECT_EQ(to_string(NpMode::PerAck), "per_ack");
}

}  // namespace
}  // namespace roce::cc::notification_point_test
