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

}  // namespace

bool RequestTemplate::build(const FrameSpec& path, CrcBackend crc, bool linear) noexcept {
  ready_ = false;
  image_ = Image{};  // made from the old path
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
  FrameLayout l;
  const OpcodeInfo& info = opcode_info(f.opcode);
  if (!check_opcode_and_payload(info, f.payload_length, l)) return l;
  write_checked(info, f, ext, out, l);
  return l;
}

bool RequestTemplate::check_opcode_and_payload(const OpcodeInfo& info, std::uint32_t payload, FrameLayout& l) const noexcept {
  // layout_frame()'s checks, in its order, on what is known now.
  if (!info.valid) {
    l.error = BuildError::UnknownOpcode;
    return false;
  }
  if (validate_) {
    switch (check_payload_length(info, payload, pmtu_)) {
      case PayloadVerdict::Ok: break;
      case PayloadVerdict::AbovePmtu: l.error = BuildError::PayloadAbovePmtu; return false;
      case PayloadVerdict::LengthInvalid:
      case PayloadVerdict::NotAllowed: l.error = BuildError::PayloadLengthInvalid; return false;
    }
  }
  return true;
}

void RequestTemplate::make_image(const RequestFields& f, Image& image) const noexcept {
  image.key_ = Image::key_of(f.opcode, f.solicited, f.ack_requested, f.payload_length);
  image.layout_ = FrameLayout{};
  const OpcodeInfo& info = opcode_info(f.opcode);
  image.info_ = &info;
  image.ack_ = ack_byte(f);
  if (!check_opcode_and_payload(info, f.payload_length, image.layout_) || !lay_out(info, f.payload_length, image.layout_))
    return;
  write_fixed(f, image.layout_, image.bytes_.data());
}

}  // namespace roce::proto
