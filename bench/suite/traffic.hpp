// Keeps verbs traffic going on a set of QP pairs of a Rig: `depth` messages outstanding per QP,
// posted in chains whose last WR is signalled; receives kept posted for SEND. Counts completed
// bytes so a caller can time windows.
#pragma once

#include <array>
#include <vector>

#include "bench/suite/rig.hpp"

namespace roce::bench {

enum class Verb { Write, Read, Send };
const char* to_string(Verb v);

class Traffic {
 public:
  // `recvs` counts the receives outstanding per QP at B: it belongs to the QP set, since
  // receives outlive a case; each is `recv_len` bytes long (the largest SEND to come).
  Traffic(Rig& rig, std::vector<QpPair> qps, Verb verb, std::uint32_t size, Region& region_a, Region& region_b,
          std::vector<std::uint32_t>& recvs, std::uint32_t recv_len);
  // The WR chain points into the object itself.
  Traffic(const Traffic&) = delete;
  Traffic& operator=(const Traffic&) = delete;
  // Posts what the windows allow, steps the rig once, reaps completions. False on an error
  // completion or a failed post.
  bool step();
  std::uint64_t bytes() const { return bytes_; }
  // Time spent in runs of steps in which neither side transmitted a frame (a stall: everyone
  // waits for a timer, or for nothing), counted from the step that sent nothing to the next
  // step that sent something; stall_reset() forgets a run in progress (between turns).
  Nanos stalled() const { return stalled_; }
  void stall_reset() { stall_since_ = kNever; }
  // What held the first QP's requester back in the steps that sent nothing (their time,
  // summed): the selective repeat reach (una + the reorder window: a hole not yet filled, or
  // its ACK not yet back), the in-flight cap (TransportTuning::max_inflight_packets / _bytes),
  // the send window, or nothing the window decides (no work, or the step found none).
  enum class Held : std::uint8_t { ReorderReach, InflightCap, SendWindow, Other, Count };
  Nanos stalled_by(Held h) const { return held_[static_cast<std::size_t>(h)]; }
  // Side A's steps while side B runs on its own lcore (the two-lcore rig): busy (a frame sent
  // or received) and idle, with their TSC cycles.
  const LoopCount& a_loop() const { return a_loop_; }
  // Stops posting and steps until everything posted completed (or `timeout` passed).
  bool finish(Nanos timeout);

 private:
  struct PerQp {
    std::uint64_t posted = 0, completed = 0;
    std::uint64_t src_offset = 0;
  };
  bool post(unsigned i);
  bool reap();

  Rig& rig_;
  std::vector<QpPair> qps_;
  std::vector<PerQp> st_;
  Verb verb_;
  std::uint32_t size_;
  Region& ra_;
  Region& rb_;
  std::vector<std::uint32_t>& recvs_;
  std::uint32_t recv_len_;
  std::uint64_t recv_slots_ = 1;
  std::uint32_t depth_, batch_;
  std::uint64_t slots_, next_slot_ = 0;
  // next_slot_ % slots_, kept in step with next_slot_ (a division per WR less): the slot of the
  // next WR posted.
  std::uint64_t send_slot_ = 0;
  std::uint64_t take_slot() {
    const std::uint64_t slot = send_slot_;
    ++next_slot_;
    if (++send_slot_ == slots_) send_slot_ = 0;
    return slot;
  }
  // The posted chain (at most 16 WRs), made in the constructor.
  std::array<ibv_sge, 16> sg_{};
  std::array<ibv_send_wr, 16> wr_{};
  std::uint64_t bytes_ = 0;
  bool posting_ = true;
  Nanos stalled_ = 0, stall_since_ = kNever;
  std::array<Nanos, static_cast<std::size_t>(Held::Count)> held_{};
  LoopCount a_loop_;
  Held why_held() const;
};

}  // namespace roce::bench
