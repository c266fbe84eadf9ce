// RoCEv1 (IBA Annex A16): EtherType 0x8915, then an IB Global Route Header (laid out as an IPv6
// header, GIDs for addresses, next header 0x1B), the BTH and the rest as in RoCEv2, and an ICRC
// over 8 bytes of 0xFF, the GRH with traffic class, flow label and hop limit set to ones, and
// the BTH with its FECN/BECN byte set to ones (the RoCEv2 rule without the UDP header).
//
// The engine speaks RoCEv2 only and parse_frame() stops at ParseError::RoceV1; tools that read
// captures decode the rest with parse_rocev1().
#pragma once

#include "protocol/parser.hpp"

namespace roce::proto {

inline constexpr std::uint8_t kGrhNextHeaderIba = 0x1B;

// `buf` is the whole record, `grh_offset` where the GRH starts (after the Ethernet header and
// VLAN tags). Fills p (ip_version V6 with the GIDs as addresses; l4_offset = bth_offset, no
// UDP fields), its extension headers, payload and ICRC status. Returns None or the reason, as
// parse_frame() does; NotUdp when the GRH's next header is not 0x1B.
ParseError parse_rocev1(ByteSpan buf, std::size_t grh_offset, const ParseOptions& opts, Packet& p) noexcept;

std::uint32_t compute_icrc_v1(CrcBackend backend, ByteSpan grh_to_icrc) noexcept;

}  // namespace roce::proto
