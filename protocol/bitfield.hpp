// A field narrower than the big-endian integer that holds it (IBA tables give many CM fields
// as "bits 7..3 of byte 43"). Accessors of wire structs name such a field once, by shift and
// width, and read or write it through get()/set(); call sites never shift.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/be.hpp"

namespace roce::proto {

// Width bits whose least significant bit is Shift bits above bit 0 of a T.
template <typename T, unsigned Shift, unsigned Width>
struct BitField {
  static_assert(Width >= 1 && Shift + Width <= 8 * sizeof(T));
  static constexpr std::uint64_t kValueMask = Width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << Width) - 1;
  static constexpr T kMask = static_cast<T>(kValueMask << Shift);
  static constexpr T kMax = static_cast<T>(kValueMask);

  static constexpr T get(T word) noexcept { return static_cast<T>((word & kMask) >> Shift); }
  // Values wider than the field are cut to its width.
  static constexpr T set(T word, std::uint64_t value) noexcept {
    return static_cast<T>((word & static_cast<T>(~kMask)) | static_cast<T>((value & kValueMask) << Shift));
  }
};

// Reads and writes field F of a big-endian word or of a plain byte.
template <typename F, std::size_t N, typename T>
constexpr T read_field(const BeInt<N, T>& word) noexcept {
  return F::get(word.get());
}
template <typename F, std::size_t N, typename T>
constexpr void write_field(BeInt<N, T>& word, std::uint64_t value) noexcept {
  word.set(F::set(word.get(), value));
}
template <typename F>
constexpr std::uint8_t read_field(std::uint8_t byte) noexcept {
  return F::get(byte);
}
template <typename F>
constexpr void write_field(std::uint8_t& byte, std::uint64_t value) noexcept {
  byte = F::set(byte, value);
}

static_assert(BitField<std::uint8_t, 3, 5>::get(0xB0) == 0x16);
static_assert(BitField<std::uint8_t, 3, 5>::set(0x07, 0x13) == 0x9F);
static_assert(BitField<std::uint32_t, 8, 24>::get(0x00013701) == 0x137);
static_assert(BitField<std::uint32_t, 12, 20>::set(0, 0xFFFFFFFF) == 0xFFFFF000);

}  // namespace roce::proto
