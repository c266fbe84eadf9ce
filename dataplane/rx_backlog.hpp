// Our own receive queue's backlog as congestion, before it overflows: a switch marks ECN by
// queue depth (DCQCN's RED: nothing at or below Kmin, a probability rising to Pmax at Kmax,
// every frame above Kmax); the loop that reads an RX queue does the same with the depth it can
// see. overrun.hpp marks after the port dropped; this marks while the queue is still filling.
//
// The depth, per burst, never per packet:
// - where the PMD counts its queue (rte_eth_rx_queue_count: real NICs' PMDs), the frames this
//   burst read plus those still queued behind it, read only after a full burst (a short burst
//   emptied the queue);
// - otherwise (net_af_packet, net_ring and net_tap return -ENOTSUP in DPDK 22.11), the frames
//   read since the queue was last seen empty, this burst included: a full burst means frames
//   were left behind, so a run of k full bursts means the frames of the last burst waited behind
//   at least (k - 1) bursts. A short burst ends the run (its own frames still count as deep).
//   That is a standing queue, as CoDel sees one: it also counts a poller that keeps up exactly,
//   reading full bursts forever, which is a receiver at its limit.
//
// Which frames: the ECN-capable frames of the burst read at that depth, with the burst's
// probability, spent as a running credit (a frame is marked each time the credit reaches one)
// rather than a random draw, so that a count of frames at a depth gives an exact count of marks.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "lib/status.hpp"

namespace roce::dp {

struct BacklogConfig {
  // Off by default: not shown to lower the drops or the resends (docs/loss.md, "Marks from the
  // receive queue's backlog").
  bool mark = false;
  // In frames, as a receive ring is counted (a slot holds a frame whatever its size). A single
  // full burst (32) comes whenever two QPs' pacer bursts (16 KiB, 16 frames at 1 KiB) land
  // together: not a backlog. Two bursts behind each other are.
  std::uint32_t kmin_frames = 64;
  // A whole QP's in-flight cap (max_inflight_packets) waiting: every frame marked.
  std::uint32_t kmax_frames = 256;
  // At Kmax; DCQCN's switches use 0.01 for a queue of bytes, but a notification point sends at
  // most one CNP per QP per 50 us, and a backlog read in bursts of 32 is seen for only a few
  // bursts: at 0.01 a QP with a few frames in each would hardly ever be marked.
  double pmax = 0.1;
};

// Which config values can work together; nullopt when they can.
std::optional<const char*> check(const BacklogConfig& c);
// The tools' --backlog-marks: "off", "on" (the defaults above) or "KMIN,KMAX,PMAX".
Result<BacklogConfig> parse_backlog_marks(const std::string& s);

struct BacklogCounters {
  std::uint64_t bursts_above_kmin = 0;  // RX bursts read with the depth above Kmin
  std::uint64_t ce_marked = 0;          // frames marked CE for the backlog
  std::uint64_t max_depth = 0;          // the deepest backlog seen, in frames
};

// The arithmetic: bursts in, a depth and marks owed out. No port, so it is tested on its own.
class BacklogMarker {
 public:
  explicit BacklogMarker(BacklogConfig c = {}) : c_(c) {}

  // A burst that asked for `want` frames and got `n`; `left`: what the PMD says is still queued
  // (nullopt: it cannot say, the run of full bursts is the depth). Returns the depth used.
  std::uint32_t on_burst(unsigned n, unsigned want, std::optional<std::uint32_t> left);
  // Whether the next ECN-capable frame of the burst is marked (spends the credit).
  bool take_mark() {
    credit_ += step_;
    if (credit_ < kOne) return false;
    credit_ -= kOne;
    ++counters_.ce_marked;
    return true;
  }
  bool marking() const { return step_ != 0; }
  // The probability a frame at `depth` is marked, in 1/65536 (65536: every frame).
  std::uint32_t step_at(std::uint32_t depth) const;
  const BacklogCounters& counters() const { return counters_; }

 private:
  static constexpr std::uint32_t kOne = 1u << 16;
  BacklogConfig c_;
  std::uint32_t run_ = 0;     // frames read since the queue was last seen empty
  std::uint32_t step_ = 0;    // this burst's probability, in 1/65536
  std::uint32_t credit_ = 0;  // carried across bursts: a low probability still marks in time
  BacklogCounters counters_;
};

// How many frames are still queued on the RX queue (rte_eth_rx_queue_count); nullopt when the
// PMD cannot say.
using RxQueueCount = std::function<std::optional<std::uint32_t>()>;

// What a loop that reads an RX queue runs once per burst. Disabled (one branch per burst)
// unless the config marks.
class BacklogMarking {
 public:
  BacklogMarking() = default;
  // `count` empty: the depth is the run of full bursts.
  BacklogMarking(BacklogConfig c, RxQueueCount count) : marker_(c), count_(std::move(count)), enabled_(c.mark) {}

  bool enabled() const { return enabled_; }
  void on_burst(rte_mbuf* const* rx, unsigned n, unsigned want);
  const BacklogCounters& counters() const { return marker_.counters(); }
  template <typename Stats>
  void copy_to(Stats& s) const {
    s.rx_backlog_bursts = counters().bursts_above_kmin;
    s.rx_backlog_ce_marks = counters().ce_marked;
    s.rx_backlog_max_frames = counters().max_depth;
  }

 private:
  BacklogMarker marker_;
  RxQueueCount count_;
  bool enabled_ = false;
};

// The PMD's count for (port, queue) when it has one (probed once: rte_eth_rx_queue_count
// returns -ENOTSUP otherwise), else empty.
RxQueueCount rx_queue_count_of(std::uint16_t port, std::uint16_t queue);

}  // namespace roce::dp
