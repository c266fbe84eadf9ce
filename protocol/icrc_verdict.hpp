// The ICRC verdict of a whole packet for the parsers outside parser.cpp (DC, RC_SACK): not
// checkable behind IPv4 options, not checked when the options say so, else computed.
#pragma once

#include "protocol/icrc.hpp"
#include "protocol/packet.hpp"
#include "protocol/parser.hpp"

namespace roce::proto {

// `p` has its offsets, datagram_end and icrc read; `buf` holds the whole datagram.
inline IcrcStatus icrc_verdict(ByteSpan buf, const ParseOptions& opts, const Packet& p) noexcept {
  if (p.ip_version == IpVersion::V4 && p.l4_offset - p.l3_offset != kIpv4HeaderBytes) return IcrcStatus::NotCheckable;
  if (!opts.verify_icrc) return IcrcStatus::NotChecked;
  const std::size_t icrc_off = p.datagram_end - kIcrcBytes;
  const auto datagram = buf.subspan(p.l3_offset, icrc_off - p.l3_offset);
  return compute_icrc(opts.crc, p.ip_version, datagram) == p.icrc ? IcrcStatus::Ok : IcrcStatus::Bad;
}

}  // namespace roce::proto
