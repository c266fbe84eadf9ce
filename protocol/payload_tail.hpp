// The end of a RoCE packet for the decoders that live beside the engine's parser (DC, RoCEv1):
// where the payload is, and whether the capture holds all of it and the ICRC.
#pragma once

#include "protocol/parser.hpp"

namespace roce::proto {

enum class PayloadTail : std::uint8_t {
  Whole,    // p.payload and p.icrc are set; the caller checks the ICRC
  Cut,      // the capture stops early and may (allow_snap_truncation): payload is what it holds, ICRC not checkable
  Refused,  // the capture stops early and may not: ParseError::Truncated
};

// p.payload_offset, p.payload_length and p.datagram_end are set.
inline PayloadTail place_payload(ByteSpan buf, const ParseOptions& opts, Packet& p) noexcept {
  if (buf.size() < p.datagram_end) {
    if (!opts.allow_snap_truncation) return PayloadTail::Refused;
    p.snap_truncated = true;
    const std::size_t have = buf.size() > p.payload_offset ? buf.size() - p.payload_offset : 0;
    p.payload = buf.subspan(p.payload_offset, have < p.payload_length ? have : p.payload_length);
    p.icrc_status = IcrcStatus::NotCheckable;
    return PayloadTail::Cut;
  }
  p.payload = buf.subspan(p.payload_offset, p.payload_length);
  p.icrc = read_icrc(buf.subspan(p.datagram_end - kIcrcBytes, kIcrcBytes));
  return PayloadTail::Whole;
}

}  // namespace roce::proto
