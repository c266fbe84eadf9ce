#include "protocol/crc32_short.hpp"

#include <array>

#include "protocol/crc32.hpp"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from an "undefined" vector that its own -W(maybe-)uninitialized
// then reports (a known false positive of the headers, not of this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define ROCE_CRC32_SHORT_CLMUL 1
#endif

namespace roce::proto {
namespace {

// Notation: a register value whose bit i is the coefficient of x^(a - i) is "at a". The CRC's
// bit order is reflected: 8 bytes loaded little-endian at offset o of a buffer of L bytes are at
// 8 (L - o) - 1, the CRC register is at 31, and a carry-less product of values at a and b is at
// a + b. The CRC register after the buffer, from zero, is M x^32 mod P (M the buffer's
// polynomial); the kernel gathers a 96-bit value at 95 congruent to it, folds it to 64 bits and
// reduces those (Barrett).

constexpr std::uint32_t kReflectedPoly = 0xEDB88320u;

// x^e mod P at 31 (a CRC register's form).
constexpr std::uint32_t x_pow(int e) {
  std::uint32_t r = 0x80000000u;  // 1
  for (int i = 0; i < e; ++i) r = (r >> 1) ^ ((r & 1u) ? kReflectedPoly : 0u);
  return r;
}
static_assert(x_pow(32) == kReflectedPoly);

// P (degree 32) and floor(x^64 / P), both at 32, for the Barrett reduction.
constexpr std::uint64_t kPolyNormal = 0x104C11DB7ull;
constexpr std::uint64_t reflect33(std::uint64_t v) {
  std::uint64_t r = 0;
  for (int d = 0; d <= 32; ++d)
    if ((v >> d) & 1u) r |= std::uint64_t{1} << (32 - d);
  return r;
}
__extension__ typedef unsigned __int128 Uint128;  // x^64 needs 65 bits
constexpr std::uint64_t mu_normal() {
  Uint128 rem = static_cast<Uint128>(1) << 64;
  std::uint64_t q = 0;
  for (int d = 64; d >= 32; --d)
    if ((rem >> d) & 1u) {
      q |= std::uint64_t{1} << (d - 32);
      rem ^= static_cast<Uint128>(kPolyNormal) << (d - 32);
    }
  return q;
}
constexpr std::uint64_t kPolyAt32 = reflect33(kPolyNormal);
constexpr std::uint64_t kMuAt32 = reflect33(mu_normal());
static_assert(kPolyAt32 == 0x1DB710641ull && kMuAt32 == 0x1F7011641ull);

// Block j from the end (16 bytes; the first block zero-padded in front): its low 8 bytes are
// at 128 j + 127; times K at 31 they are at 128 j + 158, read at 95 that is the product over
// x^(128 j + 63), which is congruent to the 8 bytes times x^32 when K = x^(128 j + 95) mod P.
// Its high 8 bytes, at 128 j + 63, likewise with K = x^(128 j + 31).
struct alignas(16) FoldPair {
  std::uint64_t lo, hi;
};
constexpr std::size_t kMaxBlocks = kCrc32ShortMax / 16;
constexpr std::array<FoldPair, kMaxBlocks> fold_table() {
  std::array<FoldPair, kMaxBlocks> t{};
  for (std::size_t j = 0; j < kMaxBlocks; ++j)
    t[j] = FoldPair{x_pow(static_cast<int>(128 * j + 95)), x_pow(static_cast<int>(128 * j + 31))};
  return t;
}
constexpr auto kFold = fold_table();
// The 96-bit value's top 32 bits (at 95) onto its low 64 (at 63): times x^63 at 31.
constexpr std::uint64_t kX63 = x_pow(63);

// Chunk c from the end (64 bytes): its four blocks' pairs, the lowest address (block 4c + 3)
// first, as one 512-bit load.
struct alignas(64) FoldChunk {
  std::array<FoldPair, 4> block;
};
constexpr std::size_t kMaxChunks = kCrc32ShortMax / 64;
constexpr std::array<FoldChunk, kMaxChunks> chunk_table() {
  std::array<FoldChunk, kMaxChunks> t{};
  for (std::size_t c = 0; c < kMaxChunks; ++c)
    for (std::size_t l = 0; l < 4; ++l) t[c].block[l] = kFold[4 * c + 3 - l];
  return t;
}
constexpr auto kFoldChunk = chunk_table();
// The initial register r of a buffer of L bytes adds r x^(8 L) to the CRC register: r at 31
// times x^(8 L - 1) at 31 is at 62, read at 63 (with W) that is r x^(8 L).
constexpr std::array<std::uint64_t, kCrc32ShortMax + 1> register_table() {
  std::array<std::uint64_t, kCrc32ShortMax + 1> t{};
  std::uint32_t r = 0x80000000u;  // x^0; entry L is x^(8 L - 1), entry 0 unused
  for (std::size_t l = 1; l <= kCrc32ShortMax; ++l) {
    for (int i = 0; i < (l == 1 ? 7 : 8); ++i) r = (r >> 1) ^ ((r & 1u) ? kReflectedPoly : 0u);
    t[l] = r;
  }
  return t;
}
constexpr auto kRegister = register_table();
static_assert(kRegister[1] == x_pow(7) && kRegister[10] == x_pow(79));

#if ROCE_CRC32_SHORT_CLMUL

#define ROCE_CLMUL_TARGET gnu::target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1")

// The buffer in 64-byte chunks from its end, the first one partial (its bytes before the buffer
// masked off; a masked load does not touch them), every block times its pair, all XORed.
// With `lead`, the chunks over the buffer's first 64 bytes are ANDed with its mask first.
[[ROCE_CLMUL_TARGET, gnu::always_inline]] inline std::uint32_t fold_short(std::uint32_t crc, const std::byte* data,
                                                                         std::size_t len, const Crc32LeadMask* lead) {
  const auto end = reinterpret_cast<std::uintptr_t>(data) + len;
  const std::size_t chunks = (len + 63) / 64;
  const std::size_t before = 64 * chunks - len;  // bytes of the first chunk before the buffer
  __m512i acc = _mm512_setzero_si512();
  for (std::size_t c = 0; c < chunks; ++c) {
    const auto* at = reinterpret_cast<const void*>(end - 64 * (c + 1));
    __m512i bytes = c + 1 == chunks ? _mm512_maskz_loadu_epi8(~std::uint64_t{0} << before, at) : _mm512_loadu_si512(at);
    const auto offset = static_cast<std::ptrdiff_t>(len) - static_cast<std::ptrdiff_t>(64 * (c + 1));  // -63.. in the buffer
    if (lead != nullptr && offset < 64) bytes = _mm512_and_si512(bytes, _mm512_loadu_si512(lead->bytes.data() + 64 + offset));
    const __m512i k = _mm512_load_si512(&kFoldChunk[c]);
    acc = _mm512_ternarylogic_epi64(acc, _mm512_clmulepi64_epi128(bytes, k, 0x00), _mm512_clmulepi64_epi128(bytes, k, 0x11), 0x96);
  }
  const __m256i half = _mm256_xor_si256(_mm512_castsi512_si256(acc), _mm512_castsi512_si256(_mm512_shuffle_i64x2(acc, acc, 0xEE)));
  const __m128i v = _mm_xor_si128(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
  // V at 95: its top 32 bits times x^63 onto its low 64, W at 63, with the initial register's
  // share. Barrett (deg W < 64): q = floor(floor(W / x^32) mu / x^32), the CRC the low 32
  // terms of W + q P.
  const __m128i consts = _mm_set_epi64x(static_cast<long long>(kMuAt32), static_cast<long long>(kX63));
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  const __m128i reg = _mm_set_epi64x(static_cast<long long>(kRegister[len]), static_cast<long long>(~crc));
  const __m128i w = _mm_ternarylogic_epi64(_mm_srli_si128(v, 4), _mm_clmulepi64_si128(_mm_and_si128(v, low32), consts, 0x00),
                                           _mm_clmulepi64_si128(reg, reg, 0x10), 0x96);
  const __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(w, low32), consts, 0x10), low32);
  const __m128i r = _mm_xor_si128(w, _mm_clmulepi64_si128(q, _mm_cvtsi64_si128(static_cast<long long>(kPolyAt32)), 0x00));
  return ~static_cast<std::uint32_t>(_mm_extract_epi32(r, 1));
}

[[ROCE_CLMUL_TARGET]] void batch_clmul(const std::uint32_t* crc, const std::byte* const* data, const std::uint32_t* len,
                                        std::size_t n, std::uint32_t* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t l = len[i];
    out[i] = l < kCrc32ShortMin   ? crc32_portable(crc[i], data[i], l)
             : l > kCrc32ShortMax ? crc32_isal(crc[i], data[i], l)
                                  : fold_short(crc[i], data[i], l, nullptr);
  }
}

[[ROCE_CLMUL_TARGET]] void batch_lead_clmul(const std::uint32_t* crc, const std::byte* const* data, const std::uint32_t* len,
                                             std::size_t n, const Crc32LeadMask& lead, std::uint32_t* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = fold_short(crc[i], data[i], len[i], &lead);
}

[[ROCE_CLMUL_TARGET]] std::uint32_t one_lead_clmul(std::uint32_t crc, const std::byte* data, std::size_t len,
                                                    const Crc32LeadMask& lead) noexcept {
  return fold_short(crc, data, len, &lead);
}

[[ROCE_CLMUL_TARGET]] std::uint32_t one_clmul(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept {
  return fold_short(crc, data, len, nullptr);
}

bool detect_clmul() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul");
}

const bool kHasClmul = detect_clmul();

#else
constexpr bool kHasClmul = false;
#endif

}  // namespace

std::atomic<bool> detail::crc32_short_on{kHasClmul};

bool crc32_short_cpu_has_clmul() noexcept { return kHasClmul; }

void crc32_short_use(bool on) noexcept { detail::crc32_short_on.store(on && kHasClmul, std::memory_order_relaxed); }

void crc32_short_batch(const std::uint32_t* crc, const std::byte* const* data, const std::uint32_t* len, std::size_t n,
                       std::uint32_t* out) noexcept {
#if ROCE_CRC32_SHORT_CLMUL
  if (crc32_short_has_clmul()) {
    batch_clmul(crc, data, len, n, out);
    return;
  }
#endif
  for (std::size_t i = 0; i < n; ++i)
    out[i] = len[i] < kCrc32ShortMin ? crc32_portable(crc[i], data[i], len[i]) : crc32_isal(crc[i], data[i], len[i]);
}

bool crc32_short_lead_batch(const std::uint32_t* crc, const std::byte* const* data, const std::uint32_t* len, std::size_t n,
                            const Crc32LeadMask& lead, std::uint32_t* out) noexcept {
#if ROCE_CRC32_SHORT_CLMUL
  if (crc32_short_has_clmul()) {
    batch_lead_clmul(crc, data, len, n, lead, out);
    return true;
  }
#endif
  (void)crc, (void)data, (void)len, (void)n, (void)lead, (void)out;
  return false;
}

std::uint32_t crc32_short(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept {
#if ROCE_CRC32_SHORT_CLMUL
  if (crc32_short_has_clmul() && len >= kCrc32ShortMin && len <= kCrc32ShortMax) return one_clmul(crc, data, len);
#endif
  return crc32_isal(crc, data, len);
}

std::uint32_t crc32_short_lead(std::uint32_t crc, const std::byte* data, std::size_t len, const Crc32LeadMask& lead) noexcept {
#if ROCE_CRC32_SHORT_CLMUL
  if (crc32_short_has_clmul()) return one_lead_clmul(crc, data, len, lead);
#endif
  // Not the callers' path (they check first): the lead bytes masked in a copy, then ISA-L.
  std::array<std::byte, 64> head;
  const std::size_t n = len < head.size() ? len : head.size();
  for (std::size_t i = 0; i < n; ++i) head[i] = data[i] & static_cast<std::byte>(lead.bytes[64 + i]);
  return crc32_isal(crc32_isal(crc, head.data(), n), data + n, len - n);
}

}  // namespace roce::proto
