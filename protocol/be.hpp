// Big-endian (network order) integer fields for wire headers. A field is a byte array with
// alignment 1, so packed header structs can sit at any offset in a frame; reads and writes go
// through get()/set() and never through raw shifts at the call site.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

namespace roce::proto {

namespace detail {
template <typename T>
constexpr T byte_swap(T v) noexcept {
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(v));
  else if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(v));
  else return static_cast<T>(__builtin_bswap64(v));
}
}  // namespace detail

template <std::size_t N, typename T>
struct BeInt {
  static_assert(N <= sizeof(T));
  std::array<std::uint8_t, N> bytes{};

  // Whole-width fields move as one load or store and a byte swap: gcc -O2 left the Be64 loop
  // as eight byte stores, and the 8-byte load that followed them stalled on store forwarding
  // (a quarter of the requester's WRITE build; docs/perf-changes.md section 31).
  constexpr T get() const noexcept {
    if constexpr (N == sizeof(T) && std::endian::native == std::endian::little) {
      if (!std::is_constant_evaluated()) {
        T v;
        std::memcpy(&v, bytes.data(), N);
        return detail::byte_swap(v);
      }
    }
    T v = 0;
    for (std::size_t i = 0; i < N; ++i) v = static_cast<T>((v << 8) | bytes[i]);
    return v;
  }
  constexpr void set(T v) noexcept {
    if constexpr (N == sizeof(T) && std::endian::native == std::endian::little) {
      if (!std::is_constant_evaluated()) {
        const T w = detail::byte_swap(v);
        std::memcpy(bytes.data(), &w, N);
        return;
      }
    }
    for (std::size_t i = N; i-- > 0;) {
      bytes[i] = static_cast<std::uint8_t>(v & 0xFF);
      v = static_cast<T>(v >> 8);
    }
  }
  static constexpr BeInt of(T v) noexcept {
    BeInt b;
    b.set(v);
    return b;
  }
  friend constexpr bool operator==(const BeInt&, const BeInt&) = default;
};

using Be16 = BeInt<2, std::uint16_t>;
using Be24 = BeInt<3, std::uint32_t>;
using Be32 = BeInt<4, std::uint32_t>;
using Be64 = BeInt<8, std::uint64_t>;
static_assert(sizeof(Be16) == 2 && sizeof(Be24) == 3 && sizeof(Be32) == 4 && sizeof(Be64) == 8);
static_assert(alignof(Be64) == 1);

// Little-endian 32-bit field: only the ICRC trailer is stored this way on the wire.
struct Le32 {
  std::array<std::uint8_t, 4> bytes{};
  // One load or store on a little-endian host, as BeInt does: the byte loop left four byte stores,
  // and the ICRC trailer is read back whole by the next frame's check (perf-changes.md section 70).
  constexpr std::uint32_t get() const noexcept {
    if constexpr (std::endian::native == std::endian::little) {
      if (!std::is_constant_evaluated()) {
        std::uint32_t v;
        std::memcpy(&v, bytes.data(), 4);
        return v;
      }
    }
    return std::uint32_t{bytes[0]} | std::uint32_t{bytes[1]} << 8 | std::uint32_t{bytes[2]} << 16 |
           std::uint32_t{bytes[3]} << 24;
  }
  constexpr void set(std::uint32_t v) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
      if (!std::is_constant_evaluated()) {
        std::memcpy(bytes.data(), &v, 4);
        return;
      }
    }
    for (auto& b : bytes) {
      b = static_cast<std::uint8_t>(v & 0xFF);
      v >>= 8;
    }
  }
};
static_assert(sizeof(Le32) == 4);

using ByteSpan = std::span<const std::byte>;
using MutableByteSpan = std::span<std::byte>;

// Copies a packed header out of a span that the caller has already bounds-checked.
template <typename H>
inline H load_header(ByteSpan s, std::size_t off) noexcept {
  H h;
  std::memcpy(&h, s.data() + off, sizeof(H));
  return h;
}

template <typename H>
inline void store_header(MutableByteSpan s, std::size_t off, const H& h) noexcept {
  std::memcpy(s.data() + off, &h, sizeof(H));
}

}  // namespace roce::proto
