// Time in lib/ is an integer count of nanoseconds handed in by the caller (a test's virtual
// clock, the dataplane's TSC); nothing in lib/ reads a clock itself.
#pragma once

#include <cstdint>
#include <limits>

namespace roce {

using Nanos = std::int64_t;
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();
inline constexpr Nanos kMicro = 1'000;
inline constexpr Nanos kMilli = 1'000'000;
inline constexpr Nanos kSecond = 1'000'000'000;

}  // namespace roce
