#include "protocol/parser.hpp"

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include <emmintrin.h>

#include "protocol/checksum.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::proto {
namespace {

// Copying a constant empty packet compiles to plain wide moves; `out = Packet{}` built a
// temporary on the stack with mixed-width stores and read it back (store-forwarding stalls,
// a third of the header parse time). The copy is spelled out in 16-byte moves: as `p =
// kEmptyPacket` gcc made it a memset, which under generic tuning (the portable x86-64-v2
// build) is an inline `rep stosq` with some 30 cycles of start-up (docs/perf-changes.md 23).
const Packet kEmptyPacket{};
template <std::size_t... I>
void copy_lines(std::byte* to, const std::byte* from, std::index_sequence<I...>) noexcept {
  (_mm_storeu_si128(reinterpret_cast<__m128i*>(to + 16 * I), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16 * I))), ...);
}
// Straight-line moves, not a loop: gcc turns a copying loop back into `rep movsq`.
void reset(Packet& p) noexcept {
  static_assert(std::is_trivially_copyable_v<Packet>);
  constexpr std::size_t kLines = sizeof(Packet) / 16, kTail = sizeof(Packet) % 16;
  const auto* from = reinterpret_cast<const std::byte*>(&kEmptyPacket);
  auto* to = reinterpret_cast<std::byte*>(&p);
  copy_lines(to, from, std::make_index_sequence<kLines>{});
  if constexpr (kTail != 0) std::memcpy(to + 16 * kLines, from + 16 * kLines, kTail);
}

// Everything from the UDP header on; the IP layer has set l4_offset and datagram_end.
ParseError parse_l4(ByteSpan buf, const ParseOptions& opts, Packet& p, std::size_t l3_header_len) noexcept {
  const std::size_t l4 = p.l4_offset;
  if (buf.size() < l4 + sizeof(UdpHeader)) return ParseError::Truncated;
  const auto udp = load_header<UdpHeader>(buf, l4);
  p.udp_src_port = udp.src_port.get();
  p.udp_dst_port = udp.dst_port.get();
  p.udp_length = udp.length.get();
  p.udp_checksum = udp.checksum.get();
  if (p.udp_dst_port != kRoceV2Port) return ParseError::NotRoceV2Port;

  const std::size_t ip_payload = p.datagram_end - l4;
  if (p.udp_length != ip_payload) return ParseError::LengthMismatch;

  const std::size_t bth_off = l4 + sizeof(UdpHeader);
  p.bth_offset = bth_off;
  if (p.udp_length < sizeof(UdpHeader) + sizeof(Bth) + kIcrcBytes)
    return buf.size() < bth_off + sizeof(Bth) ? ParseError::Truncated : ParseError::LengthMismatch;
  if (buf.size() < bth_off + sizeof(Bth)) return ParseError::Truncated;
  p.bth = load_header<Bth>(buf, bth_off);
  if (p.bth.tver() != 0) return ParseError::BadTver;

  const OpcodeInfo& info = opcode_info(p.bth.opcode);
  if (!info.valid) return ParseError::UnknownOpcode;
  p.info = &info;

  const std::size_t ext_off = bth_off + sizeof(Bth);
  const std::size_t fixed = sizeof(UdpHeader) + sizeof(Bth) + info.ext_bytes + kIcrcBytes;
  // IP and UDP agree here: a datagram too short for its opcode's headers is the sender's doing
  // unless the frame itself is cut.
  if (p.udp_length < fixed) return buf.size() < p.datagram_end ? ParseError::Truncated : ParseError::ShortForOpcode;
  if (buf.size() < ext_off + info.ext_bytes) return ParseError::Truncated;
  for_each_ext_header(p.ext, [&](auto& h, auto kind) {
    constexpr auto i = static_cast<std::size_t>(decltype(kind)::value);
    static_assert(sizeof h == kExtHeaderBytes[i]);
    if (info.has(kind)) std::memcpy(&h, buf.data() + ext_off + info.offset[i], sizeof h);
  });

  const std::uint32_t payload_and_pad = static_cast<std::uint32_t>(p.udp_length - fixed);
  const std::uint8_t pad = p.bth.pad_count();
  if (payload_and_pad % 4 != 0 || pad > payload_and_pad) return ParseError::PadCntInconsistent;
  if (info.payload == PayloadRule::None && payload_and_pad == 0 && pad != 0) return ParseError::PadCntInconsistent;
  p.payload_length = payload_and_pad - pad;
  switch (check_payload_length(info, p.payload_length, opts.pmtu, opts.mtu_rules)) {
    case PayloadVerdict::Ok: break;
    case PayloadVerdict::AbovePmtu: return ParseError::PayloadAbovePmtu;
    case PayloadVerdict::LengthInvalid: return ParseError::PayloadLengthInvalid;
    case PayloadVerdict::NotAllowed: return ParseError::PayloadNotAllowed;
  }

  p.payload_offset = ext_off + info.ext_bytes;
  const std::size_t icrc_off = p.datagram_end - kIcrcBytes;
  if (buf.size() < p.datagram_end) {
    if (!opts.allow_snap_truncation) return ParseError::Truncated;
    p.snap_truncated = true;
    const std::size_t have = buf.size() > p.payload_offset ? buf.size() - p.payload_offset : 0;
    p.payload = buf.subspan(p.payload_offset, have < p.payload_length ? have : p.payload_length);
    p.icrc_status = IcrcStatus::NotCheckable;
    return ParseError::None;
  }
  p.payload = buf.subspan(p.payload_offset, p.payload_length);
  p.icrc = read_icrc(buf.subspan(icrc_off, kIcrcBytes));
  if (p.ip_version == IpVersion::V4 && l3_header_len != kIpv4HeaderBytes) {
    p.icrc_status = IcrcStatus::NotCheckable;
  } else if (!opts.verify_icrc) {
    p.icrc_status = IcrcStatus::NotChecked;
  } else if (opts.defer_icrc_from != 0 && p.payload_length >= opts.defer_icrc_from) {
    const auto datagram = buf.subspan(p.l3_offset, icrc_off - p.l3_offset);
    const std::size_t upto = p.payload_offset - p.l3_offset;
    p.icrc_partial = opts.icrc_cache ? icrc_prefix_linear(*opts.icrc_cache, opts.crc, p.ip_version, datagram, upto)
                                     : icrc_prefix(opts.crc, p.ip_version, datagram, upto);
    p.icrc_status = IcrcStatus::Deferred;
  } else {
    const auto datagram = buf.subspan(p.l3_offset, icrc_off - p.l3_offset);
    const std::uint32_t icrc = opts.icrc_cache ? compute_icrc_linear(*opts.icrc_cache, opts.crc, p.ip_version, datagram)
                                               : compute_icrc(opts.crc, p.ip_version, datagram);
    p.icrc_status = icrc == p.icrc ? IcrcStatus::Ok : IcrcStatus::Bad;
  }
  return ParseError::None;
}

ParseError parse_l3(ByteSpan buf, std::size_t l3, IpVersion v, const ParseOptions& opts, Packet& p) noexcept {
  p.l3_offset = l3;
  p.ip_version = v;
  if (v == IpVersion::V4) {
    if (buf.size() < l3 + sizeof(Ipv4Header)) return ParseError::Truncated;
    const auto ip = load_header<Ipv4Header>(buf, l3);
    const std::size_t hlen = ip.header_bytes();
    if (ip.version() != 4 || hlen < sizeof(Ipv4Header)) return ParseError::BadIpHeader;
    if (buf.size() < l3 + hlen) return ParseError::Truncated;
    // Field by field: a whole Ipv4Fields temporary is copied back with loads that straddle its
    // stores, and a failed store forward waits for every older store (the previous packet's
    // payload copy) to drain.
    p.ipv4.src = ip.src;
    p.ipv4.dst = ip.dst;
    p.ipv4.tos = ip.tos;
    p.ipv4.id = ip.id.get();
    p.ipv4.flags_fragment = ip.flags_fragment.get();
    p.ipv4.ttl = ip.ttl;
    p.ipv4_checksum = ip.checksum.get();
    // A valid header sums to zero including its own checksum field.
    p.ipv4_checksum_ok = internet_checksum(buf.subspan(l3, hlen)) == 0;
    if (ip.flags_fragment.get() & (Ipv4Header::kMoreFragments | Ipv4Header::kFragmentOffsetMask))
      return ParseError::IpFragment;
    if (ip.protocol != kIpProtoUdp) return ParseError::NotUdp;
    const std::size_t total = ip.total_length.get();
    if (total < hlen) return ParseError::LengthMismatch;
    p.l4_offset = l3 + hlen;
    p.datagram_end = l3 + total;
    return parse_l4(buf, opts, p, hlen);
  }
  if (buf.size() < l3 + sizeof(Ipv6Header)) return ParseError::Truncated;
  const auto ip = load_header<Ipv6Header>(buf, l3);
  if (ip.version() != 6) return ParseError::BadIpHeader;
  p.ipv6.src = ip.src;
  p.ipv6.dst = ip.dst;
  p.ipv6.traffic_class = ip.traffic_class();
  p.ipv6.flow_label = ip.flow_label();
  p.ipv6.hop_limit = ip.hop_limit;
  if (ip.next_header != kIpProtoUdp) return ParseError::NotUdp;
  p.l4_offset = l3 + sizeof(Ipv6Header);
  p.datagram_end = p.l4_offset + ip.payload_length.get();
  return parse_l4(buf, opts, p, sizeof(Ipv6Header));
}

}  // namespace

ParseError parse_frame(ByteSpan frame, const ParseOptions& opts, Packet& out) noexcept {
  reset(out);
  out.has_l2 = true;
  if (frame.size() < sizeof(EthernetHeader)) return ParseError::Truncated;
  // Field by field straight from the frame: a whole-header temporary costs store-forwarding
  // stalls when its 6-byte MACs are read back.
  std::memcpy(out.eth.dst.data(), frame.data() + offsetof(EthernetHeader, dst), sizeof(MacAddr));
  std::memcpy(out.eth.src.data(), frame.data() + offsetof(EthernetHeader, src), sizeof(MacAddr));
  std::uint16_t type = load_header<Be16>(frame, offsetof(EthernetHeader, ether_type)).get();
  std::size_t off = sizeof(EthernetHeader);
  while ((type == kEtherTypeVlan || type == kEtherTypeQinQ) && out.eth.vlan_count < 2) {
    if (frame.size() < off + sizeof(VlanTag)) return ParseError::Truncated;
    const auto tag = load_header<VlanTag>(frame, off);
    out.eth.vlan_tpid[out.eth.vlan_count] = type;
    out.eth.vlan_tci[out.eth.vlan_count] = tag.tci.get();
    ++out.eth.vlan_count;
    type = tag.ether_type.get();
    off += sizeof(VlanTag);
  }
  if (type == kEtherTypeRoceV1) return ParseError::RoceV1;
  if (type == kEtherTypeIpv4) return parse_l3(frame, off, IpVersion::V4, opts, out);
  if (type == kEtherTypeIpv6) return parse_l3(frame, off, IpVersion::V6, opts, out);
  return ParseError::NotIp;
}

ParseError parse_ip(ByteSpan datagram, const ParseOptions& opts, Packet& out) noexcept {
  reset(out);
  if (datagram.empty()) return ParseError::Truncated;
  const auto version = std::to_integer<std::uint8_t>(datagram[0]) >> 4;
  if (version == 4) return parse_l3(datagram, 0, IpVersion::V4, opts, out);
  if (version == 6) return parse_l3(datagram, 0, IpVersion::V6, opts, out);
  return ParseError::BadIpHeader;
}

std::optional<std::uint32_t> peek_dest_qp(ByteSpan frame) noexcept {
  std::size_t off = sizeof(EthernetHeader);
  if (frame.size() < off) return std::nullopt;
  std::uint16_t type = load_header<EthernetHeader>(frame, 0).ether_type.get();
  for (int tags = 0; (type == kEtherTypeVlan || type == kEtherTypeQinQ) && tags < 2; ++tags) {
    if (frame.size() < off + sizeof(VlanTag)) return std::nullopt;
    type = load_header<VlanTag>(frame, off).ether_type.get();
    off += sizeof(VlanTag);
  }
  if (type == kEtherTypeIpv4) {
    if (frame.size() < off + sizeof(Ipv4Header)) return std::nullopt;
    const auto ip = load_header<Ipv4Header>(frame, off);
    if (ip.protocol != kIpProtoUdp || ip.header_bytes() < sizeof(Ipv4Header)) return std::nullopt;
    off += ip.header_bytes();
  } else if (type == kEtherTypeIpv6) {
    if (frame.size() < off + sizeof(Ipv6Header)) return std::nullopt;
    if (load_header<Ipv6Header>(frame, off).next_header != kIpProtoUdp) return std::nullopt;
    off += sizeof(Ipv6Header);
  } else {
    return std::nullopt;
  }
  if (frame.size() < off + sizeof(UdpHeader) + sizeof(Bth)) return std::nullopt;
  if (load_header<UdpHeader>(frame, off).dst_port.get() != kRoceV2Port) return std::nullopt;
  return load_header<Bth>(frame, off + sizeof(UdpHeader)).dest_qp.get();
}

std::string to_string(ParseError e) {
  switch (e) {
    case ParseError::None: return "ok";
    case ParseError::Truncated: return "truncated";
    case ParseError::NotIp: return "not-ip";
    case ParseError::RoceV1: return "rocev1";
    case ParseError::BadIpHeader: return "bad-ip-header";
    case ParseError::IpFragment: return "ip-fragment";
    case ParseError::NotUdp: return "not-udp";
    case ParseError::NotRoceV2Port: return "not-udp-4791";
    case ParseError::LengthMismatch: return "length-mismatch";
    case ParseError::BadTver: return "bad-tver";
    case ParseError::UnknownOpcode: return "unknown-opcode";
    case ParseError::PadCntInconsistent: return "padcnt-inconsistent";
    case ParseError::PayloadAbovePmtu: return "payload-above-pmtu";
    case ParseError::PayloadLengthInvalid: return "payload-length-invalid";
    case ParseError::ShortForOpcode: return "short-for-opcode";
    case ParseError::PayloadNotAllowed: return "payload-not-allowed";
    case ParseError::Count: break;
  }
  return "unknown";
}

}  // namespace roce::proto
