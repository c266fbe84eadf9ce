#include "protocol/crc32_copy.hpp"

#include <immintrin.h>

#include <cstring>

namespace roce::proto {
namespace {

// Carry-less folding of the reflected CRC-32: a 128-bit lane [lo | hi] moved `distance` bits
// further down the message is lo * x^(distance+32) + hi * x^(distance-32), modulo P. The
// constants are those powers of x modulo P, bit-reflected and shifted left once, as the
// reflected carry-less product expects.
constexpr std::uint64_t kPoly = 0x104C11DB7;  // x^32 + ... + 1, normal form

constexpr std::uint64_t fold_constant(unsigned exponent) {
  std::uint64_t r = 1;
  for (unsigned i = 0; i < exponent; ++i) {
    r <<= 1;
    if (r & (std::uint64_t{1} << 32)) r ^= kPoly;
  }
  std::uint64_t reflected = 0;
  for (unsigned b = 0; b < 32; ++b)
    if (r & (std::uint64_t{1} << b)) reflected |= std::uint64_t{1} << (31 - b);
  return reflected << 1;
}

// Four 64-byte accumulators: each folds over a 256-byte stride.
constexpr unsigned kStrideBits = 4 * 512;
constexpr std::uint64_t kFoldLo = fold_constant(kStrideBits + 32);
constexpr std::uint64_t kFoldHi = fold_constant(kStrideBits - 32);
constexpr std::size_t kStride = 256;
constexpr std::size_t kOnePassFrom = 2 * kStride;  // below this the setup and the final CRC dominate
// How far ahead of its loads the copy asks for the source: two strides (eight lines). A received
// frame comes from memory (a NIC's DMA, or the responder case's pool of 30 MB on a host whose L3
// keeps less of it), and what the receive path asked for a frame ahead has not all come; a few
// lines in flight at a time keep the loads fed (docs/perf-changes.md section 91: 256 B, 768 B and
// 1 KiB ahead measured behind 512 B).
constexpr std::size_t kSourceAhead = 2 * kStride;

bool detect_one_pass() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
}

const bool kOnePass = detect_one_pass();

__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i fold(__m512i acc, __m512i k, __m512i next) {
  const __m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
  const __m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11);
  return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);  // lo ^ hi ^ next
}

constexpr std::size_t kLine = 64;

// Not a lambda in one_pass: a lambda does not inherit its target attribute.
__attribute__((target("avx512f"))) inline __m512i copy_line(std::byte* dst, const std::byte* src, std::size_t at) {
  const __m512i v = _mm512_loadu_si512(src + at);
  _mm512_storeu_si512(dst + at, v);
  return v;
}

// `len` is a multiple of kStride and at least kStride. The destination is not asked for ahead
// here (crc32_copy's `ahead`): on this host a whole packet's lines for writing, asked a packet
// ahead, took the memory's slots from the source's loads, and without them the copy with its
// source asked for ahead ran 20-30 % faster (section 91); the stores' reads for ownership
// overlap in the store queue as they go.
__attribute__((target("avx512f,vpclmulqdq"))) std::uint32_t one_pass(std::uint32_t crc, std::byte* dst,
                                                                      const std::byte* src, std::size_t len) {
  constexpr auto lo = static_cast<long long>(kFoldLo), hi = static_cast<long long>(kFoldHi);
  const __m512i k = _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);  // [lo | hi] in every 128-bit lane
  // The lines the loop's own prefetches do not reach: its first two strides after this one.
  for (std::size_t l = kStride; l < kStride + kSourceAhead && l < len; l += kLine) __builtin_prefetch(src + l, 0, 3);
  // A CRC from state s equals one from state 0 over the data with s in its first four bytes;
  // state 0 is what folding keeps (leading zeros do not change it).
  __m512i a0 = _mm512_xor_si512(copy_line(dst, src, 0), _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  __m512i a1 = copy_line(dst, src, 64);
  __m512i a2 = copy_line(dst, src, 128);
  __m512i a3 = copy_line(dst, src, 192);
  // The prefetches stay in this loop: GCC 12 takes a helper made of prefetches alone for one
  // without effects and drops the call.
  for (std::size_t at = kStride; at < len; at += kStride) {
    if (at + kSourceAhead < len)
      for (std::size_t l = at + kSourceAhead; l < at + kSourceAhead + kStride; l += kLine) __builtin_prefetch(src + l, 0, 3);
    a0 = fold(a0, k, copy_line(dst, src, at));
    a1 = fold(a1, k, copy_line(dst, src, at + 64));
    a2 = fold(a2, k, copy_line(dst, src, at + 128));
    a3 = fold(a3, k, copy_line(dst, src, at + 192));
  }
  // The accumulators stand for the last 256 bytes of a message with the same CRC from state 0.
  alignas(64) std::byte image[kStride];
  _mm512_store_si512(image, a0);
  _mm512_store_si512(image + 64, a1);
  _mm512_store_si512(image + 128, a2);
  _mm512_store_si512(image + 192, a3);
  return crc32_isal(~std::uint32_t{0}, image, kStride);  // ~0 in: state 0
}

}  // namespace

bool crc32_copy_is_one_pass() noexcept { return kOnePass; }

std::uint32_t crc32_copy(CrcBackend backend, std::uint32_t crc, std::byte* dst, const std::byte* src, std::size_t len,
                         WriteAhead ahead) noexcept {
  std::size_t done = 0;
  if (backend == CrcBackend::Isal && kOnePass && len >= kOnePassFrom) {
    done = len - len % kStride;
    crc = one_pass(crc, dst, src, done);
    ahead = {};  // not asked for on this path (one_pass)
  }
  std::memcpy(dst + done, src + done, len - done);
  crc = crc32(backend, crc, dst + done, len - done);
  prefetch_for_write(ahead);
  return crc;
}

}  // namespace roce::proto
