// Placing a received payload: the one place where the bytes of a request or a READ response
// are written to host memory, for the responder and the completer alike.
//
// A packet whose ICRC the parser deferred (ParseOptions::defer_icrc_from) has it settled before
// anything acts on it (Responder and Completer do that first), with one exception this primitive
// serves: a packet the receiver chose to place ahead of its verdict has the payload's share of
// the ICRC computed in the same pass as the copy, so the payload is read once. Which packets may
// be placed ahead is the receiver's decision (placement_ahead_allowed): only those whose bytes
// no application can be looking at yet and whose resend is sure to write them again.
#pragma once

#include <cstdint>
#include <cstring>

#include "lib/rdma/qp_context.hpp"
#include "protocol/crc32_copy.hpp"
#include "protocol/packet.hpp"

namespace roce::rdma {

// Where one packet's payload goes: a contiguous range (dst), or else a place in a scatter list;
// and where the packet after it will go (empty when this one ends its message). That range is
// asked for ahead, with write intent: the reads for ownership of its lines then run while the
// next packet is parsed and checked. Without it that packet's copy fills the store buffer with
// stores waiting on memory, and every store after it (the next parse, the ACK) waits too.
struct PayloadDest {
  std::byte* dst = nullptr;
  const LocalSegment* segs = nullptr;
  std::uint32_t nseg = 0;
  std::uint64_t offset = 0;
  proto::WriteAhead next;
};

// A destination inside a scatter list: contiguous when the payload lies in one segment.
PayloadDest segment_dest(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, std::uint32_t len,
                         std::uint64_t next_len) noexcept;

// Whether a packet may be placed before its deferred ICRC is known: a MIDDLE packet of a
// reliable connection going to one contiguous range. Its bytes lie inside a message that has
// not completed and that nothing reports yet (no completion; not the last bytes, which a poller
// watches), exactly where the packet with the expected PSN goes. A corrupted one is dropped
// before anything else happens; the requester resends from that PSN (go-back-N: everything
// after it is refused until then), and the good copy overwrites those bytes before the message
// can complete. Never FIRST (its own RETH steers it: a corrupted one could point anywhere its
// R_Key allows), LAST or ONLY (they complete the message and write the bytes a poller watches).
bool placement_ahead_allowed(const proto::Packet& pkt, bool reliable, const PayloadDest& dest) noexcept;

// The last bytes of a LAST packet's payload, the ones a poller watches: placed only once the
// packet's ICRC has held (place_payload), whatever was placed ahead of them.
inline constexpr std::uint32_t kHeldTailBytes = 64;

// Whether a responder may place a LAST packet's payload ahead of its verdict, all but its last
// kHeldTailBytes: an RC LAST going to one contiguous range, longer than that tail. Its bytes
// before the tail are as safe to place as a MIDDLE's (inside the open message, rewritten by the
// resend before the message can complete), the tail waits, and nothing completes before the
// verdict. The copy of a 4 KiB LAST then reads the frame once, not twice (docs/perf-changes.md,
// section 34). FIRST and ONLY stay out for the reason above.
bool last_placement_ahead_allowed(const proto::Packet& pkt, bool reliable, const PayloadDest& dest) noexcept;

// Copies the payload to `dest` and asks for `dest.next` ahead. With `icrc_pending` (only for a
// packet placement_ahead_allowed or last_placement_ahead_allowed admits) it settles the deferred
// ICRC during the copy and returns whether it held; the bytes are at dest either way, but for a
// LAST's last kHeldTailBytes, which are copied only if it held.
bool place_payload(const proto::Packet& pkt, const PayloadDest& dest, proto::CrcBackend crc, bool icrc_pending) noexcept;

// A WRITE of a responder's run going to one contiguous range, its ICRC deferred by the parser:
// what the walk does with it (place_payload's two cases), false when the ICRC fails. A FIRST or
// ONLY is settled before a byte is copied (its RETH steers the copy); a MIDDLE, and a LAST but
// its held tail, are placed while the ICRC is settled, for placement_ahead_allowed's and
// last_placement_ahead_allowed's reasons (an RC run is reliable; its range is contiguous).
bool place_deferred(const proto::Packet& pkt, std::byte* dst, proto::WriteAhead next, proto::CrcBackend crc) noexcept;

// Its case of a payload known good going to one contiguous range, inline: a responder's run of
// WRITEs places every packet so (responder_run.cpp).
inline void place_contiguous(const proto::Packet& pkt, std::byte* dst, proto::WriteAhead next) noexcept {
  std::memcpy(dst, pkt.payload.data(), pkt.payload_length);
  proto::prefetch_for_write(next);
}

}  // namespace roce::rdma
