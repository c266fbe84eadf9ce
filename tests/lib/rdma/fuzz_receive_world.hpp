// The fixed world fuzz_receive attacks, shared with fuzz_receive_seeds so that seeds can aim
// at it: one engine with an RC, a UC and a UD QP in RTS, memory regions between guard bands,
// and a few requests of our own outstanding on the RC QP so that responses reach the completer.
//
// Input format: byte 0 holds flags, then records of [u16 little-endian length][frame bytes].
// With kRetarget set, every frame that parses is rebuilt aimed at the world: our MAC and IPv4
// address, the QP of its transport, its PSN taken as an offset from the QP's expected PSN
// (requests) or first send PSN (responses), R_Key and VA mapped into one of our regions, our
// Q_Key; frames that do not parse go in as they are. Without it every frame goes in raw.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/headers.hpp"

namespace roce::fuzz {

inline constexpr std::uint8_t kRetarget = 0x01;
inline constexpr std::uint8_t kMapRkeys = 0x02;  // with kRetarget: R_Key and VA into our regions

inline constexpr proto::MacAddr kOurMac{2, 0, 0, 0, 0, 1};
inline constexpr proto::Ipv4Addr kOurIp{10, 0, 0, 1};
inline constexpr proto::MacAddr kPeerMac{2, 0, 0, 0, 0, 0xAA};
inline constexpr proto::Ipv4Addr kPeerIp{10, 0, 0, 9};
inline constexpr std::uint32_t kPeerQpn = 0x77;
inline constexpr std::uint32_t kQkey = 0x11111111;
inline constexpr std::uint32_t kPmtu = 1024;
inline constexpr std::uint32_t kRqPsn = 0xFFFFF0;  // close to the wrap on purpose
inline constexpr std::uint32_t kSqPsn = 0x000100;

// Our requests on the RC QP, in posting order, with their PSN offsets from kSqPsn at PMTU 1024:
// WRITE 3000 B (0..2), READ 5000 B (3..7), FETCH_ADD (8), SEND 100 B (9), ATOMIC_WRITE (10),
// FLUSH (11). Before them the RC QP binds two memory windows of the exposed region (type 1 and
// type 2; local operations take no PSN). The UC and UD QPs take their receives from one
// shared receive queue. Retargeted R_Keys pick the exposed region, the read-only one or one of
// the two windows (R_Key % 4).
inline constexpr std::uint32_t kWriteBytes = 3000;
inline constexpr std::uint32_t kReadBytes = 5000;
inline constexpr std::uint32_t kSendBytes = 100;
inline constexpr std::uint32_t kReadFirstPsnOffset = 3;
inline constexpr std::uint32_t kAtomicPsnOffset = 8;
inline constexpr std::uint32_t kSendPsnOffset = 9;
inline constexpr std::uint32_t kAtomicWritePsnOffset = 10;
inline constexpr std::uint32_t kFlushPsnOffset = 11;

inline constexpr std::size_t kMaxFrame = 9000;

}  // namespace roce::fuzz
