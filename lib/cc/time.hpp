// Time for the congestion-control code: integer nanoseconds from an injected clock. Nothing in
// lib/cc reads a clock; every event carries `now`, so tests replay timer behaviour exactly.
#pragma once

#include <cstdint>
#include <limits>

namespace roce::cc {

using Nanos = std::int64_t;

// A deadline that never arrives (a disarmed timer, or a disabled period).
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

constexpr Nanos from_us(std::int64_t us) { return us * 1000; }
constexpr Nanos from_ms(std::int64_t ms) { return ms * 1'000'000; }

// `base + period`, saturating at kNever so that a disabled period stays disabled. A period
// that is not positive also gives kNever: check() rejects such configurations, and this keeps
// one that slipped through from re-arming a timer at the same instant forever.
constexpr Nanos after(Nanos base, Nanos period) {
  if (base == kNever || period <= 0 || period == kNever || base > kNever - period) return kNever;
  return base + period;
}

}  // namespace roce::cc
