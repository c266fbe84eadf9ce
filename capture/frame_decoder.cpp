#include "capture/frame_decoder.hpp"

#include <algorithm>

#include "protocol/rocev1.hpp"

namespace roce::capture {
namespace {

using proto::ParseError;

// Cooked captures name the network protocol by EtherType; 802.1Q tags may still follow it.
ParseError parse_after_ethertype(proto::ByteSpan rec, std::size_t off, std::uint16_t type,
                                 const proto::ParseOptions& opts, DecodedFrame& out) noexcept {
  for (int tags = 0; (type == proto::kEtherTypeVlan || type == proto::kEtherTypeQinQ) && tags < 2; ++tags) {
    if (rec.size() < off + sizeof(proto::VlanTag)) return ParseError::Truncated;
    type = proto::load_header<proto::VlanTag>(rec, off).ether_type.get();
    off += sizeof(proto::VlanTag);
  }
  out.ip_offset = off;  // for RoCEv1, where the GRH starts
  if (type == proto::kEtherTypeRoceV1) return ParseError::RoceV1;
  if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6) {
    out.ip_offset = 0;
    return ParseError::NotIp;
  }
  return proto::parse_ip(rec.subspan(off), opts, out.packet);
}

ParseError decode(LinkType link, proto::ByteSpan rec, const proto::ParseOptions& opts, DecodedFrame& out) noexcept {
  switch (link) {
    case LinkType::Ethernet: {
      const ParseError e = proto::parse_frame(rec, opts, out.packet);
      out.ip_offset = e == ParseError::RoceV1 ? sizeof(proto::EthernetHeader) + sizeof(proto::VlanTag) * out.packet.eth.vlan_count
                                              : out.packet.l3_offset;
      return e;
    }
    case LinkType::LinuxSll: {
      if (rec.size() < sizeof(SllHeader)) return ParseError::Truncated;
      const auto h = proto::load_header<SllHeader>(rec, 0);
      return parse_after_ethertype(rec, sizeof h, h.protocol.get(), opts, out);
    }
    case LinkType::LinuxSll2: {
      if (rec.size() < sizeof(Sll2Header)) return ParseError::Truncated;
      const auto h = proto::load_header<Sll2Header>(rec, 0);
      return parse_after_ethertype(rec, sizeof h, h.protocol.get(), opts, out);
    }
    case LinkType::RawIp: return proto::parse_ip(rec, opts, out.packet);
  }
  return ParseError::NotIp;
}

// The parser stops at the first problem; these say which headers it had read by then.
void note_headers_read(LinkType link, proto::ByteSpan record, DecodedFrame& out) noexcept {
  const proto::Packet& p = out.packet;
  const bool entered_ip = link == LinkType::Ethernet ? p.l3_offset != 0 : out.error != ParseError::NotIp && out.error != ParseError::RoceV1;
  if (!entered_ip || out.error == ParseError::NotIp || out.error == ParseError::RoceV1 || out.error == ParseError::BadIpHeader) return;
  const std::size_t size = link == LinkType::Ethernet ? record.size() : record.size() - std::min(record.size(), out.ip_offset);
  const std::size_t ip_header = p.ip_version == proto::IpVersion::V4 ? sizeof(proto::Ipv4Header) : sizeof(proto::Ipv6Header);
  out.ip_read = size >= p.l3_offset + ip_header;
  out.udp_read = out.ip_read && out.error != ParseError::IpFragment && out.error != ParseError::NotUdp && p.l4_offset != 0 &&
                 size >= p.l4_offset + sizeof(proto::UdpHeader);
}

}  // namespace

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Roce: return "roce";
    case Verdict::RoceV1: return "rocev1";
    case Verdict::NotRoce: return "not-roce";
    case Verdict::Malformed: return "malformed";
    case Verdict::Dc: return "dc";
  }
  return "unknown";
}

Verdict verdict_of(ParseError e) {
  switch (e) {
    case ParseError::None: return Verdict::Roce;
    case ParseError::RoceV1: return Verdict::RoceV1;
    // Decided before anything marks the frame as RoCEv2 (UDP port 4791), so it is other traffic.
    case ParseError::NotIp:
    case ParseError::NotUdp:
    case ParseError::NotRoceV2Port:
    case ParseError::IpFragment: return Verdict::NotRoce;
    default: return Verdict::Malformed;
  }
}

bool bth_decoded(ParseError e) {
  switch (e) {
    case ParseError::None:
    case ParseError::BadTver:
    case ParseError::UnknownOpcode:
    case ParseError::PadCntInconsistent:
    case ParseError::PayloadAbovePmtu:
    case ParseError::PayloadLengthInvalid:
    case ParseError::ShortForOpcode:
    case ParseError::PayloadNotAllowed: return true;
    default: return false;
  }
}

void decode_frame(LinkType link, proto::ByteSpan record, const proto::ParseOptions& opts, DecodedFrame& out) noexcept {
  out.packet = proto::Packet{};
  out.ip_offset = 0;
  out.ip_read = out.udp_read = false;
  out.rocev1_decoded = false;
  out.dc_decoded = false;
  out.error = decode(link, record, opts, out);
  note_headers_read(link, record, out);
  out.verdict = verdict_of(out.error);
}

void decode_frame_all(LinkType link, proto::ByteSpan record, const proto::ParseOptions& opts, DecodedFrame& out) noexcept {
  decode_frame(link, record, opts, out);
  if (out.error == ParseError::RoceV1) {
    // Offsets count from the start of the record on Ethernet, from the GRH otherwise (as for IP).
    const bool ethernet = link == LinkType::Ethernet;
    const proto::ByteSpan buf = ethernet ? record : record.subspan(out.ip_offset);
    out.error = proto::parse_rocev1(buf, ethernet ? out.ip_offset : 0, opts, out.packet);
    out.rocev1_decoded = true;
    out.verdict = out.error == ParseError::None ? Verdict::RoceV1 : Verdict::Malformed;
    return;
  }
  if (out.error == ParseError::UnknownOpcode && proto::is_dc_opcode(out.packet.bth.opcode)) {
    const proto::ByteSpan buf = out.packet.has_l2 ? record : record.subspan(out.ip_offset);
    out.error = proto::parse_dc(buf, opts, out.packet, out.dc);
    out.dc_decoded = out.error == ParseError::None;
    out.verdict = out.dc_decoded ? Verdict::Dc : verdict_of(out.error);
  }
}

}  // namespace roce::capture
