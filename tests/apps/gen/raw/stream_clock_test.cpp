// Departure times of paced streams: exact from the counts, no drift over long runs.
#include "apps/gen/raw/stream_clock.hpp"

#include <gtest/gtest.h>

namespace roce::gen::stream_clock_test {
namespace {

TEST(StreamClock, PacketsPerSecondSpaceFramesEvenly) {
  StreamClock c(Rate::pps(1e6));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(c.next_departure(), i * 1000);
    c.on_sent(100);
  }
  StreamClock third(Rate::pps(3e6));  // 333.33 ns apart: rounded per frame, never accumulated
  for (int i = 0; i < 3'000'000; ++i) third.on_sent(64);
  EXPECT_EQ(third.next_departure(), kSecond);
}

TEST(StreamClock, BitsPerSecondCountTheFrameAndItsWireOverhead) {
  StreamClock c(Rate::bps(10e9));
  EXPECT_EQ(c.next_departure(), 0);
  c.on_sent(1000);  // (1000 + 24) * 8 bits at 10 Gb/s
  EXPECT_EQ(c.next_departure(), 819);
  c.on_sent(1000);
  EXPECT_EQ(c.next_departure(), 1638);
  // 100 Gb/s of 64-byte frames is 148.8 Mpps: after 148,809,523 frames, one second minus a
  // fraction of a frame.
  StreamClock line(Rate::bps(100e9));
  for (int i = 0; i < 148'809'524; ++i) line.on_sent(60);
  EXPECT_NEAR(static_cast<double>(line.next_departure()), 1e9, 2);
}

TEST(StreamClock, UnpacedStreamsLeaveAtOnce) {
  StreamClock c(Rate{});
  c.on_sent(100);
  EXPECT_FALSE(c.paced());
  EXPECT_EQ(c.next_departure(), 0);
  EXPECT_EQ(c.frames(), 1u);
}

}  // namespace
}  // namespace roce::gen::stream_clock_test
