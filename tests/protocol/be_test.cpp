// Big-endian fields: the run-time path (one load or store and a byte swap for whole-width
// fields) and the constant-evaluated byte loop give the same bytes and values, at every width.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

#include "protocol/be.hpp"

namespace roce::proto {
namespace {

// Evaluated at compile time: the byte loop.
static_assert(Be16::of(0x1234).bytes == std::array<std::uint8_t, 2>{0x12, 0x34});
static_assert(Be32::of(0x12345678u).get() == 0x12345678u);
static_assert(Be64::of(0x0102030405060708ull).bytes == std::array<std::uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8});
static_assert(Be24::of(0xABCDEFu).bytes == std::array<std::uint8_t, 3>{0xAB, 0xCD, 0xEF});

// The expected bytes, most significant first, computed without BeInt.
template <std::size_t N, typename T>
std::array<std::uint8_t, N> network_order(T v) {
  std::array<std::uint8_t, N> b{};
  for (std::size_t i = 0; i < N; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * (N - 1 - i)));
  return b;
}

template <std::size_t N, typename T>
void round_trips(std::mt19937_64& rng) {
  for (int k = 0; k < 1000; ++k) {
    T v = static_cast<T>(rng());
    if constexpr (N < sizeof(T)) v = static_cast<T>(v & ((T{1} << (8 * N)) - 1));
    volatile T opaque = v;  // keeps the run-time path
    BeInt<N, T> b;
    b.set(opaque);
    ASSERT_EQ(b.bytes, (network_order<N, T>(v))) << "value " << static_cast<std::uint64_t>(v);
    ASSERT_EQ(b.get(), v);
    ASSERT_TRUE((BeInt<N, T>::of(opaque) == b));
  }
}

TEST(BeInt, RunTimeBytesAreNetworkOrderAtEveryWidth) {
  std::mt19937_64 rng(26);
  round_trips<2, std::uint16_t>(rng);
  round_trips<3, std::uint32_t>(rng);
  round_trips<4, std::uint32_t>(rng);
  round_trips<8, std::uint64_t>(rng);
}

TEST(BeInt, RunTimeGetReadsUnalignedFields) {
  // A field at an odd offset of a frame, as packed headers put them.
  alignas(8) std::array<std::uint8_t, 16> frame{};
  for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<std::uint8_t>(0x10 + i);
  Be64 f;
  std::memcpy(&f, frame.data() + 3, sizeof f);
  EXPECT_EQ(f.get(), 0x131415161718191Aull);
  Be16 h;
  std::memcpy(&h, frame.data() + 1, sizeof h);
  EXPECT_EQ(h.get(), 0x1112);
}

// The ICRC trailer's little-endian field: the run-time store and the byte loop give the same
// bytes, least significant first.
static_assert(Le32{{0x78, 0x56, 0x34, 0x12}}.get() == 0x12345678u);
constexpr Le32 le_of(std::uint32_t v) {
  Le32 f;
  f.set(v);
  return f;
}
static_assert(le_of(0x12345678u).bytes == std::array<std::uint8_t, 4>{0x78, 0x56, 0x34, 0x12});

TEST(Le32, RunTimeBytesAreLeastSignificantFirst) {
  std::mt19937_64 rng(32);
  for (int k = 0; k < 1000; ++k) {
    const auto v = static_cast<std::uint32_t>(rng());
    volatile std::uint32_t opaque = v;  // keeps the run-time path
    Le32 f;
    f.set(opaque);
    const std::array<std::uint8_t, 4> want{static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
                                           static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 24)};
    ASSERT_EQ(f.bytes, want) << "value " << v;
    ASSERT_EQ(f.get(), v);
  }
}

}  // namespace
}  // namespace roce::proto
