// crc32_copy against a copy and the portable CRC: every length class of the one-pass path
// (below it, exact strides, strides plus a tail), misaligned ends, CRCs carried in, and the
// next destination asked for ahead.
#include "protocol/crc32_copy.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace roce::proto::crc32_copy_test {
namespace {

TEST(Crc32Copy, CopiesAndMatchesThePortableCrcForEveryBackend) {
  std::mt19937 rng(3);
  std::vector<std::byte> src(10000), dst(10000);
  for (auto& b : src) b = static_cast<std::byte>(rng());
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 1100; ++n) lengths.push_back(n);
  for (std::size_t n : {2047u, 2048u, 2049u, 4095u, 4096u, 4097u, 4100u, 8191u, 8192u, 9000u}) lengths.push_back(n);
  for (const CrcBackend backend : {CrcBackend::Isal, CrcBackend::Zlib, CrcBackend::Portable}) {
    for (const std::size_t n : lengths) {
      const std::size_t from = rng() % 64, to = rng() % 64;
      const std::uint32_t carried = n % 3 == 0 ? 0 : static_cast<std::uint32_t>(rng());
      std::fill(dst.begin(), dst.end(), std::byte{0});
      // Asking ahead for the bytes after the copy (shorter, as long, longer) writes nothing there.
      const WriteAhead ahead{dst.data() + to + n, std::min<std::size_t>(dst.size() - to - n, n * (n % 3) / 2)};
      const std::uint32_t got = crc32_copy(backend, carried, dst.data() + to, src.data() + from, n, ahead);
      ASSERT_EQ(got, crc32_portable(carried, src.data() + from, n)) << to_string(backend) << " length " << n;
      ASSERT_EQ(std::memcmp(dst.data() + to, src.data() + from, n), 0) << "length " << n;
      // Nothing written past the end.
      for (std::size_t i = to + n; i < std::min(dst.size(), to + n + 64); ++i) ASSERT_EQ(dst[i], std::byte{0});
    }
  }
}

TEST(Crc32Copy, OnePassPathIsTheOneTestedWhereTheCpuHasIt) {
  if (!crc32_copy_is_one_pass()) GTEST_SKIP() << "this CPU has no AVX-512 with VPCLMULQDQ: only the copy-then-CRC path ran";
  // A 4 KiB payload, the case the responder uses it for, with the CRC of headers carried in.
  std::vector<std::byte> src(4096), dst(4096);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 131 + 7);
  const std::uint32_t headers = crc32_portable(0, src.data(), 48);
  EXPECT_EQ(crc32_copy(CrcBackend::Isal, headers, dst.data(), src.data(), src.size()),
            crc32_portable(headers, src.data(), src.size()));
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace roce::proto::crc32_copy_test
