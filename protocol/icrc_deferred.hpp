// Settling a deferred ICRC (ParseOptions::defer_icrc_from): the parser has checked nothing yet
// but the headers' share; the payload's share and the pad bytes after it are added here, in
// place or while the payload is copied to where it belongs, so the payload is read once.
#pragma once

#include <cstddef>

#include "protocol/crc32_copy.hpp"
#include "protocol/packet.hpp"

namespace roce::proto {

// Whether the packet's ICRC holds, reading the payload where it is.
bool settle_icrc(const Packet& p, CrcBackend backend) noexcept;
// The same while copying the payload to `dst` (payload_length bytes), whatever the outcome: a
// packet that fails leaves its bytes there. `ahead` is where the next packet will be copied.
bool settle_icrc_copying(const Packet& p, CrcBackend backend, std::byte* dst, WriteAhead ahead = {}) noexcept;

}  // namespace roce::proto
