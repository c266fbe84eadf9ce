// copy_payload_bytes (lib/rdma/short_copy.hpp): memcpy's result for every length up to past its
// inline limit, at every misalignment of source and destination, and not one byte outside.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "lib/rdma/short_copy.hpp"

namespace roce::test::short_copy_test {
namespace {

constexpr std::size_t kGuard = 48;

TEST(ShortCopy, EveryLengthAndAlignmentCopiesExactlyItsBytes) {
  constexpr std::size_t kMax = rdma::kShortCopyBytes + 40;
  std::vector<std::byte> src(kMax + 64), dst(kMax + 64 + 2 * kGuard), want(dst.size());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
  for (std::size_t n = 0; n <= kMax; ++n) {
    for (std::size_t s = 0; s < 16; ++s) {
      for (std::size_t d = 0; d < 16; ++d) {
        for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = want[i] = static_cast<std::byte>(0xA5 ^ i);
        std::memcpy(want.data() + kGuard + d, src.data() + s, n);
        rdma::copy_payload_bytes(dst.data() + kGuard + d, src.data() + s, n);
        ASSERT_EQ(dst, want) << "length " << n << ", source offset " << s << ", destination offset " << d;
      }
    }
  }
}

// Each byte of the source lands at its own place (a copy that moved the right bytes to the wrong
// half, or wrote one half twice, would pass a test of constant data).
TEST(ShortCopy, TheBytesKeepTheirOrder) {
  for (std::size_t n = 1; n <= rdma::kShortCopyBytes; ++n) {
    std::vector<std::byte> src(n), dst(n, std::byte{0});
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<std::byte>(i + 1);
    rdma::copy_payload_bytes(dst.data(), src.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], src[i]) << "length " << n << ", byte " << i;
  }
}

}  // namespace
}  // namespace roce::test::short_copy_test
