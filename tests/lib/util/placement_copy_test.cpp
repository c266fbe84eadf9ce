#include "lib/util/placement_copy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace roce {
namespace {

// Every destination alignment against lengths on both sides of the streaming threshold and of
// the 128-byte loop: the copy lands exactly, and the guard bytes around it stay untouched.
TEST(PlacementCopy, EveryAlignmentAndLengthAroundTheThresholdsCopiesExactly) {
  const std::vector<std::size_t> lengths{0,    1,    31,   63,   127,  kStreamingCopyMin - 1, kStreamingCopyMin,
                                         kStreamingCopyMin + 1, 1100, 2047, 4096, 4097, 4096 + 127, 9000};
  std::vector<std::byte> src(9000 + 128);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 131 + 7) & 0xFF);
  constexpr std::size_t kGuard = 64;
  constexpr auto kFill = std::byte{0xA5};
  for (const std::size_t len : lengths) {
    for (std::size_t dst_align = 0; dst_align < 64; ++dst_align) {
      for (const std::size_t src_align : {std::size_t{0}, std::size_t{3}, std::size_t{32}}) {
        std::vector<std::byte> dst(len + 2 * kGuard + 64, kFill);
        std::byte* at = dst.data() + kGuard + dst_align;
        placement_copy(at, src.data() + src_align, len);
        for (std::size_t i = 0; i < len; ++i)
          ASSERT_EQ(at[i], src[src_align + i]) << "len " << len << " dst align " << dst_align << " byte " << i;
        for (std::byte* p = dst.data(); p < at; ++p) ASSERT_EQ(*p, kFill) << "len " << len << " wrote before";
        for (std::byte* p = at + len; p < dst.data() + dst.size(); ++p)
          ASSERT_EQ(*p, kFill) << "len " << len << " wrote after";
      }
    }
  }
}

}  // namespace
}  // namespace roce
