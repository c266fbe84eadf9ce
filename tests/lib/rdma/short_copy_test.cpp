// copy_short (lib/rdma/short_copy.hpp): the run's WRITE ONLY copies payloads of up to 64 bytes
// with it instead of memcpy. Every length at every alignment of source and destination: the
// bytes land as memcpy's would, and nothing before or after the destination is written.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "lib/rdma/short_copy.hpp"

namespace roce::test::short_copy_test {
namespace {

TEST(ShortCopy, EveryLengthAtEveryAlignmentCopiesExactlyItsBytes) {
  constexpr std::size_t kGuard = 80;
  for (std::size_t n = 0; n <= rdma::kShortCopyMax; ++n) {
    for (std::size_t src_at = 0; src_at < 16; ++src_at) {
      for (std::size_t dst_at = 0; dst_at < 16; ++dst_at) {
        std::vector<std::byte> src(kGuard * 2 + 16);
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(static_cast<unsigned char>(i * 7 + 1));
        std::vector<std::byte> dst(kGuard * 2 + 16 + rdma::kShortCopyMax, std::byte{0xEE});
        std::vector<std::byte> want = dst;
        std::memcpy(want.data() + kGuard + dst_at, src.data() + src_at, n);
        rdma::copy_short(dst.data() + kGuard + dst_at, src.data() + src_at, n);
        ASSERT_EQ(dst, want) << "n " << n << ", source at " << src_at << ", destination at " << dst_at;
      }
    }
  }
}

}  // namespace
}  // namespace roce::test::short_copy_test
