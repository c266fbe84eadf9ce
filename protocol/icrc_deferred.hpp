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
// `held_tail` (at most payload_length): the payload's last bytes are copied only once the ICRC
// has held, so a packet that fails leaves those bytes of `dst` as they were.
bool settle_icrc_copying(const Packet& p, CrcBackend backend, std::byte* dst, WriteAhead ahead = {},
                         std::uint32_t held_tail = 0) noexcept;

}  // namespace roce::proto
