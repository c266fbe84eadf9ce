// Nanoseconds from the TSC: one multiply and shift per read, so the poll loop can take the
// time every iteration. This is the clock the dataplane injects into lib/.
#pragma once

#include <rte_cycles.h>

#include <cstdint>

#include "lib/time.hpp"

namespace roce::dp {

__extension__ using Uint128 = unsigned __int128;

class TscClock {
 public:
  TscClock() : hz_(rte_get_tsc_hz()), start_(rte_rdtsc()) {
    // ns = cycles * mult >> 32, exact enough for microsecond timers over days.
    mult_ = static_cast<std::uint64_t>((1'000'000'000.0 * 4294967296.0) / static_cast<double>(hz_));
  }
  Nanos now() const {
    const std::uint64_t c = rte_rdtsc() - start_;
    return static_cast<Nanos>((static_cast<Uint128>(c) * mult_) >> 32);
  }
  std::uint64_t hz() const { return hz_; }

 private:
  std::uint64_t hz_;
  std::uint64_t start_;
  std::uint64_t mult_ = 0;
};

}  // namespace roce::dp
