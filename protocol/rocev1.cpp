#include "protocol/rocev1.hpp"

#include <array>
#include <cstring>

#include "protocol/payload_rule.hpp"
#include "protocol/payload_tail.hpp"

namespace roce::proto {

std::uint32_t compute_icrc_v1(CrcBackend backend, ByteSpan grh_to_icrc) noexcept {
  constexpr std::size_t kFf = 8;
  constexpr std::size_t kMasked = kFf + sizeof(Ipv6Header) + sizeof(Bth);
  std::array<std::byte, kMasked> masked;
  std::memset(masked.data(), 0xFF, kFf);
  std::memcpy(masked.data() + kFf, grh_to_icrc.data(), sizeof(Ipv6Header) + sizeof(Bth));
  std::byte* grh = masked.data() + kFf;
  grh[0] |= std::byte{0x0F};  // traffic class (high nibble) and flow label
  grh[1] = grh[2] = grh[3] = std::byte{0xFF};
  grh[offsetof(Ipv6Header, hop_limit)] = std::byte{0xFF};
  grh[sizeof(Ipv6Header) + offsetof(Bth, resv8a)] = std::byte{0xFF};
  const std::uint32_t crc = crc32(backend, 0, masked.data(), masked.size());
  return crc32(backend, crc, grh_to_icrc.subspan(sizeof(Ipv6Header) + sizeof(Bth)));
}

ParseError parse_rocev1(ByteSpan buf, std::size_t grh_offset, const ParseOptions& opts, Packet& p) noexcept {
  p.l3_offset = grh_offset;
  p.ip_version = IpVersion::V6;
  if (buf.size() < grh_offset + sizeof(Ipv6Header)) return ParseError::Truncated;
  const auto grh = load_header<Ipv6Header>(buf, grh_offset);
  if (grh.version() != 6) return ParseError::BadIpHeader;
  p.ipv6.src = grh.src;
  p.ipv6.dst = grh.dst;
  p.ipv6.traffic_class = grh.traffic_class();
  p.ipv6.flow_label = grh.flow_label();
  p.ipv6.hop_limit = grh.hop_limit;
  if (grh.next_header != kGrhNextHeaderIba) return ParseError::NotUdp;
  const std::size_t bth_off = grh_offset + sizeof(Ipv6Header);
  p.l4_offset = bth_off;
  p.bth_offset = bth_off;
  p.datagram_end = bth_off + grh.payload_length.get();  // PayLen: BTH through ICRC
  const std::size_t after_grh = grh.payload_length.get();
  if (after_grh < sizeof(Bth) + kIcrcBytes)
    return buf.size() < bth_off + sizeof(Bth) ? ParseError::Truncated : ParseError::LengthMismatch;
  if (buf.size() < bth_off + sizeof(Bth)) return ParseError::Truncated;
  p.bth = load_header<Bth>(buf, bth_off);
  if (p.bth.tver() != 0) return ParseError::BadTver;
  const OpcodeInfo& info = opcode_info(p.bth.opcode);
  if (!info.valid) return ParseError::UnknownOpcode;
  p.info = &info;

  const std::size_t ext_off = bth_off + sizeof(Bth);
  const std::size_t fixed = sizeof(Bth) + info.ext_bytes + kIcrcBytes;
  if (after_grh < fixed) return buf.size() < ext_off + info.ext_bytes ? ParseError::Truncated : ParseError::LengthMismatch;
  if (buf.size() < ext_off + info.ext_bytes) return ParseError::Truncated;
  for_each_ext_header(p.ext, [&](auto& h, auto kind) {
    constexpr auto i = static_cast<std::size_t>(decltype(kind)::value);
    if (info.has(kind)) std::memcpy(&h, buf.data() + ext_off + info.offset[i], sizeof h);
  });
  const std::uint32_t payload_and_pad = static_cast<std::uint32_t>(after_grh - fixed);
  const std::uint8_t pad = p.bth.pad_count();
  if (payload_and_pad % 4 != 0 || pad > payload_and_pad) return ParseError::PadCntInconsistent;
  p.payload_length = payload_and_pad - pad;
  switch (check_payload_length(info, p.payload_length, opts.pmtu)) {
    case PayloadVerdict::Ok: break;
    case PayloadVerdict::AbovePmtu: return ParseError::PayloadAbovePmtu;
    case PayloadVerdict::LengthInvalid: return ParseError::PayloadLengthInvalid;
    case PayloadVerdict::NotAllowed: return ParseError::PayloadNotAllowed;
  }
  p.payload_offset = ext_off + info.ext_bytes;
  switch (place_payload(buf, opts, p)) {
    case PayloadTail::Refused: return ParseError::Truncated;
    case PayloadTail::Cut: return ParseError::None;
    case PayloadTail::Whole: break;
  }
  const std::size_t icrc_off = p.datagram_end - kIcrcBytes;
  if (!opts.verify_icrc) {
    p.icrc_status = IcrcStatus::NotChecked;
  } else {
    const std::uint32_t want = compute_icrc_v1(opts.crc, buf.subspan(grh_offset, icrc_off - grh_offset));
    p.icrc_status = want == p.icrc ? IcrcStatus::Ok : IcrcStatus::Bad;
  }
  return ParseError::None;
}

}  // namespace roce::proto
