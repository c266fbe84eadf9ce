#include "apps/gen/raw/craft_stats.hpp"

#include <cstdio>

#include "apps/gen/raw/stream_clock.hpp"
#include "protocol/opcode.hpp"

namespace roce::gen {

std::string summary(const CraftStats& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu frames, %llu bytes", static_cast<unsigned long long>(s.frames),
                static_cast<unsigned long long>(s.bytes));
  std::string out = buf;
  const Nanos span = s.last_ns - s.first_ns;
  if (s.frames > 1 && span > 0) {
    // Rates over the intervals between frames: n frames span n-1 gaps.
    const double secs = static_cast<double>(span) / 1e9;
    const double pps = static_cast<double>(s.frames - 1) / secs;
    const double gbps = static_cast<double>(wire_bits(s.bytes / s.frames)) * pps / 1e9;
    std::snprintf(buf, sizeof buf, ", %.1f us from first to last (%.3f Mpps, %.3f Gb/s on the wire)",
                  static_cast<double>(span) / 1e3, pps / 1e6, gbps);
    out += buf;
  }
  out += "; CE " + std::to_string(s.ce) + "; bad ICRC " + std::to_string(s.bad_icrc) + "\n";
  for (unsigned op = 0; op < 256; ++op)
    if (s.by_opcode[op]) out += "  " + proto::opcode_name(static_cast<std::uint8_t>(op)) + " " + std::to_string(s.by_opcode[op]) + "\n";
  return out;
}

}  // namespace roce::gen
