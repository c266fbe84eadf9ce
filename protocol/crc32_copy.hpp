// Copy and CRC-32 in one pass over the source: the bytes go through registers once, on their
// way to the destination, instead of a copy followed by a second read for the CRC.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/crc32.hpp"

namespace roce::proto {

// Where the next copy will write, asked for ahead. A destination that is not in cache costs a
// read for ownership per line; asked for a few lines at a time during this copy, those reads
// overlap with it. Asked for all at once after it, they stall behind the loads of a frame that
// is not in cache either (the receive path of a NIC's DMA). Prefetches never fault, so the
// range needs no check.
struct WriteAhead {
  std::byte* at = nullptr;
  std::size_t len = 0;
};

// Copies `len` bytes from `src` to `dst` (not overlapping) and returns crc32(backend, crc, src,
// len). The one-pass path needs AVX-512 and VPCLMULQDQ and is taken for the ISA-L backend from
// 512 bytes; it asks for its source a few lines ahead of its loads and leaves `ahead` alone
// (docs/perf-changes.md section 91: the destination's lines asked for a packet ahead slowed a
// copy whose source comes from memory). Otherwise it is a copy, the CRC of the copy, and then
// `ahead` asked for with write intent.
std::uint32_t crc32_copy(CrcBackend backend, std::uint32_t crc, std::byte* dst, const std::byte* src, std::size_t len,
                         WriteAhead ahead = {}) noexcept;

// Asks for the lines of `ahead` with write intent, all at once.
inline void prefetch_for_write(WriteAhead ahead) noexcept {
  for (std::size_t at = 0; at < ahead.len; at += 64) __builtin_prefetch(ahead.at + at, 1, 3);
}

// Whether crc32_copy takes the one-pass path on this CPU.
bool crc32_copy_is_one_pass() noexcept;

}  // namespace roce::proto
