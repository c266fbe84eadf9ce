#include "protocol/request_template.hpp"

#include <cstring>

#include "protocol/payload_rule.hpp"

namespace roce::proto {

namespace {

std::uint16_t load_be16(const std::byte* p) noexcept {
  Be16 v;
  std::memcpy(&v, p, sizeof v);
  return v.get();
}

// Frame sizes copied with a length the compiler knows (moves, no memcpy call): no VLAN tag,
// IPv4 or IPv6, through the BTH.
constexpr std::size_t kV4Bytes = sizeof(EthernetHeader) + kIpv4HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);
constexpr std::size_t kV6Bytes = sizeof(EthernetHeader) + kIpv6HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);

}  // namespace

bool RequestTemplate::build(const FrameSpec& path, CrcBackend crc, bool linear) noexcept {
  ready_ = false;
  if (path.bth.se() || path.bth.ack_requested()) return false;
  // write_headers() itself lays the headers down: the template cannot drift from the builder.
  // A SEND_ONLY without payload has no extension header, so the frame is the headers, ICRC aside.
  FrameSpec spec = path;
  spec.bth.opcode = raw(Opcode::RcSendOnly);
  spec.validate = false;
  std::array<std::byte, kMaxBytes + kIcrcBytes> frame{};
  const FrameLayout l = proto::write_headers(spec, 0, frame);
  if (!l.ok() || l.payload_offset > kMaxBytes) return false;
  std::memcpy(head_.data(), frame.data(), l.payload_offset);
  bytes_ = static_cast<std::uint8_t>(l.payload_offset);
  l3_offset_ = static_cast<std::uint8_t>(l.l3_offset);
  bth_offset_ = static_cast<std::uint8_t>(l.payload_offset - sizeof(Bth));
  ip_version_ = path.ip_version;
  bth_flags_ = static_cast<std::uint8_t>(path.bth.flags & ~(Bth::kSe | Bth::kPadCntMask));
  ack_req_ = static_cast<std::uint8_t>(path.bth.ack_req & ~Bth::kAckReq);
  validate_ = path.validate;
  pmtu_ = path.pmtu;
  if (ip_version_ == IpVersion::V4) {
    // The one's complement sum is order-free: the words but the total length (and the checksum)
    // now, the total length per frame (ipv4_header_checksum's value).
    const std::byte* ip = head_.data() + l3_offset_;
    ipv4_sum_ = 0;
    for (std::size_t i = 0; i < kIpv4HeaderBytes; i += 2)
      if (i != offsetof(Ipv4Header, total_length) && i != offsetof(Ipv4Header, checksum)) ipv4_sum_ += load_be16(ip + i);
  }
  icrc_.set(crc, ip_version_, head_.data() + l3_offset_, linear);
  ready_ = true;
  return true;
}

FrameLayout RequestTemplate::write_headers(const RequestFields& f, const ExtHeaders& ext, MutableByteSpan out) const noexcept {
  // layout_frame()'s checks, in its order, on what is known now.
  FrameLayout l;
  const OpcodeInfo& info = opcode_info(f.opcode);
  if (!info.valid) {
    l.error = BuildError::UnknownOpcode;
    return l;
  }
  if (validate_) {
    switch (check_payload_length(info, f.payload_length, pmtu_)) {
      case PayloadVerdict::Ok: break;
      case PayloadVerdict::AbovePmtu: l.error = BuildError::PayloadAbovePmtu; return l;
      case PayloadVerdict::LengthInvalid:
      case PayloadVerdict::NotAllowed: l.error = BuildError::PayloadLengthInvalid; return l;
    }
  }
  l.l3_offset = l3_offset_;
  l.payload_length = f.payload_length;
  l.pad = pad_for(f.payload_length);
  l.payload_offset = std::size_t{bytes_} + info.ext_bytes;
  l.length = l.payload_offset + f.payload_length + l.pad + kIcrcBytes;
  const bool v4 = ip_version_ == IpVersion::V4;
  const std::size_t ip_total = l.length - l3_offset_;
  const std::size_t udp_length = ip_total - ip_header_bytes(ip_version_);
  if ((v4 ? ip_total : udp_length) > 0xFFFF) {
    l.error = BuildError::TooLarge;
    return l;
  }
  if (out.size() < l.length) {
    l.error = BuildError::BufferTooSmall;
    return l;
  }

  std::byte* p = out.data();
  if (bytes_ == kV4Bytes) std::memcpy(p, head_.data(), kV4Bytes);
  else if (bytes_ == kV6Bytes) std::memcpy(p, head_.data(), kV6Bytes);
  else std::memcpy(p, head_.data(), bytes_);

  if (v4) {
    const auto total = static_cast<std::uint16_t>(ip_total);
    std::uint32_t sum = ipv4_sum_ + total;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    store_header(out, l3_offset_ + offsetof(Ipv4Header, total_length), Be16::of(total));
    store_header(out, l3_offset_ + offsetof(Ipv4Header, checksum), Be16::of(static_cast<std::uint16_t>(~sum)));
  } else {
    store_header(out, l3_offset_ + offsetof(Ipv6Header, payload_length), Be16::of(static_cast<std::uint16_t>(udp_length)));
  }
  const std::size_t udp = l3_offset_ + ip_header_bytes(ip_version_);
  store_header(out, udp + offsetof(UdpHeader, length), Be16::of(static_cast<std::uint16_t>(udp_length)));

  // The BTH's first two bytes (opcode; SE, MigReq, PadCnt, TVer) and its last four (AckReq,
  // Resv7, PSN) in one store each.
  const auto flags = static_cast<std::uint8_t>(bth_flags_ | (f.solicited ? Bth::kSe : 0) | (l.pad << Bth::kPadCntShift));
  store_header(out, bth_offset_, Be16::of(static_cast<std::uint16_t>(f.opcode << 8 | flags)));
  const std::uint8_t ack = static_cast<std::uint8_t>(ack_req_ | (f.ack_requested ? Bth::kAckReq : 0));
  store_header(out, bth_offset_ + offsetof(Bth, ack_req), Be32::of(std::uint32_t{ack} << 24 | (f.psn & 0xFFFFFF)));
  // The commonest requests carry a RETH alone (a WRITE ONLY or FIRST, a READ) or nothing (a
  // SEND ONLY, FIRST or MIDDLE): stored as write_ext_headers() would store them, without its
  // test of every header kind (a call and ten tests a frame).
  switch (info.headers) {
    case 0: break;
    case header_bit(ExtHeader::Reth): std::memcpy(p + bytes_, &ext.reth, sizeof ext.reth); break;
    default: write_ext_headers(info, ext, p + bytes_);
  }
  return l;
}

}  // namespace roce::proto
