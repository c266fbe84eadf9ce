// What a raw run produced, counted per crafted frame: for the summary line and for tests.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "apps/gen/raw/frame_generator.hpp"
#include "lib/time.hpp"

namespace roce::gen {

struct CraftStats {
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;
  std::uint64_t ce = 0;
  std::uint64_t bad_icrc = 0;
  std::array<std::uint64_t, 256> by_opcode{};
  Nanos first_ns = 0;  // departure offsets of the first and last frame
  Nanos last_ns = 0;

  void count(const CraftedFrame& f, Nanos departure) {
    if (frames == 0) first_ns = departure;
    last_ns = departure;
    ++frames;
    bytes += f.length;
    ce += f.ce;
    bad_icrc += f.bad_icrc;
    ++by_opcode[f.opcode];
  }
};

// "1000 frames, 1058000 bytes, 999.0 us from first to last (1.000 Mpps, 8.66 Gb/s on the
// wire); CE 10; bad ICRC 5" then one "  OPCODE count" line per opcode used.
std::string summary(const CraftStats& s);

}  // namespace roce::gen
