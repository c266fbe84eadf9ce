// The carry-less kernel for short buffers (crc32_short.hpp) against the portable CRC and ISA-L:
// every length 0..300 at every start within a cache line, random initial values; a buffer at
// the very start and at the very end of a mapping (the kernel's masked load of the first chunk
// must not touch the bytes before it); batches of every size with mixed lengths, written over
// their own input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "protocol/crc32.hpp"
#include "protocol/crc32_short.hpp"
#include "tests/support/guarded_page.hpp"

namespace roce::proto::crc32_short_test {
namespace {

constexpr std::size_t kPastMax = 300;

TEST(Crc32Short, EveryLengthAndStartGivesTheReferenceCrc) {
  if (!crc32_short_has_clmul()) GTEST_SKIP() << "this CPU has no AVX-512 VPCLMULQDQ: crc32_short is crc32_isal here";
  std::mt19937 rng(26);
  std::vector<std::byte> buf(kPastMax + 64);
  for (std::size_t len = kCrc32ShortMin; len <= kCrc32ShortMax; ++len) {
    for (std::size_t start = 0; start < 64; start += 7) {
      for (auto& b : buf) b = static_cast<std::byte>(rng());
      const auto crc = static_cast<std::uint32_t>(rng());
      const std::uint32_t want = crc32_portable(crc, buf.data() + start, len);
      ASSERT_EQ(crc32_short(crc, buf.data() + start, len), want) << "length " << len << " start " << start;
      ASSERT_EQ(crc32_isal(crc, buf.data() + start, len), want) << "length " << len << " start " << start;
    }
  }
  // Single bits, so that every constant of the table is exercised alone.
  for (std::size_t len : {kCrc32ShortMin, std::size_t{17}, std::size_t{63}, std::size_t{64}, std::size_t{65}, kCrc32ShortMax}) {
    for (std::size_t bit = 0; bit < 8 * len; ++bit) {
      std::vector<std::byte> one(len);
      one[bit / 8] = static_cast<std::byte>(1u << (bit % 8));
      ASSERT_EQ(crc32_short(0, one.data(), len), crc32_portable(0, one.data(), len)) << "length " << len << " bit " << bit;
    }
    // The initial register alone, every bit of it.
    const std::vector<std::byte> zeros(len);
    for (int bit = 0; bit < 32; ++bit)
      ASSERT_EQ(crc32_short(1u << bit, zeros.data(), len), crc32_portable(1u << bit, zeros.data(), len))
          << "length " << len << " register bit " << bit;
  }
}

TEST(Crc32Short, ABufferAtTheEdgesOfItsMappingIsReadWithinIt) {
  const roce::test::GuardedPage guarded;
  ASSERT_TRUE(guarded.ok());
  const std::size_t page = guarded.size();
  std::byte* mid = guarded.data();
  std::mt19937 rng(27);
  for (std::size_t i = 0; i < page; ++i) mid[i] = static_cast<std::byte>(rng());
  for (std::size_t len = 0; len <= kPastMax; ++len) {
    const auto crc = static_cast<std::uint32_t>(rng());
    EXPECT_EQ(crc32_short(crc, mid, len), crc32_portable(crc, mid, len)) << "at the start, length " << len;
    EXPECT_EQ(crc32_short(crc, mid + page - len, len), crc32_portable(crc, mid + page - len, len)) << "at the end, length " << len;
  }
}

TEST(Crc32Short, ABatchOfEverySizeAndMixedLengthsGivesEachBuffersCrc) {
  std::mt19937 rng(28);
  std::vector<std::vector<std::byte>> bufs(40);
  for (std::size_t n = 0; n <= bufs.size(); ++n) {
    std::vector<const std::byte*> data;
    std::vector<std::uint32_t> len, crc, want;
    for (std::size_t i = 0; i < n; ++i) {
      bufs[i].resize(rng() % (kPastMax + 1));
      for (auto& b : bufs[i]) b = static_cast<std::byte>(rng());
      data.push_back(bufs[i].data());
      len.push_back(static_cast<std::uint32_t>(bufs[i].size()));
      crc.push_back(static_cast<std::uint32_t>(rng()));
      want.push_back(crc32_portable(crc.back(), bufs[i].data(), bufs[i].size()));
    }
    crc.push_back(0xA5A5A5A5u);  // past the batch: untouched
    crc32_short_batch(crc.data(), data.data(), len.data(), n, crc.data());
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(crc[i], want[i]) << "batch of " << n << ", buffer " << i << ", length " << len[i];
    EXPECT_EQ(crc[n], 0xA5A5A5A5u) << "batch of " << n;
  }
}

// The lead mask: each buffer's first 64 bytes ANDed with it, as a copy masked by hand reads.
TEST(Crc32Short, ALeadMaskIsAppliedToTheFirst64BytesOnly) {
  if (!crc32_short_has_clmul()) GTEST_SKIP() << "this CPU has no AVX-512 VPCLMULQDQ: crc32_short_lead_batch returns false here";
  std::mt19937 rng(29);
  Crc32LeadMask lead{};
  for (auto& b : lead.bytes) b = 0xFF;
  for (std::size_t i = 64; i < 128; ++i) lead.bytes[i] = static_cast<std::uint8_t>(rng());
  std::vector<std::byte> buf(kCrc32ShortMax + 64);
  for (std::size_t len = kCrc32ShortMin; len <= kCrc32ShortMax; ++len) {
    for (auto& b : buf) b = static_cast<std::byte>(rng());
    const std::byte* at = buf.data() + (len % 61);
    std::vector<std::byte> masked(at, at + len);
    for (std::size_t i = 0; i < std::min<std::size_t>(len, 64); ++i) masked[i] &= static_cast<std::byte>(lead.bytes[64 + i]);
    std::uint32_t crc = static_cast<std::uint32_t>(rng());
    const std::uint32_t want = crc32_portable(crc, masked.data(), len);
    const auto l = static_cast<std::uint32_t>(len);
    ASSERT_TRUE(crc32_short_lead_batch(&crc, &at, &l, 1, lead, &crc));
    ASSERT_EQ(crc, want) << "length " << len;
  }
}

}  // namespace
}  // namespace roce::proto::crc32_short_test
