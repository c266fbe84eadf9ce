// RFC 791 header checksum: one's complement of the one's complement sum of 16-bit words.
#pragma once

#include <array>
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

// The same for an IPv4 header without options, from its field values (a transmit path that has
// them in registers need not read the header back from memory).
constexpr std::uint16_t ipv4_header_checksum(std::uint8_t tos, std::uint16_t total_length, std::uint16_t id,
                                             std::uint16_t flags_fragment, std::uint8_t ttl, std::uint8_t protocol,
                                             const std::array<std::uint8_t, 4>& src,
                                             const std::array<std::uint8_t, 4>& dst) noexcept {
  auto word = [](std::uint8_t hi, std::uint8_t lo) { return std::uint32_t{hi} << 8 | lo; };
  std::uint32_t sum = word(0x45, tos) + total_length + id + flags_fragment + word(ttl, protocol) + word(src[0], src[1]) +
                      word(src[2], src[3]) + word(dst[0], dst[1]) + word(dst[2], dst[3]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace roce::proto
