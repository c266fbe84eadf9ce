// Per-QP rate pacer holding a QP to its current rate Rc: a token bucket whose depth is the burst
// allowance. Credit is kept in nanobits (1e-9 bit), so one nanosecond at R bit/s earns exactly R
// of them and the long-run rate is exact in integer arithmetic. O(1) per packet.
//
// Semantics:
// * A packet of W wire bytes may leave when the credit covers min(W, burst); leaving costs W.
//   Packets larger than the burst therefore go one at a time and leave a debt.
// * No departure burst exceeds the allowance: in any window of length d the bytes sent are at
//   most burst + Rc*(d + 1 ns)/8. The 1 ns is the clock quantum; the bucket holds one extra
//   nanosecond of credit so that departures rounded up to whole nanoseconds do not lose rate.
// * set_rate() settles the credit earned so far at the old rate; from then on credit accrues at
//   the new rate, so the next packet after a change waits for its missing credit at the new rate.
// * A new pacer starts with exactly the burst allowance. A burst of 1 byte is strict pacing: every packet
//   waits W*8/Rc after the previous one.
#pragma once

#include <cstdint>

#include "lib/time.hpp"

namespace roce::cc {

// The bytes a frame occupies on an Ethernet link: the frame from the destination MAC through the
// ICRC (what proto::build_frame() writes), plus the 4-byte FCS, 8 bytes of preamble and SFD, and
// the 12-byte inter-frame gap. Pacing and the DCQCN byte counter both use this, so Rc = C is
// exactly the line rate.
constexpr std::uint32_t link_bytes(std::uint32_t frame_bytes) { return frame_bytes + 4 + 8 + 12; }

class Pacer {
 public:
  static constexpr std::uint32_t kMaxBurstBytes = 100'000'000;
  static constexpr std::uint32_t kMaxPacketBytes = 1u << 20;  // larger values are clamped

  Pacer(double rate_bps, std::uint32_t burst_bytes, Nanos now = 0);

  void set_rate(Nanos now, double rate_bps);
  bool may_send(Nanos now, std::uint32_t wire_bytes) const;
  // The first time at which may_send() holds (kNever at rate 0); a value <= now means now.
  Nanos earliest_departure(std::uint32_t wire_bytes) const;
  void on_sent(Nanos now, std::uint32_t wire_bytes);

  double rate_bps() const { return static_cast<double>(rate_); }
  std::uint32_t burst_bytes() const { return burst_; }

 private:
  static constexpr std::int64_t kNanobitsPerByte = 8'000'000'000;

  std::int64_t credit_at(Nanos now) const;
  std::int64_t need(std::uint32_t wire_bytes) const;

  std::int64_t rate_ = 0;    // bit/s
  std::uint32_t burst_ = 0;  // bytes
  std::int64_t cap_ = 0;     // nanobits
  std::int64_t credit_ = 0;  // nanobits, negative while in debt
  Nanos last_ = 0;           // time credit_ was settled
};

}  // namespace roce::cc
