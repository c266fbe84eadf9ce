#include "protocol/builder.hpp"

#include <cstddef>
#include <cstring>

#include "protocol/checksum.hpp"
#include "protocol/crc32_copy.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::proto {

void FrameSpec::set_ecn(Ecn e) {
  const auto bits = static_cast<std::uint8_t>(e);
  ipv4.tos = static_cast<std::uint8_t>((ipv4.tos & ~3u) | bits);
  ipv6.traffic_class = static_cast<std::uint8_t>((ipv6.traffic_class & ~3u) | bits);
}

FrameLayout layout_frame(const FrameSpec& spec, std::uint32_t payload_length) noexcept {
  FrameLayout l;
  const OpcodeInfo& info = opcode_info(spec.bth.opcode);
  if (!info.valid) {
    l.error = BuildError::UnknownOpcode;
    return l;
  }
  if (spec.validate) {
    switch (check_payload_length(info, payload_length, spec.pmtu)) {
      case PayloadVerdict::Ok: break;
      case PayloadVerdict::AbovePmtu: l.error = BuildError::PayloadAbovePmtu; return l;
      case PayloadVerdict::LengthInvalid:
      case PayloadVerdict::NotAllowed: l.error = BuildError::PayloadLengthInvalid; return l;
    }
  }
  const std::size_t l2 = spec.with_ethernet ? sizeof(EthernetHeader) + spec.eth.vlan_count * sizeof(VlanTag) : 0;
  l.l3_offset = l2;
  l.payload_length = payload_length;
  l.pad = pad_for(payload_length);
  const std::size_t ip_len = ip_header_bytes(spec.ip_version);
  l.payload_offset = l2 + ip_len + sizeof(UdpHeader) + sizeof(Bth) + info.ext_bytes;
  l.length = l.payload_offset + payload_length + l.pad + kIcrcBytes;
  const std::size_t ip_total = l.length - l2;
  if (ip_total - (spec.ip_version == IpVersion::V6 ? ip_len : 0) > 0xFFFF) l.error = BuildError::TooLarge;
  return l;
}

FrameLayout write_headers(const FrameSpec& spec, std::uint32_t payload_length, MutableByteSpan out) noexcept {
  FrameLayout l = layout_frame(spec, payload_length);
  if (!l.ok()) return l;
  if (out.size() < l.length) {
    l.error = BuildError::BufferTooSmall;
    return l;
  }
  std::size_t off = 0;
  if (spec.with_ethernet) {
    // Field by field into the frame: a whole-header temporary with 6-byte MACs is read back
    // through store-forwarding stalls.
    const std::uint16_t l3_type = spec.ip_version == IpVersion::V4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
    std::memcpy(out.data() + offsetof(EthernetHeader, dst), spec.eth.dst.data(), sizeof(MacAddr));
    std::memcpy(out.data() + offsetof(EthernetHeader, src), spec.eth.src.data(), sizeof(MacAddr));
    store_header(out, offsetof(EthernetHeader, ether_type), Be16::of(spec.eth.vlan_count ? spec.eth.vlan_tpid[0] : l3_type));
    off += sizeof(EthernetHeader);
    for (std::uint8_t i = 0; i < spec.eth.vlan_count; ++i) {
      VlanTag tag{Be16::of(spec.eth.vlan_tci[i]),
                  Be16::of(i + 1 < spec.eth.vlan_count ? spec.eth.vlan_tpid[i + 1] : l3_type)};
      store_header(out, off, tag);
      off += sizeof tag;
    }
  }
  const std::size_t udp_length = l.length - l.l3_offset - ip_header_bytes(spec.ip_version);
  if (spec.ip_version == IpVersion::V4) {
    Ipv4Header ip{};
    ip.version_ihl = 0x45;
    ip.tos = spec.ipv4.tos;
    ip.total_length.set(static_cast<std::uint16_t>(l.length - l.l3_offset));
    ip.id.set(spec.ipv4.id);
    ip.flags_fragment.set(spec.ipv4.flags_fragment);
    ip.ttl = spec.ipv4.ttl;
    ip.protocol = kIpProtoUdp;
    ip.src = spec.ipv4.src;
    ip.dst = spec.ipv4.dst;
    ip.checksum.set(ipv4_header_checksum(ip.tos, ip.total_length.get(), spec.ipv4.id, spec.ipv4.flags_fragment, ip.ttl,
                                         ip.protocol, ip.src, ip.dst));
    store_header(out, off, ip);
    off += sizeof ip;
  } else {
    Ipv6Header ip{};
    ip.ver_tc_flow.set(6u << 28 | std::uint32_t{spec.ipv6.traffic_class} << 20 | (spec.ipv6.flow_label & 0xFFFFF));
    ip.payload_length.set(static_cast<std::uint16_t>(udp_length));
    ip.next_header = kIpProtoUdp;
    ip.hop_limit = spec.ipv6.hop_limit;
    ip.src = spec.ipv6.src;
    ip.dst = spec.ipv6.dst;
    store_header(out, off, ip);
    off += sizeof ip;
  }
  const UdpHeader udp{Be16::of(spec.udp_src_port), Be16::of(spec.udp_dst_port),
                      Be16::of(static_cast<std::uint16_t>(udp_length)), Be16::of(spec.udp_checksum)};
  store_header(out, off, udp);
  off += sizeof udp;
  // The BTH goes out as the spec has it, then its flags byte is patched in the frame: changing
  // a stack copy and storing it whole reads the copy back through a store-forwarding stall.
  store_header(out, off, spec.bth);
  Bth with_pad{};
  with_pad.flags = spec.bth.flags;
  with_pad.set_pad_count(l.pad);
  store_header(out, off + offsetof(Bth, flags), with_pad.flags);
  off += sizeof(Bth);
  write_ext_headers(opcode_info(spec.bth.opcode), spec.ext, out.data() + off);
  return l;
}

namespace {

// Zeroes the pad bytes; returns what the ICRC covers (IP header to the end of the pad), which
// the ICRC follows.
MutableByteSpan pad_datagram(const FrameLayout& l, MutableByteSpan out) noexcept {
  const std::size_t pad_off = l.payload_offset + l.payload_length;
  std::memset(out.data() + pad_off, 0, l.pad);
  return out.subspan(l.l3_offset, pad_off + l.pad - l.l3_offset);
}

MutableByteSpan icrc_field(const FrameLayout& l, MutableByteSpan datagram, MutableByteSpan out) noexcept {
  return out.subspan(l.l3_offset + datagram.size(), kIcrcBytes);
}

}  // namespace

namespace {

// `prefix(datagram, upto)`: the ICRC register after the datagram's first `upto` bytes (the
// plain ICRC, the flow cache's or one flow's: icrc.hpp, icrc_linear.hpp).
template <typename Prefix>
void seal_with(const FrameLayout& l, MutableByteSpan out, Prefix prefix) noexcept {
  const MutableByteSpan datagram = pad_datagram(l, out);
  write_icrc(icrc_field(l, datagram, out), prefix(ByteSpan{datagram}, datagram.size()));
}

template <typename Prefix>
void place_and_seal_with(const FrameLayout& l, MutableByteSpan out, CrcBackend crc, const std::byte* payload,
                         Prefix prefix) noexcept {
  if (l.payload_length < kSealCopyingFrom) {
    const MutableByteSpan datagram = place_unsealed(l, out, payload);
    write_icrc(icrc_field(l, datagram, out), prefix(ByteSpan{datagram}, datagram.size()));
    return;
  }
  const MutableByteSpan datagram = pad_datagram(l, out);
  std::uint32_t c = prefix(ByteSpan{datagram}, l.payload_offset - l.l3_offset);
  c = crc32_copy(crc, c, out.data() + l.payload_offset, payload, l.payload_length);
  c = crc32(crc, c, datagram.data() + datagram.size() - l.pad, l.pad);
  write_icrc(icrc_field(l, datagram, out), c);
}

auto prefix_of(const IcrcFlow& flow, CrcBackend crc) noexcept {
  return [&flow, crc](ByteSpan datagram, std::size_t upto) { return flow.prefix(crc, datagram, upto); };
}

}  // namespace

void seal(const FrameSpec& spec, const FrameLayout& l, MutableByteSpan out, CrcBackend crc, IcrcHeaderCache* cache) noexcept {
  const MutableByteSpan datagram = pad_datagram(l, out);
  write_icrc(icrc_field(l, datagram, out), cache ? compute_icrc_linear(*cache, crc, spec.ip_version, datagram)
                                                 : compute_icrc(crc, spec.ip_version, datagram));
}

void place_and_seal(const FrameSpec& spec, const FrameLayout& l, MutableByteSpan out, CrcBackend crc,
                    const std::byte* payload, IcrcHeaderCache* cache) noexcept {
  if (l.payload_length < kSealCopyingFrom) {
    const MutableByteSpan datagram = place_unsealed(l, out, payload);
    write_icrc(icrc_field(l, datagram, out), cache ? compute_icrc_linear(*cache, crc, spec.ip_version, datagram)
                                                   : compute_icrc(crc, spec.ip_version, datagram));
    return;
  }
  const MutableByteSpan datagram = pad_datagram(l, out);
  const std::size_t upto = l.payload_offset - l.l3_offset;
  std::uint32_t c = cache ? icrc_prefix_linear(*cache, crc, spec.ip_version, datagram, upto)
                          : icrc_prefix(crc, spec.ip_version, datagram, upto);
  c = crc32_copy(crc, c, out.data() + l.payload_offset, payload, l.payload_length);
  c = crc32(crc, c, datagram.data() + datagram.size() - l.pad, l.pad);
  write_icrc(icrc_field(l, datagram, out), c);
}

void seal(const IcrcFlow& flow, const FrameLayout& l, MutableByteSpan out, CrcBackend crc) noexcept {
  seal_with(l, out, prefix_of(flow, crc));
}

void place_and_seal(const IcrcFlow& flow, const FrameLayout& l, MutableByteSpan out, CrcBackend crc,
                    const std::byte* payload) noexcept {
  place_and_seal_with(l, out, crc, payload, prefix_of(flow, crc));
}

FrameLayout build_frame(const FrameSpec& spec, ByteSpan payload, MutableByteSpan out, CrcBackend crc) noexcept {
  FrameLayout l = write_headers(spec, static_cast<std::uint32_t>(payload.size()), out);
  if (payload.size() > 0xFFFF) l.error = BuildError::TooLarge;
  if (!l.ok()) return l;
  place_and_seal(spec, l, out, crc, payload.data());
  return l;
}

FrameSpec frame_spec_from(const Packet& p) {
  FrameSpec s;
  s.with_ethernet = p.has_l2;
  s.eth = p.eth;
  s.ip_version = p.ip_version;
  s.ipv4 = p.ipv4;
  s.ipv6 = p.ipv6;
  s.udp_src_port = p.udp_src_port;
  s.udp_dst_port = p.udp_dst_port;
  s.udp_checksum = p.udp_checksum;
  s.bth = p.bth;
  s.ext = p.ext;
  s.validate = false;
  return s;
}

std::string to_string(BuildError e) {
  switch (e) {
    case BuildError::None: return "ok";
    case BuildError::BufferTooSmall: return "buffer-too-small";
    case BuildError::UnknownOpcode: return "unknown-opcode";
    case BuildError::PayloadAbovePmtu: return "payload-above-pmtu";
    case BuildError::PayloadLengthInvalid: return "payload-length-invalid";
    case BuildError::TooLarge: return "too-large";
  }
  return "unknown";
}

}  // namespace roce::proto
