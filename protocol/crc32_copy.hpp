// Copy and CRC-32 in one pass over the source: the bytes go through registers once, on their
// way to the destination, instead of a copy followed by a second read for the CRC.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/crc32.hpp"

namespace roce::proto {

// Copies `len` bytes from `src` to `dst` (not overlapping) and returns crc32(backend, crc, src,
// len). The one-pass path needs AVX-512 and VPCLMULQDQ and is taken for the ISA-L backend;
// otherwise it is a copy and then the CRC of the copy.
std::uint32_t crc32_copy(CrcBackend backend, std::uint32_t crc, std::byte* dst, const std::byte* src,
                         std::size_t len) noexcept;

// Whether crc32_copy takes the one-pass path on this CPU.
bool crc32_copy_is_one_pass() noexcept;

}  // namespace roce::proto
