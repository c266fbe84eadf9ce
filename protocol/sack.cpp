#include "protocol/sack.hpp"

#include <cstring>

#include "protocol/icrc.hpp"
#include "protocol/icrc_verdict.hpp"

namespace roce::proto {

FrameLayout build_sack(FrameSpec spec, const SackBitmap& sacked, MutableByteSpan out, CrcBackend crc) noexcept {
  // Laid out as the ACK it extends, with the bitmap where a payload would be ...
  spec.bth.opcode = raw(Opcode::RcAck);
  spec.validate = false;
  FrameLayout l = write_headers(spec, kSackExtBytes, out);
  if (!l.ok()) return l;
  // ... then named for what it is before the ICRC covers it.
  const std::size_t bth = l.payload_offset - sizeof(Aeth) - sizeof(Bth);
  out[bth] = std::byte{kSackOpcode};
  for (std::size_t w = 0; w < kSackWords; ++w) store_header(out, l.payload_offset + 8 * w, Be64::of(sacked.words[w]));
  seal(spec, l, out, crc);
  return l;
}

ParseError parse_sack(ByteSpan frame, const ParseOptions& opts, Packet& pkt) noexcept {
  if (pkt.bth.opcode != kSackOpcode) return ParseError::UnknownOpcode;
  const std::size_t want = sizeof(UdpHeader) + sizeof(Bth) + sizeof(Aeth) + kSackExtBytes + kIcrcBytes;
  if (frame.size() < pkt.datagram_end) return ParseError::Truncated;
  if (pkt.udp_length != want) return pkt.udp_length < want ? ParseError::ShortForOpcode : ParseError::PayloadNotAllowed;
  if (pkt.bth.pad_count() != 0) return ParseError::PadCntInconsistent;
  const std::size_t aeth = pkt.bth_offset + sizeof(Bth);
  std::memcpy(&pkt.ext.aeth, frame.data() + aeth, sizeof(Aeth));
  pkt.info = &opcode_info(Opcode::RcAck);
  pkt.payload_offset = aeth + sizeof(Aeth);
  pkt.payload_length = kSackExtBytes;
  pkt.payload = frame.subspan(pkt.payload_offset, kSackExtBytes);
  pkt.icrc = read_icrc(frame.subspan(pkt.datagram_end - kIcrcBytes, kIcrcBytes));
  pkt.icrc_status = icrc_verdict(frame, opts, pkt);
  return ParseError::None;
}

SackBitmap sack_bitmap(const Packet& pkt) noexcept {
  SackBitmap b;
  if (pkt.payload.size() < kSackExtBytes) return b;
  for (std::size_t w = 0; w < kSackWords; ++w) b.words[w] = load_header<Be64>(pkt.payload, 8 * w).get();
  return b;
}

bool is_sack(const Packet& pkt) noexcept { return pkt.bth.opcode == kSackOpcode && pkt.info != nullptr; }

}  // namespace roce::proto
