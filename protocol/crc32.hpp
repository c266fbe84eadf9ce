// CRC-32 (IEEE 802.3 polynomial, reflected, zlib conventions: crc32(crc32(0, a), b) == crc32(0, a+b)).
// Three interchangeable backends: a portable slice-by-8 reference, zlib, and ISA-L's
// crc32_gzip_refl (the fast one on x86).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/be.hpp"

namespace roce::proto {

enum class CrcBackend : std::uint8_t { Portable, Zlib, Isal };

std::uint32_t crc32_portable(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept;
std::uint32_t crc32_zlib(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept;
std::uint32_t crc32_isal(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept;
// The plain CRC register (no inversions) after the 8 bytes of `bytes`, most significant first,
// entered into a zero register: what those bytes add to a CRC whose input they end, by
// linearity (protocol/ack_template.cpp). One slice-by-8 step of crc32_portable's tables.
std::uint32_t crc32_register8(std::uint64_t bytes) noexcept;

inline std::uint32_t crc32(CrcBackend backend, std::uint32_t crc, const std::byte* data, std::size_t len) noexcept {
  switch (backend) {
    case CrcBackend::Zlib: return crc32_zlib(crc, data, len);
    case CrcBackend::Isal: return crc32_isal(crc, data, len);
    case CrcBackend::Portable: break;
  }
  return crc32_portable(crc, data, len);
}

inline std::uint32_t crc32(CrcBackend backend, std::uint32_t crc, ByteSpan s) noexcept {
  return crc32(backend, crc, s.data(), s.size());
}

std::string to_string(CrcBackend b);
std::optional<CrcBackend> crc_backend_from_string(std::string_view s);

}  // namespace roce::proto
