#include "protocol/crc32.hpp"

#include <isa-l/crc.h>
#include <zlib.h>

#include <array>
#include <climits>

namespace roce::proto {
namespace {

constexpr std::uint32_t kReflectedPoly = 0xEDB88320u;

constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t s = 1; s < 8; ++s)
    for (std::size_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}

constexpr auto kTables = make_tables();

}  // namespace

std::uint32_t crc32_portable(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept {
  const auto* p = reinterpret_cast<const std::uint8_t*>(data);
  std::uint32_t c = ~crc;
  // Slice-by-8: eight table lookups per eight input bytes, byte order independent.
  while (len >= 8) {
    const std::uint32_t lo = c ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                                  std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return ~c;
}

std::uint32_t crc32_register8(std::uint64_t v) noexcept {
  return kTables[7][v >> 56] ^ kTables[6][(v >> 48) & 0xFF] ^ kTables[5][(v >> 40) & 0xFF] ^ kTables[4][(v >> 32) & 0xFF] ^
         kTables[3][(v >> 24) & 0xFF] ^ kTables[2][(v >> 16) & 0xFF] ^ kTables[1][(v >> 8) & 0xFF] ^ kTables[0][v & 0xFF];
}

std::uint32_t crc32_zlib(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept {
  const auto* p = reinterpret_cast<const Bytef*>(data);
  uLong c = crc;
  while (len > 0) {  // zlib takes a uInt length
    const uInt chunk = len > UINT_MAX ? UINT_MAX : static_cast<uInt>(len);
    c = ::crc32(c, p, chunk);
    p += chunk;
    len -= chunk;
  }
  return static_cast<std::uint32_t>(c);
}

std::uint32_t crc32_isal(std::uint32_t crc, const std::byte* data, std::size_t len) noexcept {
  return ::crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data), len);
}

std::string to_string(CrcBackend b) {
  switch (b) {
    case CrcBackend::Portable: return "portable";
    case CrcBackend::Zlib: return "zlib";
    case CrcBackend::Isal: return "isal";
  }
  return "unknown";
}

std::optional<CrcBackend> crc_backend_from_string(std::string_view s) {
  for (auto b : {CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal})
    if (s == to_string(b)) return b;
  return std::nullopt;
}

}  // namespace roce::proto
