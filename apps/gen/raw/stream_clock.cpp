#include "apps/gen/raw/stream_clock.hpp"

#include <cmath>

namespace roce::gen {

Nanos StreamClock::next_departure() const {
  // long double keeps 64 bits of mantissa: exact to the ns for any run a test or a user makes.
  switch (rate_.kind) {
    case Rate::Kind::Unlimited: return 0;
    case Rate::Kind::Pps: return std::llround(static_cast<long double>(frames_) * 1e9L / static_cast<long double>(rate_.value));
    case Rate::Kind::Bps: return std::llround(static_cast<long double>(bits_) * 1e9L / static_cast<long double>(rate_.value));
  }
  return 0;
}

}  // namespace roce::gen
