// Our own receive overruns as congestion. Frames the port dropped before a poller read them (the
// RX ring was full while the loop was starved or slow: imissed, rx_nombuf, or af_packet's ring
// drops, port_drops.hpp) were lost on this host, and each costs its sender a resend (under
// go-back-N, of everything behind it). A switch with a full queue would have marked instead; so
// the one loop per port that reads the port (worker 0 in run-to-completion, the IO loop in
// pipeline mode) reads the drop count on a timer and marks as many arriving ECN-capable frames CE.
// A QP running DCQCN answers a mark with a CNP and its peer's reaction point cuts its rate (rxe
// and RNICs alike: CNPs are standard). Without DCQCN the marks are only counted
// (ecn_ce_received), and the senders' windows answer the losses themselves.
//
// Which frames: the next ECN-capable ones to arrive, as a switch marks what arrives at its full
// queue. The senders that overran the ring are the ones sending most, so most marks fall on
// them; a sender whose frames all fit is marked in proportion to its share of what arrives.
#pragma once

#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>

#include "lib/time.hpp"
#include "protocol/ecn_mark.hpp"

namespace roce::dp {

// Where a received frame's ECN field is, if it may be marked: one segment, IP, ECT(0) or ECT(1)
// (not-ECT and CE frames, and non-IP ones, are left alone). Shared with rx_backlog.hpp.
std::optional<proto::EcnLocation> markable(const rte_mbuf* m);
inline void set_ce(rte_mbuf* m, const proto::EcnLocation& at) {
  proto::set_ce({rte_pktmbuf_mtod(m, std::byte*), m->data_len}, at);
}

struct OverrunConfig {
  Nanos check_interval = 1 * kMilli;      // how often the port's drop count is read; 0: never
  std::uint32_t max_pending_marks = 256;  // marks owed at most (a long overrun is not replayed for ever)
  bool mark = true;  // false: the drops are read and counted, nothing is marked (an A/B's off side)
};

struct OverrunCounters {
  std::uint64_t frames_lost = 0;  // growth of the port's drop count seen
  std::uint64_t ce_marked = 0;    // frames marked CE for it
};

// The arithmetic: drop counts in, marks owed out. No port, so it is tested on its own.
class OverrunMarker {
 public:
  explicit OverrunMarker(OverrunConfig c = {}) : c_(c) {}

  bool due(Nanos now) const { return c_.check_interval > 0 && now >= next_check_; }
  // The first time at which due() holds (kNever: never), for a caller that folds it into one
  // compare.
  Nanos due_at() const { return c_.check_interval > 0 ? next_check_ : kNever; }
  // The port's cumulative drop count, read at `now`. The first reading is the baseline (drops
  // before the loop started were nobody's congestion we can still answer).
  void on_port_drops(Nanos now, std::uint64_t dropped) {
    next_check_ = now + c_.check_interval;
    if (!seen_ || dropped <= last_) {  // first reading, nothing new, or the counters were reset
      seen_ = true;
      last_ = dropped;
      return;
    }
    const std::uint64_t lost = dropped - last_;
    last_ = dropped;
    counters_.frames_lost += lost;
    if (!c_.mark) return;
    pending_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(pending_ + lost, c_.max_pending_marks));
  }
  // The count could not be read: the next try is an interval later.
  void skip(Nanos now) { next_check_ = now + c_.check_interval; }
  std::uint32_t owed() const { return pending_; }
  void marked(std::uint32_t n) {
    n = std::min(n, pending_);
    pending_ -= n;
    counters_.ce_marked += n;
  }
  const OverrunCounters& counters() const { return counters_; }

 private:
  OverrunConfig c_;
  Nanos next_check_ = 0;
  std::uint64_t last_ = 0;
  bool seen_ = false;
  std::uint32_t pending_ = 0;
  OverrunCounters counters_;
};

// The port's cumulative receive drops; nullopt when they cannot be read this time.
using PortDropReader = std::function<std::optional<std::uint64_t>()>;

// What a loop that reads the port runs once per RX burst: the drop count when it is due (a
// timer, not per packet), then marks owed on the burst's ECN-capable frames. Disabled (one
// branch per burst) without a reader.
class OverrunMarking {
 public:
  OverrunMarking() = default;
  OverrunMarking(OverrunConfig c, PortDropReader read) : marker_(c), read_(std::move(read)) { settle(); }

  bool enabled() const { return static_cast<bool>(read_); }
  // Whether on_burst at `now` would do anything (read the drops, mark a frame): most bursts
  // find neither, and the counters copy_to copies have not moved since the last one that did.
  bool due_or_owed(Nanos now) const { return now >= attention_at_; }
  // The first time at which due_or_owed holds: the drops' next reading, the least time while
  // marks are owed, kNever when disabled or never read. Only on_burst moves it (the one place the
  // marker changes), so a poll loop tests due_or_owed alone, one compare for the
  // reader's presence, the interval, the reading's time and the marks owed.
  Nanos attention_at() const { return attention_at_; }
  void on_burst(rte_mbuf* const* rx, unsigned n, Nanos now) {
    if (!read_) return;
    if (marker_.due(now)) check(now);
    if (marker_.owed() && n) mark(rx, n);
    settle();
  }
  const OverrunCounters& counters() const { return marker_.counters(); }
  // Into a loop's stats (WorkerStats, IoStats).
  template <typename Stats>
  void copy_to(Stats& s) const {
    s.rx_overrun_frames = counters().frames_lost;
    s.rx_overrun_ce_marks = counters().ce_marked;
  }

 private:
  void check(Nanos now);
  void mark(rte_mbuf* const* rx, unsigned n);
  void settle() {
    attention_at_ = !read_ ? kNever : marker_.owed() != 0 ? std::numeric_limits<Nanos>::min() : marker_.due_at();
  }

  OverrunMarker marker_;
  PortDropReader read_;
  Nanos attention_at_ = kNever;
};

}  // namespace roce::dp
