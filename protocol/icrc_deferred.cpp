#include "protocol/icrc_deferred.hpp"

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

bool settle_icrc_copying(const Packet& p, CrcBackend backend, std::byte* dst, WriteAhead ahead) noexcept {
  return ends_right(p, backend, crc32_copy(backend, p.icrc_partial, dst, p.payload.data(), p.payload_length, ahead));
}

}  // namespace roce::proto
