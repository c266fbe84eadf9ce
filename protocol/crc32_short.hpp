// CRC-32 (crc32.hpp's, zlib conventions) of short buffers, 16 to 256 bytes, by carry-less
// multiplication with no chain between a buffer's blocks (issue 26; docs/perf-changes.md, tx15).
// ISA-L folds a short buffer block after block: each multiply waits for the one before, so an
// 80-byte ICRC tail is a chain of multiplies and reductions (BM_IcrcTailBurst: 6.7 ns a frame
// for independent calls against 2.3 ns a frame for one call over all of them). Here every
// 64-bit piece of the buffer is multiplied by its own constant, x to the power of its distance
// from the end modulo the polynomial, and the products are XORed together, then reduced once;
// several buffers in one call overlap in the out-of-order window. A requester run's datagrams
// (IcrcSealBatch) and a single frame's (sealed or verified: icrc_linear.cpp, and icrc.cpp's
// masked copy) go through it whole, their headers' per-flow bytes masked off (the lead mask). Four blocks a multiply: x86-64 with AVX-512 (F, BW, VL) and VPCLMULQDQ, chosen at run
// time; without them (valgrind's CPU, or another ISA) the batch calls crc32_isal. (With 128-bit PCLMULQDQ alone, two multiplies per 16
// bytes as ISA-L's, it measured no faster than ISA-L at 80 bytes, so there is no such path.)
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "protocol/be.hpp"

namespace roce::proto {

inline constexpr std::size_t kCrc32ShortMin = 16;
inline constexpr std::size_t kCrc32ShortMax = 256;

namespace detail {
// This CPU runs the kernel (read once at start-up) and crc32_short_use has not turned it off.
extern std::atomic<bool> crc32_short_on;
}  // namespace detail

// Whether the carry-less kernel is in use: the CPU has it and crc32_short_use left it on.
inline bool crc32_short_has_clmul() noexcept { return detail::crc32_short_on.load(std::memory_order_relaxed); }
// Whether this CPU has the kernel at all (AVX-512 F, BW, VL and VPCLMULQDQ).
bool crc32_short_cpu_has_clmul() noexcept;
// Turns the kernel off for the whole process (every caller takes its fallback, ISA-L), or back
// on where the CPU has it: the tests of the fallback paths and same-binary A/B runs
// (protocol_bench, perf_suite --icrc-clmul). Set before the threads that compute CRCs start.
void crc32_short_use(bool on) noexcept;

// out[i] = crc32(crc[i], data[i], len[i]) for i < n, every length any: below kCrc32ShortMin
// by crc32_portable (a few table look-ups), above kCrc32ShortMax or without the kernel by
// crc32_isal. `out` may be `crc`.
void crc32_short_batch(const std::uint32_t* crc, const std::byte* const* data, const std::uint32_t* len, std::size_t n,
                       std::uint32_t* out) noexcept;

// An AND mask over a buffer's first 64 bytes (bytes 64..127 of `bytes`; the rest all ones, so
// that a 64-byte chunk of the buffer starting anywhere from 63 bytes before it to 63 bytes into
// it finds its mask at one offset).
struct Crc32LeadMask {
  alignas(64) std::array<std::uint8_t, 192> bytes;
};

// With the kernel (crc32_short_has_clmul()): out[i] = crc32(crc[i], data[i] with its first 64
// bytes ANDed with `lead`, len[i]) for i < n, every len[i] within kCrc32ShortMin..kCrc32ShortMax
// (the caller's check), and true. Without it: false, nothing written. (The ICRC: a datagram's
// headers with their per-flow bytes masked to zero, their share in the seed; icrc_batch.cpp.)
bool crc32_short_lead_batch(const std::uint32_t* crc, const std::byte* const* data, const std::uint32_t* len, std::size_t n,
                            const Crc32LeadMask& lead, std::uint32_t* out) noexcept;

// One buffer of a datagram's single ICRC (a frame sealed or verified alone: icrc_linear.cpp):
// crc32_short_lead_batch with n = 1, its conditions the caller's (crc32_short_has_clmul(), and
// kCrc32ShortMin <= len <= kCrc32ShortMax).
std::uint32_t crc32_short_lead(std::uint32_t crc, const std::byte* data, std::size_t len, const Crc32LeadMask& lead) noexcept;

// The kernel alone on one buffer (tests, benchmarks): kCrc32ShortMin <= len <= kCrc32ShortMax
// and crc32_short_has_clmul() true, or the result is crc32_isal's.
std::uint32_t crc32_short(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept;

}  // namespace roce::proto
