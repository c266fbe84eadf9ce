// The static total that the send window's join and leave keep (SendWindow::total_, set with the
// sharers) instead of a product at every use: the window before its first loss must be the
// static cap times the QPs that have send work, through any order of joins and leaves, and the
// first to join and the last to leave change no sharer count.
#include <gtest/gtest.h>

#include "lib/rdma/send_window.hpp"

namespace roce::rdma {
namespace {

// Before the first loss (the full window, WindowTuning::enabled) the window is the static cap
// times the QPs with send work, through joins and leaves in any order; the first to join and
// the last to leave change no sharer count. After the loss a leave keeps it within the new total.
TEST(SendWindowShare, JoinAndLeaveKeepTheWindowAtTheStaticCapTimesTheSharers) {
  WindowTuning t;
  t.enabled = true;
  SendWindow w;
  w.start(t, 8, false);
  EXPECT_EQ(w.packets(), 8);
  w.join();  // the first: still one sharer
  EXPECT_EQ(w.sharers(), 1u);
  EXPECT_EQ(w.packets(), 8);
  w.join();
  w.join();
  EXPECT_EQ(w.sharers(), 3u);
  EXPECT_EQ(w.packets(), 24);
  w.leave();
  EXPECT_EQ(w.packets(), 16);
  w.leave();
  EXPECT_EQ(w.packets(), 8);
  w.leave();  // the last: one sharer still
  EXPECT_EQ(w.sharers(), 1u);
  EXPECT_EQ(w.packets(), 8);
  w.leave();  // not joined: nothing
  EXPECT_EQ(w.packets(), 8);
  for (int i = 0; i < 5; ++i) w.join();
  EXPECT_EQ(w.sharers(), 5u);
  EXPECT_EQ(w.packets(), 40);
  // A timeout: one packet per sharer; progress grows it back toward the need, never past the
  // static total of the sharers it has then (no sample yet: the need is the start's total).
  ASSERT_TRUE(w.on_loss(2 * kMicro, 10 * kMicro, true));
  EXPECT_EQ(w.packets(), 5);
  w.leave();
  w.leave();
  for (int i = 0; i < 100; ++i) w.on_progress(3 * kMicro + i, 1);
  EXPECT_LE(w.packets(), 8);  // the need: start()'s total, one sharer's static cap (no sample yet)
  EXPECT_EQ(w.sharers(), 3u);
}

}  // namespace
}  // namespace roce::rdma
