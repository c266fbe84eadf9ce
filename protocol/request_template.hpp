// A connection's request headers prebuilt (issue 26 P2). On a connected QP every request frame
// has the same Ethernet header (and VLAN tags), IP addresses, TOS or traffic class and flow
// label, TTL, UDP ports, P_Key and destination QP; write_headers() recomputes and stores all of
// them per frame. The template keeps them as bytes, built once by write_headers() itself from the
// connection's FrameSpec, and per frame copies them and stores what a request changes: the IP
// length (and the IPv4 checksum, from a sum kept without it), the UDP length, the BTH's opcode,
// SE, pad count, AckReq and PSN, and the opcode's extension headers. It also keeps the ICRC's
// share of the invariant header bytes (icrc_linear.hpp's IcrcFlow), so sealing looks nothing up.
// The frames are byte for byte those write_headers() and seal() make from the same FrameSpec.
// Whoever owns the FrameSpec rebuilds the template when it changes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "protocol/builder.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::proto {

// What changes from one request frame to the next.
struct RequestFields {
  std::uint8_t opcode = 0;
  std::uint32_t psn = 0;
  bool solicited = false;      // BTH SE
  bool ack_requested = false;  // BTH AckReq
  std::uint32_t payload_length = 0;
};

class RequestTemplate {
 public:
  // Prebuilds `path`'s headers; `linear`: the ICRC's header share by linearity (else the plain
  // ICRC, as seal() without a cache). False, and not ready, for a FrameSpec whose frames this
  // template cannot write as write_headers() does: SE or AckReq already set in its BTH (this
  // template sets them per frame from RequestFields).
  bool build(const FrameSpec& path, CrcBackend crc, bool linear) noexcept;
  void clear() noexcept { ready_ = false; }
  bool ready() const noexcept { return ready_; }

  // write_headers(path with f's opcode, PSN, SE, AckReq and `ext`, f.payload_length, out):
  // the same bytes, the same layout and errors.
  FrameLayout write_headers(const RequestFields& f, const ExtHeaders& ext, MutableByteSpan out) const noexcept;
  // write_headers() for an opcode whose payload may be 0 to a path MTU (each of a requester
  // run's ONLY requests: a SEND or WRITE, with an immediate or an invalidate), inline in a run's
  // per-frame loop: the same bytes, layout and errors, with that rule's one compare for the
  // payload rules' switch. The call, its saved registers and the layout returned through memory
  // were about a third of write_headers()'s instructions. Any other opcode goes to write_headers().
  [[gnu::always_inline]] FrameLayout write_only_headers(const RequestFields& f, const ExtHeaders& ext,
                                                        MutableByteSpan out) const noexcept {
    const OpcodeInfo& info = opcode_info(f.opcode);
    if (info.payload != PayloadRule::ZeroToPmtu) return write_headers(f, ext, out);
    FrameLayout l;
    if (validate_ && f.payload_length > (pmtu_ ? pmtu_ : kMaxPmtuBytes)) {
      l.error = BuildError::PayloadAbovePmtu;
      return l;
    }
    write_checked(info, f, ext, out, l);
    return l;
  }
  // seal() / place_and_seal() of a frame write_headers() above wrote.
  void seal(const FrameLayout& l, MutableByteSpan out, CrcBackend crc) const noexcept {
    proto::seal(icrc_, l, out, crc);
  }
  void place_and_seal(const FrameLayout& l, MutableByteSpan out, CrcBackend crc, const std::byte* payload) const noexcept {
    proto::place_and_seal(icrc_, l, out, crc, payload);
  }
  // The flow's ICRC state, for frames write_headers() above wrote and sealed later together
  // (IcrcSealBatch, icrc_batch.hpp).
  const IcrcFlow& icrc_flow() const noexcept { return icrc_; }

  // Ethernet with two VLAN tags, IPv6, UDP and BTH.
  static constexpr std::size_t kMaxBytes = 14 + 2 * 4 + 40 + 8 + 12;

 private:
  // Frame sizes copied with a length the compiler knows (moves, no memcpy call): no VLAN tag,
  // IPv4 or IPv6, through the BTH.
  static constexpr std::size_t kV4Bytes = sizeof(EthernetHeader) + kIpv4HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);
  static constexpr std::size_t kV6Bytes = sizeof(EthernetHeader) + kIpv6HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);

  // write_headers() once the opcode and the payload's length passed its checks: the layout
  // into `l` (error None), the rest of layout_frame()'s checks, then the bytes.
  [[gnu::always_inline]] void write_checked(const OpcodeInfo& info, const RequestFields& f, const ExtHeaders& ext,
                                            MutableByteSpan out, FrameLayout& l) const noexcept {
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
      return;
    }
    if (out.size() < l.length) {
      l.error = BuildError::BufferTooSmall;
      return;
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
  }

  std::array<std::byte, kMaxBytes> head_{};  // the path's frame through the BTH
  std::uint8_t bytes_ = 0;                   // of head_ in use
  std::uint8_t l3_offset_ = 0;
  std::uint8_t bth_offset_ = 0;
  IpVersion ip_version_ = IpVersion::V4;
  std::uint8_t bth_flags_ = 0;  // MigReq and TVer; SE and PadCnt are per frame
  std::uint8_t ack_req_ = 0;    // Resv7; AckReq is per frame
  bool validate_ = true;
  std::uint32_t pmtu_ = 0;
  std::uint32_t ipv4_sum_ = 0;  // the IPv4 header's 16-bit words summed, less the total length
  IcrcFlow icrc_;
  bool ready_ = false;
};

}  // namespace roce::proto
