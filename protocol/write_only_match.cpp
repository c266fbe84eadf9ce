#include "protocol/write_only_match.hpp"

#include <algorithm>

#include "protocol/opcode.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::proto {

namespace wo = write_only_frame;

namespace {

// The image's four lines from the frame's first kCompared bytes: lines at 0, 16, 32 and 42.
constexpr std::array<std::uint8_t, wo::kImage> image_of(const std::array<std::uint8_t, wo::kCompared>& bytes) noexcept {
  std::array<std::uint8_t, wo::kImage> image{};
  for (std::size_t i = 0; i < wo::kImage; ++i) image[i] = bytes[i < 48 ? i : i - 48 + wo::kLastLine];
  return image;
}

}  // namespace

// Kept: the Ethernet header; IPv4's version and IHL, TOS (so a CE mark, or any other ECN or
// DSCP, is another flow's), flags and fragment offset, TTL, protocol, addresses; the UDP ports;
// the BTH's opcode, TVer, P_Key, reserved byte and destination QP. Left to vary: the IP total
// length (checked against the UDP length and the frame), ID and checksum (checked as a sum), the
// UDP length and checksum (the ICRC masks it, the parser reads it for nothing), SE, MigReq and
// PadCnt (checked against the length), AckReq and the PSN, the RETH (the responder's checks) or
// the AETH (the completer's). (An ACKNOWLEDGE's lengths are left too: with no payload allowed the
// length checks take one IP total length, 48, and one UDP length; kept, no test could tell.) The
// ICRC's per-flow bytes (icrc_linear.cpp's Invariant roles) are all among the kept ones.
constexpr std::array<std::uint8_t, wo::kImage> WriteOnlyTemplate::keep_mask() noexcept {
  std::array<std::uint8_t, wo::kCompared> k{};  // by the frame's byte
  const auto keep = [&k](std::size_t at, std::size_t n, std::uint8_t bits = 0xFF) {
    for (std::size_t i = 0; i < n; ++i) k[at + i] = bits;
  };
  keep(0, sizeof(EthernetHeader));
  keep(wo::kIp + offsetof(Ipv4Header, version_ihl), 2);  // version, IHL, TOS
  keep(wo::kIp + offsetof(Ipv4Header, flags_fragment), 4);  // flags, fragment offset, TTL, protocol
  keep(wo::kIp + offsetof(Ipv4Header, src), 8);  // source and destination addresses
  keep(wo::kUdp + offsetof(UdpHeader, src_port), 4);
  keep(wo::kBth + offsetof(Bth, opcode), 1);
  keep(wo::kBth + offsetof(Bth, flags), 1, Bth::kTVerMask);
  keep(wo::kBth + offsetof(Bth, pkey), 6);  // P_Key, reserved byte, destination QP
  return image_of(k);
}

alignas(16) const std::array<std::uint8_t, wo::kImage> WriteOnlyTemplate::kKeep = WriteOnlyTemplate::keep_mask();

static_assert(offsetof(Ipv4Header, flags_fragment) == 6 && offsetof(Ipv4Header, src) == 12 && offsetof(Bth, pkey) == 2 &&
              offsetof(Bth, dest_qp) == 5 && offsetof(UdpHeader, src_port) == 0 && offsetof(UdpHeader, length) == 4);
static_assert(wo::kReth + sizeof(Reth) == wo::kPayload && wo::kCompared <= wo::kPayload && wo::kLastLine == 42 &&
              wo::kCompared == wo::kIp + wo::kAckTotal - kIcrcBytes);

bool WriteOnlyTemplate::set(ByteSpan frame, const Packet& pkt, const ParseOptions& opts, Opcode as, bool clear_resv8a) noexcept {
  if (!take(frame, pkt, opts, as, clear_resv8a)) {
    suspend();
    return false;
  }
  return true;
}

// set() but for a frame it refuses, which leaves the template as it was.
bool WriteOnlyTemplate::take(ByteSpan frame, const Packet& pkt, const ParseOptions& opts, Opcode as, bool clear_resv8a) noexcept {
  // Untagged IPv4 without options: the only frames with UDP at 34 (a tag adds 4 before the IP
  // header, options 4 or more after it, IPv6 puts UDP at 54 at least; parse_ip's at 20 or 40).
  if (pkt.l4_offset != wo::kUdp || pkt.ecn() == Ecn::Ce || frame.size() < wo::kCompared || !opts.verify_icrc) return false;
  const bool ack = as == Opcode::RcAck;
  std::size_t most = 0;  // an ACKNOWLEDGE carries none
  if (!ack) {
    // The largest payload+pad matched: parse_frame's limit for a WRITE ONLY's payload, and below
    // the length from which it defers the ICRC (no frame it defers is matched).
    most = kWriteOnlyMatchMaxPayload;
    most = std::min<std::size_t>(most, opts.pmtu != 0 ? opts.pmtu : kMaxPmtuBytes);
    if (opts.defer_icrc_from != 0) most = std::min<std::size_t>(most, opts.defer_icrc_from - 1);
    static_assert(opcode_info(Opcode::RcWriteOnly).payload == PayloadRule::ZeroToPmtu);
  }
  // (an ACKNOWLEDGE: no payload, never deferred: parse_frame defers from a nonzero length)
  static_assert(opcode_info(Opcode::RcAck).payload == PayloadRule::None);
  // A run whose frame here carries more than any matched one (4 KiB WRITEs: FIRST, MIDDLE, LAST
  // or a large ONLY) would pay for the image and, flow after flow, the CRC state, and match none:
  // left to parse_frame (the 4 KiB responder read 6 % slower with it set; section 82).
  if (pkt.payload_length > most) return false;
  suspend();  // (until the image is whole again)
  max_payload_and_pad_ = static_cast<std::uint32_t>(most);
  empty_total_ = static_cast<std::uint32_t>(ack ? wo::kAckTotal : wo::kEmptyTotal);
  backend_ = opts.crc;

  std::array<std::uint8_t, wo::kCompared> bytes;
  for (std::size_t i = 0; i < wo::kCompared; ++i) bytes[i] = static_cast<std::uint8_t>(frame[i]);
  bytes[wo::kBth + offsetof(Bth, opcode)] = raw(as);
  if (clear_resv8a) bytes[wo::kBth + offsetof(Bth, resv8a)] = 0;
  std::array<std::uint8_t, wo::kImage> image = image_of(bytes);
  for (std::size_t i = 0; i < wo::kImage; ++i) image[i] &= kKeep[i];
  // (a frame parse_frame accepted has IHL 5 here, TVer 0, no fragment, UDP to 4791)
  image[kSuspendAt] = 1;  // as expect_ now is, so that the same flow compares equal
  if (!flow_known_ || image != expect_) {
    expect_ = image;
    const std::byte* ip = frame.data() + wo::kIp;
    ip_words_ = 0;
    for (const std::size_t at : {offsetof(Ipv4Header, version_ihl), offsetof(Ipv4Header, flags_fragment),
                                 offsetof(Ipv4Header, ttl), offsetof(Ipv4Header, src), offsetof(Ipv4Header, src) + 2,
                                 offsetof(Ipv4Header, dst), offsetof(Ipv4Header, dst) + 2})
      ip_words_ += be16(ip + at);
    flow_.set(backend_, IpVersion::V4, ip);
    flow_known_ = true;
  }
  expect_[kSuspendAt] = 0;
  return true;
}

bool WriteOnlyTemplate::learn(ByteSpan frame, const Packet& pkt, const ParseOptions& opts) noexcept {
  const auto op = static_cast<Opcode>(pkt.bth.opcode);
  if ((op != Opcode::RcWriteOnly && op != Opcode::RcAck) || pkt.icrc_status != IcrcStatus::Ok || !pkt.ipv4_checksum_ok)
    return false;
  return take(frame, pkt, opts, op, false);
}

bool FlowTemplate::learn(ByteSpan frame, const Packet& pkt, const ParseOptions& opts) noexcept {
  if (!t_.learn(frame, pkt, opts)) return false;
  ack_ = pkt.bth.opcode == raw(Opcode::RcAck);
  pkt_ = pkt;
  return true;
}

}  // namespace roce::proto
