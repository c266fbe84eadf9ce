#include "protocol/icrc_deferred.hpp"

#include <cstring>

namespace roce::proto {
namespace {

bool ends_right(const Packet& p, CrcBackend backend, std::uint32_t crc) noexcept {
  const std::byte* pad = p.payload.data() + p.payload_length;
  return crc32(backend, crc, pad, p.bth.pad_count()) == p.icrc;
}

}  // namespace

bool settle_icrc(const Packet& p, CrcBackend backend) noexcept {
  return ends_right(p, backend, crc32(backend, p.icrc_partial, p.payload.data(), p.payload_length));
}

bool settle_icrc_copying(const Packet& p, CrcBackend backend, std::byte* dst, WriteAhead ahead, std::uint32_t held_tail) noexcept {
  const std::uint32_t placed = p.payload_length - held_tail;
  std::uint32_t crc = crc32_copy(backend, p.icrc_partial, dst, p.payload.data(), placed, ahead);
  if (held_tail == 0) return ends_right(p, backend, crc);
  crc = crc32(backend, crc, p.payload.data() + placed, held_tail);
  if (!ends_right(p, backend, crc)) return false;
  std::memcpy(dst + placed, p.payload.data() + placed, held_tail);
  return true;
}

}  // namespace roce::proto
