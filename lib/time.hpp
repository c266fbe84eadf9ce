// Time in lib/ is an integer count of nanoseconds handed in by the caller (a test's virtual
// clock, the dataplane's TSC); nothing in lib/ reads a clock itself, so tests replay every timer
// behaviour exactly.
#pragma once

#include <cstdint>
#include <limits>

namespace roce {

using Nanos = std::int64_t;
// A deadline that never arrives (a disarmed timer, or a disabled period).
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();
inline constexpr Nanos kMicro = 1'000;
inline constexpr Nanos kMilli = 1'000'000;
inline constexpr Nanos kSecond = 1'000'000'000;

constexpr Nanos from_us(std::int64_t us) { return us * kMicro; }
constexpr Nanos from_ms(std::int64_t ms) { return ms * kMilli; }

// `base + period`, saturating at kNever so that a disabled period stays disabled. A period
// that is not positive also gives kNever: configurations are checked against that, and this
// keeps one that slipped through from re-arming a timer at the same instant forever.
constexpr Nanos after(Nanos base, Nanos period) {
  if (base == kNever || period <= 0 || period == kNever || base > kNever - period) return kNever;
  return base + period;
}

}  // namespace roce
