// RFC 791 header checksum: one's complement of the one's complement sum of 16-bit words.
#pragma once

#include <cstdint>

#include "protocol/be.hpp"

namespace roce::proto {

// Over a header whose checksum field holds zero this gives the value to store; over a header
// with its checksum in place it gives zero when the header is intact.
constexpr std::uint16_t internet_checksum(ByteSpan hdr) noexcept {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < hdr.size(); i += 2)
    sum += std::uint32_t{std::to_integer<std::uint8_t>(hdr[i])} << 8 | std::to_integer<std::uint8_t>(hdr[i + 1]);
  if (hdr.size() % 2) sum += std::uint32_t{std::to_integer<std::uint8_t>(hdr.back())} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace roce::proto
