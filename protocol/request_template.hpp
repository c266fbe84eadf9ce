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
  void clear() noexcept {
    ready_ = false;
    image_ = Image{};
  }
  bool ready() const noexcept { return ready_; }

  // write_headers(path with f's opcode, PSN, SE, AckReq and `ext`, f.payload_length, out):
  // the same bytes, the same layout and errors.
  FrameLayout write_headers(const RequestFields& f, const ExtHeaders& ext, MutableByteSpan out) const noexcept;
  // Ethernet with two VLAN tags, IPv6, UDP and BTH.
  static constexpr std::size_t kMaxBytes = 14 + 2 * 4 + 40 + 8 + 12;

  // A requester run's frame headers (Requester::build_run). Frames that agree in opcode, SE,
  // AckReq and payload length (at 64 B, every frame of the rate case) agree in every header byte
  // but the PSN's and the extension headers': those are made once into an Image (make_image:
  // write_headers()'s checks, layout and bytes), and each frame's headers are one copy of it, the
  // PSN and the extension headers (write_from_image), where section 72's inline path computed
  // the layout, the lengths, the IPv4 checksum and the BTH's first bytes again per frame
  // (docs/perf-changes.md section 90). The same bytes, layout and errors as write_headers() for
  // each frame. An image serves the template that made it until that template is built again.
  class Image {
   public:
    // Whether a frame with these fields (its PSN aside) has this image's headers: one compare.
    bool fits(std::uint8_t opcode, bool solicited, bool ack_requested, std::uint32_t payload_length) const noexcept {
      return key_ == key_of(opcode, solicited, ack_requested, payload_length);
    }
    bool fits(const RequestFields& f) const noexcept { return fits(f.opcode, f.solicited, f.ack_requested, f.payload_length); }
    const FrameLayout& layout() const noexcept { return layout_; }

   private:
    friend class RequestTemplate;
    // The fields an image is made for in one word, with a bit that no image not yet made has.
    static std::uint64_t key_of(std::uint8_t opcode, bool solicited, bool ack_requested, std::uint32_t payload_length) noexcept {
      return std::uint64_t{payload_length} << 32 | std::uint64_t{1} << 16 | std::uint64_t{opcode} << 8 |
             std::uint64_t{solicited} << 1 | std::uint64_t{ack_requested};
    }
    std::uint64_t key_ = 0;  // none made yet
    FrameLayout layout_;     // error: what write_headers() refuses every frame of this image with
    std::array<std::byte, kMaxBytes> bytes_{};
    const OpcodeInfo* info_ = nullptr;
    std::uint8_t ack_ = 0;  // the BTH's Resv7 and AckReq byte
  };
  void make_image(const RequestFields& f, Image& image) const noexcept;
  // The template's own image for frames with these fields: the last one made if it fits them
  // (a run's every frame after its first, and at 64 B every run's first too), else made for them
  // and kept. build() forgets it.
  const Image& image_for(std::uint8_t opcode, bool solicited, bool ack_requested, std::uint32_t payload_length) const noexcept {
    if (!image_.fits(opcode, solicited, ack_requested, payload_length)) [[unlikely]]
      make_image(RequestFields{opcode, 0, solicited, ack_requested, payload_length}, image_);
    return image_;
  }
  // write_headers(f with `psn`, ext, out) for fields `image` fits: its error (the image's, or
  // BufferTooSmall), and with None the headers in `out` and the layout image.layout().
  [[gnu::always_inline]] BuildError write_from_image(const Image& image, std::uint32_t psn, const ExtHeaders& ext,
                                                     MutableByteSpan out) const noexcept;

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

 private:
  // Frame sizes copied with a length the compiler knows (moves, no memcpy call): no VLAN tag,
  // IPv4 or IPv6, through the BTH.
  static constexpr std::size_t kV4Bytes = sizeof(EthernetHeader) + kIpv4HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);
  static constexpr std::size_t kV6Bytes = sizeof(EthernetHeader) + kIpv6HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);

  // write_headers()'s checks of the opcode and, when validating, of the payload's length against
  // its rule: false with l.error set where one fails.
  bool check_opcode_and_payload(const OpcodeInfo& info, std::uint32_t payload, FrameLayout& l) const noexcept;
  // write_headers() once the opcode and the payload's length passed its checks: the layout
  // into `l` (error None), the rest of layout_frame()'s checks, then the bytes.
  [[gnu::always_inline]] void write_checked(const OpcodeInfo& info, const RequestFields& f, const ExtHeaders& ext,
                                            MutableByteSpan out, FrameLayout& l) const noexcept {
    if (!lay_out(info, f.payload_length, l)) return;
    if (out.size() < l.length) {
      l.error = BuildError::BufferTooSmall;
      return;
    }
    std::byte* p = out.data();
    write_fixed(f, l, p);
    write_psn(p, ack_byte(f), f.psn);
    write_ext(info, ext, p);
  }
  // layout_frame()'s layout and its size check: false (l.error set) where the frame is too large.
  [[gnu::always_inline]] bool lay_out(const OpcodeInfo& info, std::uint32_t payload, FrameLayout& l) const noexcept {
    l.l3_offset = l3_offset_;
    l.payload_length = payload;
    l.pad = pad_for(payload);
    l.payload_offset = std::size_t{bytes_} + info.ext_bytes;
    l.length = l.payload_offset + payload + l.pad + kIcrcBytes;
    const std::size_t ip_total = l.length - l3_offset_;
    const std::size_t udp_length = ip_total - ip_header_bytes(ip_version_);
    if ((ip_version_ == IpVersion::V4 ? ip_total : udp_length) > 0xFFFF) {
      l.error = BuildError::TooLarge;
      return false;
    }
    return true;
  }
  // The headers through the BTH but its last four bytes (AckReq and PSN: write_psn), for the
  // layout lay_out() gave: the path's bytes, the lengths, the IPv4 checksum, the BTH's opcode
  // and flags.
  [[gnu::always_inline]] void write_fixed(const RequestFields& f, const FrameLayout& l, std::byte* p) const noexcept {
    copy_head(p);
    const std::size_t ip_total = l.length - l3_offset_;
    const std::size_t udp_length = ip_total - ip_header_bytes(ip_version_);
    if (ip_version_ == IpVersion::V4) {
      const auto total = static_cast<std::uint16_t>(ip_total);
      std::uint32_t sum = ipv4_sum_ + total;
      sum = (sum & 0xFFFF) + (sum >> 16);
      sum = (sum & 0xFFFF) + (sum >> 16);
      store_at(p, l3_offset_ + offsetof(Ipv4Header, total_length), Be16::of(total));
      store_at(p, l3_offset_ + offsetof(Ipv4Header, checksum), Be16::of(static_cast<std::uint16_t>(~sum)));
    } else {
      store_at(p, l3_offset_ + offsetof(Ipv6Header, payload_length), Be16::of(static_cast<std::uint16_t>(udp_length)));
    }
    const std::size_t udp = l3_offset_ + ip_header_bytes(ip_version_);
    store_at(p, udp + offsetof(UdpHeader, length), Be16::of(static_cast<std::uint16_t>(udp_length)));
    // The BTH's first two bytes (opcode; SE, MigReq, PadCnt, TVer) in one store.
    const auto flags = static_cast<std::uint8_t>(bth_flags_ | (f.solicited ? Bth::kSe : 0) | (l.pad << Bth::kPadCntShift));
    store_at(p, bth_offset_, Be16::of(static_cast<std::uint16_t>(f.opcode << 8 | flags)));
  }
  // The BTH's first byte of its last four: Resv7 and AckReq.
  std::uint8_t ack_byte(const RequestFields& f) const noexcept {
    return static_cast<std::uint8_t>(ack_req_ | (f.ack_requested ? Bth::kAckReq : 0));
  }
  // The BTH's last four bytes (AckReq, Resv7, PSN) in one store.
  [[gnu::always_inline]] void write_psn(std::byte* p, std::uint8_t ack, std::uint32_t psn) const noexcept {
    store_at(p, bth_offset_ + offsetof(Bth, ack_req), Be32::of(std::uint32_t{ack} << 24 | (psn & 0xFFFFFF)));
  }
  // The opcode's extension headers after the BTH. The commonest requests carry a RETH alone (a
  // WRITE ONLY or FIRST, a READ) or nothing (a SEND ONLY, FIRST or MIDDLE): stored as
  // write_ext_headers() would store them, without its test of every header kind (a call and ten
  // tests a frame).
  [[gnu::always_inline]] void write_ext(const OpcodeInfo& info, const ExtHeaders& ext, std::byte* p) const noexcept {
    switch (info.headers) {
      case 0: break;
      case header_bit(ExtHeader::Reth): std::memcpy(p + bytes_, &ext.reth, sizeof ext.reth); break;
      default: write_ext_headers(info, ext, p + bytes_);
    }
  }
  // head_ into p: a length the compiler knows for the common paths (moves, no memcpy call).
  [[gnu::always_inline]] void copy_head(std::byte* p) const noexcept {
    if (bytes_ == kV4Bytes) std::memcpy(p, head_.data(), kV4Bytes);
    else if (bytes_ == kV6Bytes) std::memcpy(p, head_.data(), kV6Bytes);
    else std::memcpy(p, head_.data(), bytes_);
  }
  template <typename H>
  [[gnu::always_inline]] static void store_at(std::byte* p, std::size_t off, const H& h) noexcept {
    std::memcpy(p + off, &h, sizeof(H));
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
  // image_for()'s: a cache of what the template writes, made by const calls.
  mutable Image image_;
};

inline BuildError RequestTemplate::write_from_image(const Image& image, std::uint32_t psn, const ExtHeaders& ext,
                                                    MutableByteSpan out) const noexcept {
  if (!image.layout_.ok()) return image.layout_.error;
  if (out.size() < image.layout_.length) return BuildError::BufferTooSmall;
  std::byte* p = out.data();
  if (bytes_ == kV4Bytes) std::memcpy(p, image.bytes_.data(), kV4Bytes);
  else if (bytes_ == kV6Bytes) std::memcpy(p, image.bytes_.data(), kV6Bytes);
  else std::memcpy(p, image.bytes_.data(), bytes_);
  write_psn(p, image.ack_, psn);
  write_ext(*image.info_, ext, p);
  return BuildError::None;
}

}  // namespace roce::proto
