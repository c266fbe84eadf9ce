// When each frame of a paced stream leaves, counted from the first one: frame k leaves once the
// link has had time to carry the k frames before it at the rate. Times come from exact counts
// (frames, or wire bits) so there is no drift over long runs; no clock is read here.
#pragma once

#include <cstdint>

#include "apps/gen/raw/raw_stream.hpp"
#include "lib/time.hpp"

namespace roce::gen {

// What a frame occupies on an Ethernet link besides its bytes: FCS 4, preamble and SFD 8,
// inter-frame gap 12 (the same accounting as cc::link_bytes).
inline constexpr std::uint32_t kWireOverheadBytes = 24;
constexpr std::uint64_t wire_bits(std::size_t frame_bytes) { return (frame_bytes + kWireOverheadBytes) * 8; }

class StreamClock {
 public:
  explicit StreamClock(const Rate& r) : rate_(r) {}
  // Offset of the next frame's departure from the first frame's, in ns; 0 when not paced.
  Nanos next_departure() const;
  void on_sent(std::size_t frame_bytes) {
    ++frames_;
    bits_ += wire_bits(frame_bytes);
  }
  bool paced() const { return rate_.kind != Rate::Kind::Unlimited; }
  std::uint64_t frames() const { return frames_; }

 private:
  Rate rate_;
  std::uint64_t frames_ = 0;
  std::uint64_t bits_ = 0;
};

}  // namespace roce::gen
