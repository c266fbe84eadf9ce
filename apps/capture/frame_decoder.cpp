#include "apps/capture/frame_decoder.hpp"

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
  if (type == proto::kEtherTypeRoceV1) return ParseError::RoceV1;
  if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6) return ParseError::NotIp;
  out.ip_offset = off;
  return proto::parse_ip(rec.subspan(off), opts, out.packet);
}

ParseError decode(LinkType link, proto::ByteSpan rec, const proto::ParseOptions& opts, DecodedFrame& out) noexcept {
  switch (link) {
    case LinkType::Ethernet: {
      const ParseError e = proto::parse_frame(rec, opts, out.packet);
      out.ip_offset = out.packet.l3_offset;
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

}  // namespace

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Roce: return "roce";
    case Verdict::RoceV1: return "rocev1";
    case Verdict::NotRoce: return "not-roce";
    case Verdict::Malformed: return "malformed";
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
    case ParseError::PayloadLengthInvalid: return true;
    default: return false;
  }
}

void decode_frame(LinkType link, proto::ByteSpan record, const proto::ParseOptions& opts, DecodedFrame& out) noexcept {
  out.packet = proto::Packet{};
  out.ip_offset = 0;
  out.error = decode(link, record, opts, out);
  out.verdict = verdict_of(out.error);
}

}  // namespace roce::capture
