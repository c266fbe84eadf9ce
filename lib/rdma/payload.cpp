#include "lib/rdma/payload.hpp"

#include <algorithm>
#include <cstring>

#include "protocol/icrc_deferred.hpp"

namespace roce::rdma {

using namespace roce::proto;

PayloadDest segment_dest(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, std::uint32_t len,
                         std::uint64_t next_len) noexcept {
  PayloadDest d;
  d.dst = contiguous_in_segments(segs, nseg, offset, len);
  d.segs = segs;
  d.nseg = nseg;
  d.offset = offset;
  if (next_len) d.next = write_ahead_in_segments(segs, nseg, offset + len, next_len);
  return d;
}

bool placement_ahead_allowed(const Packet& pkt, bool reliable, const PayloadDest& dest) noexcept {
  return reliable && pkt.info->position == Position::Middle && dest.dst != nullptr;
}

bool last_placement_ahead_allowed(const Packet& pkt, bool reliable, const PayloadDest& dest) noexcept {
  return reliable && pkt.info->position == Position::Last && dest.dst != nullptr && pkt.payload_length > kHeldTailBytes;
}

bool place_payload(const Packet& pkt, const PayloadDest& dest, CrcBackend crc, bool icrc_pending) noexcept {
  if (icrc_pending) {
    const std::uint32_t held = pkt.info->ends_message() ? std::min(kHeldTailBytes, pkt.payload_length) : 0;
    return settle_icrc_copying(pkt, crc, dest.dst, dest.next, held);
  }
  if (dest.dst) {
    place_contiguous(pkt, dest.dst, dest.next);
    return true;
  }
  if (pkt.payload_length) copy_to_segments(dest.segs, dest.nseg, dest.offset, pkt.payload.data(), pkt.payload_length);
  prefetch_for_write(dest.next);
  return true;
}

bool place_deferred(const Packet& pkt, std::byte* dst, WriteAhead next, CrcBackend crc) noexcept {
  if (pkt.info->starts_message()) {
    if (!settle_icrc(pkt, crc)) return false;
    place_contiguous(pkt, dst, next);
    return true;
  }
  const std::uint32_t held = pkt.info->ends_message() ? std::min(kHeldTailBytes, pkt.payload_length) : 0;
  return settle_icrc_copying(pkt, crc, dst, next, held);
}

}  // namespace roce::rdma
