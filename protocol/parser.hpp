// Bounds-checked RoCEv2 parser over a byte span. It never reads outside the span; a frame it
// cannot accept comes back with the reason, for the caller to count and drop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/packet.hpp"

namespace roce::proto {

class IcrcHeaderCache;  // icrc_linear.hpp

enum class ParseError : std::uint8_t {
  None,
  Truncated,             // the buffer ends inside a header (or, strictly, inside the datagram)
  NotIp,                 // EtherType is neither IPv4 nor IPv6
  RoceV1,                // EtherType 0x8915: RoCEv1 (IB GRH), not RoCEv2
  BadIpHeader,           // wrong IP version, IPv4 IHL < 5
  IpFragment,            // IPv4 fragment: RoCEv2 is never fragmented
  NotUdp,                // IP protocol / next header is not UDP
  NotRoceV2Port,         // UDP destination port is not 4791
  LengthMismatch,        // IP and UDP lengths disagree, or the UDP datagram cannot hold a BTH
  BadTver,               // BTH transport version is not 0
  UnknownOpcode,         // an opcode the table does not define (RD, XRC, reserved, vendor)
  PadCntInconsistent,    // payload+pad not a multiple of 4, PadCnt larger than it, or pad on no-payload opcode
  PayloadAbovePmtu,      // more payload than the path MTU (or 4096 when no path MTU is known)
  PayloadLengthInvalid,  // FIRST/MIDDLE not exactly PMTU, empty LAST, ATOMIC_WRITE not 8 bytes
  ShortForOpcode,        // a datagram shorter than its opcode's headers (short AtomicETH, WRITE_IMM without ImmDt)
  PayloadNotAllowed,     // bytes after the headers of an opcode without payload (READ request, atomics, ACK)
  Count,
};

struct ParseOptions {
  CrcBackend crc = CrcBackend::Isal;
  bool verify_icrc = true;
  std::uint32_t pmtu = 0;  // payload bytes per packet; 0 = unknown (any IBA MTU accepted)
  // Accept a capture record cut short by the snap length, as long as every header is there;
  // the ICRC is then not checkable and the payload span is the part that was captured.
  bool allow_snap_truncation = false;
  // Packets with at least this many payload bytes get IcrcStatus::Deferred: the headers' share
  // of the ICRC is computed, the payload's is left to the receiver, which may settle it while
  // it copies the payload (icrc_deferred.hpp). Which packets it places that way is its
  // decision, not the parser's. 0: never.
  std::uint32_t defer_icrc_from = 0;
  // FIRST/MIDDLE carry exactly the path MTU (or an IBA MTU when pmtu is 0), LAST at least one
  // byte. false: those rules are left to a receiver that knows the path MTU (a responder
  // answers a wrong size with NAK invalid request instead of a silent drop).
  bool mtu_rules = true;
  // Where the headers' share of the ICRC comes from, by CRC linearity (icrc_linear.hpp): the
  // receiver's cache of its flows' templates. nullptr: the headers are masked and CRCed whole.
  IcrcHeaderCache* icrc_cache = nullptr;
};

// Parses an Ethernet frame (with up to two VLAN tags).
ParseError parse_frame(ByteSpan frame, const ParseOptions& opts, Packet& out) noexcept;
// Parses starting at the IP header (Linux cooked captures, raw IP).
ParseError parse_ip(ByteSpan datagram, const ParseOptions& opts, Packet& out) noexcept;

// Just the BTH destination QP of a RoCEv2 frame, for steering it to the worker that owns the
// QP before anything else is parsed. nullopt for anything that is not Ethernet/IP/UDP 4791.
std::optional<std::uint32_t> peek_dest_qp(ByteSpan frame) noexcept;

std::string to_string(ParseError e);

}  // namespace roce::proto
