// Little-endian integer fields for NVMe structures (NVMe is little-endian, unlike the IB and
// CM headers in be.hpp). Same shape as BeInt: a byte array with alignment 1, read and written
// through get()/set(). In their own namespace because be.hpp already has a proto::Le32 for the
// ICRC trailer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace roce::proto::le {

template <std::size_t N, typename T>
struct LeInt {
  static_assert(N <= sizeof(T));
  std::array<std::uint8_t, N> bytes{};

  constexpr T get() const noexcept {
    T v = 0;
    for (std::size_t i = N; i-- > 0;) v = static_cast<T>((v << 8) | bytes[i]);
    return v;
  }
  constexpr void set(T v) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
      bytes[i] = static_cast<std::uint8_t>(v & 0xFF);
      v = static_cast<T>(v >> 8);
    }
  }
  static constexpr LeInt of(T v) noexcept {
    LeInt l;
    l.set(v);
    return l;
  }
  friend constexpr bool operator==(const LeInt&, const LeInt&) = default;
};

using Le16 = LeInt<2, std::uint16_t>;
using Le24 = LeInt<3, std::uint32_t>;
using Le32 = LeInt<4, std::uint32_t>;
using Le64 = LeInt<8, std::uint64_t>;
static_assert(sizeof(Le16) == 2 && sizeof(Le24) == 3 && sizeof(Le32) == 4 && sizeof(Le64) == 8);
static_assert(alignof(Le64) == 1);

}  // namespace roce::proto::le
