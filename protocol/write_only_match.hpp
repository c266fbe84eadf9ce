// A run's RC WRITE ONLY recognised by its header bytes (issue 26, the responder alone): the frames
// one flow sends differ only in a few fields (IP total length, ID and checksum, UDP length and
// checksum, the BTH's flags byte, AckReq and PSN, the RETH), so a frame whose other header bytes
// equal a template's (the flow's header image, taken from a frame parse_frame accepted) needs
// none of the parser's tests of them: only the varying fields' own checks, the IPv4 header
// checksum (the template's words summed once) and the ICRC (the flow's CRC state, icrc_linear's
// IcrcFlow, computed once). Such a frame is one parse_frame would accept, with the same fields and
// IcrcStatus::Ok; the converse does not hold (a frame of another flow, or with an Ethernet tag,
// IPv6, or a payload above kWriteOnlyMatchMaxPayload, does not match and is the parser's), so a
// caller falls back to parse_frame on any mismatch (docs/perf-changes.md section 82).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include <smmintrin.h>

#include "protocol/be.hpp"
#include "protocol/crc32_short.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/packet.hpp"
#include "protocol/parser.hpp"

namespace roce::proto {

// Where an untagged IPv4 RC WRITE ONLY or ACKNOWLEDGE frame (no IP options) has its headers.
namespace write_only_frame {
inline constexpr std::size_t kIp = sizeof(EthernetHeader);            // 14
inline constexpr std::size_t kUdp = kIp + kIpv4HeaderBytes;           // 34
inline constexpr std::size_t kBth = kUdp + sizeof(UdpHeader);         // 42
inline constexpr std::size_t kExt = kBth + sizeof(Bth);               // 54: the RETH or AETH
inline constexpr std::size_t kReth = kExt;
inline constexpr std::size_t kPayload = kReth + sizeof(Reth);         // 70
// The IP total length of an empty WRITE ONLY: the headers from IPv4's on and the ICRC.
inline constexpr std::size_t kEmptyTotal = kPayload - kIp + kIcrcBytes;  // 60
// An ACKNOWLEDGE's (no payload): 48, a 62-byte frame.
inline constexpr std::size_t kAckTotal = kExt + sizeof(Aeth) - kIp + kIcrcBytes;
// The bytes compared: four 16-byte lines of the frame, at 0, 16, 32 and 42 (the last ends with
// the BTH's and an AETH's bytes, so that an ACK's 62-byte frame holds all four; a WRITE ONLY's
// RETH varies and is not compared). kImage bytes of image, line k at image byte 16 k.
inline constexpr std::size_t kLastLine = kExt + sizeof(Aeth) - 16;    // 42
inline constexpr std::size_t kImage = 64;
inline constexpr std::size_t kCompared = kLastLine + 16;             // 58: the frame's bytes read
}  // namespace write_only_frame

// The largest payload plus pad a template matches: the datagram (to the ICRC) within one pass of
// crc32_short.hpp's kernel, as parse_frame's own ICRC of such a frame (compute_icrc_linear).
inline constexpr std::size_t kWriteOnlyMatchMaxPayload =
    kCrc32ShortMax - (write_only_frame::kEmptyTotal - kIcrcBytes);  // 200

// A frame the template matched: its BTH, RETH and payload read where they are. The accessors are
// the parsed Packet's values for the same frame (psn() is bth.psn, va() ext.reth.va, ...); a
// matched ACKNOWLEDGE has length 0 and no RETH.
struct MatchedWriteOnly {
  const std::byte* frame = nullptr;
  std::uint32_t length = 0;  // payload bytes (the pad left out)

  std::uint32_t psn() const noexcept {
    // The A bit's byte and the PSN in one load (the BTH's last word).
    return be32(write_only_frame::kBth + offsetof(Bth, ack_req)) & 0xFFFFFF;
  }
  bool ack_requested() const noexcept {
    return (static_cast<std::uint8_t>(frame[write_only_frame::kBth + offsetof(Bth, ack_req)]) & Bth::kAckReq) != 0;
  }
  std::uint32_t payload_length() const noexcept { return length; }
  std::uint64_t va() const noexcept {
    Be64 v;
    std::memcpy(&v, frame + write_only_frame::kReth + offsetof(Reth, va), sizeof v);
    return v.get();
  }
  std::uint32_t rkey() const noexcept { return be32(write_only_frame::kReth + offsetof(Reth, rkey)); }
  std::uint32_t dma_length() const noexcept { return be32(write_only_frame::kReth + offsetof(Reth, dma_length)); }
  static constexpr bool deferred() noexcept { return false; }  // the ICRC was checked whole
  const std::byte* payload() const noexcept { return frame + write_only_frame::kPayload; }

 private:
  std::uint32_t be32(std::size_t at) const noexcept {
    Be32 v;
    std::memcpy(&v, frame + at, sizeof v);
    return v.get();
  }
};

// One flow's header image: an RC WRITE ONLY's (a run's, section 82) or an RC ACKNOWLEDGE's (a
// requester's ACKs, section 87).
class WriteOnlyTemplate {
 public:
  // Matches nothing until set (an image of zeros would match a frame of zeros with a CRC to suit).
  WriteOnlyTemplate() noexcept { suspend(); }
  // Takes the flow of `frame`, which parse_frame accepted with `opts` (`pkt`), as the template:
  // its Ethernet addresses, IPv4 header (but length, ID, checksum), UDP ports, P_Key and
  // destination QP, with opcode RC WRITE ONLY and the BTH's reserved byte (FECN, BECN) clear
  // whatever the frame's were (the caller's expectation of the run's next frames, as
  // Engine::straight_bth's). False, and the template matches nothing, where no frame of the flow
  // could match: a VLAN tag, IPv6, IPv4 options, a CE mark, options under which parse_frame would
  // not check such a frame's ICRC whole (verify_icrc off, deferred below the match's largest
  // payload) or would refuse a payload it takes (a path MTU below it). The flow's CRC state is
  // computed only when the flow's bytes differ from the last template's.
  bool set(ByteSpan frame, const Packet& pkt, const ParseOptions& opts) noexcept {
    return set(frame, pkt, opts, Opcode::RcWriteOnly, true);
  }
  // The same from an RC WRITE ONLY or RC ACKNOWLEDGE that parse_frame accepted with a good ICRC
  // and IPv4 checksum, as it is (its own opcode and reserved byte): the frames of its flow and
  // opcode (an ACKNOWLEDGE's lengths are then its one length: no payload). A frame refused leaves
  // the template as it was (set() suspends it).
  bool learn(ByteSpan frame, const Packet& pkt, const ParseOptions& opts) noexcept;
  // This template as `other` is, with nothing computed (the image and the flow's CRC state).
  void adopt(const WriteOnlyTemplate& other) noexcept { *this = other; }
  // Matches nothing until the next set() (which reuses the flow's state when it is the same flow).
  void suspend() noexcept { expect_[kSuspendAt] = 1; }
  bool active() const noexcept { return expect_[kSuspendAt] == 0; }
  // The image's BTH opcode and reserved byte (an active template's).
  std::uint8_t opcode() const noexcept { return expect_[write_only_frame::kBth]; }
  std::uint8_t resv8a() const noexcept { return expect_[write_only_frame::kBth + offsetof(Bth, resv8a)]; }

  // Whether `frame` is a frame of the template's flow and opcode that parse_frame (with the
  // options set() saw) accepts with IcrcStatus::Ok: the template's bytes, the lengths (IP total
  // = UDP + 20, the frame holds the datagram, payload+pad a multiple of 4 and at most
  // kWriteOnlyMatchMaxPayload (an ACK: none), PadCnt within it), TVer 0, a good IPv4 header
  // checksum and a good ICRC. Fills `out` only when it matches.
  [[gnu::always_inline]] bool match(ByteSpan frame, MatchedWriteOnly& out) const noexcept {
    namespace wo = write_only_frame;
    // Suspended (no run: every frame at queue depth 1) is a byte's test, not the lines' compare.
    if (!active() || frame.size() < empty_total_ + wo::kIp) return false;
    const std::byte* f = frame.data();
    // The invariant bytes: four 16-byte lines, masked, compared at once.
    __m128i diff = _mm_setzero_si128();
    for (std::size_t i = 0; i < wo::kImage; i += 16) {
      const __m128i line = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + (i < 48 ? i : wo::kLastLine)));
      const __m128i keep = _mm_load_si128(reinterpret_cast<const __m128i*>(kKeep.data() + i));
      const __m128i want = _mm_load_si128(reinterpret_cast<const __m128i*>(expect_.data() + i));
      diff = _mm_or_si128(diff, _mm_xor_si128(_mm_and_si128(line, keep), want));
    }
    if (!_mm_testz_si128(diff, diff)) return false;
    const std::uint32_t total = be16(f + wo::kIp + offsetof(Ipv4Header, total_length));
    // payload + pad; wraps to a large value below the empty length
    const std::uint32_t payload_and_pad = total - empty_total_;
    if (payload_and_pad > max_payload_and_pad_ || payload_and_pad % 4 != 0 || frame.size() < wo::kIp + total) return false;
    if (be16(f + wo::kUdp + offsetof(UdpHeader, length)) != total - kIpv4HeaderBytes) return false;
    // PadCnt (TVer is in the compared bytes): above the payload+pad only when that is 0.
    const std::uint32_t pad = (static_cast<std::uint8_t>(f[wo::kBth + offsetof(Bth, flags)]) & Bth::kPadCntMask) >> Bth::kPadCntShift;
    if (pad > payload_and_pad) return false;
    // The IPv4 header sums to 0xFFFF with its checksum (internet_checksum's zero): the template's
    // words and the three that vary.
    std::uint32_t sum = ip_words_ + total + be16(f + wo::kIp + offsetof(Ipv4Header, id)) +
                        be16(f + wo::kIp + offsetof(Ipv4Header, checksum));
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    if (sum != 0xFFFF) return false;
    const std::size_t datagram = total - kIcrcBytes;
    Le32 icrc;
    std::memcpy(&icrc, f + wo::kIp + datagram, sizeof icrc);
    if (flow_.prefix(backend_, frame.subspan(wo::kIp, datagram), datagram) != icrc.get()) return false;
    out.frame = f;
    out.length = payload_and_pad - pad;
    return true;
  }

 private:
  friend class FlowTemplate;
  bool set(ByteSpan frame, const Packet& pkt, const ParseOptions& opts, Opcode as, bool clear_resv8a) noexcept;
  bool take(ByteSpan frame, const Packet& pkt, const ParseOptions& opts, Opcode as, bool clear_resv8a) noexcept;
  static std::uint32_t be16(const std::byte* p) noexcept {
    Be16 v;
    std::memcpy(&v, p, sizeof v);
    return v.get();
  }
  // The bits of the image the template holds (the others vary from frame to frame).
  static constexpr std::array<std::uint8_t, write_only_frame::kImage> keep_mask() noexcept;
  alignas(16) static const std::array<std::uint8_t, write_only_frame::kImage> kKeep;
  // A byte the masks drop (the IP ID's first): nonzero there, no frame matches.
  static constexpr std::size_t kSuspendAt = write_only_frame::kIp + offsetof(Ipv4Header, id);

  alignas(16) std::array<std::uint8_t, write_only_frame::kImage> expect_{};  // the image, masked
  std::uint32_t ip_words_ = 0;             // the IPv4 header's kept 16-bit words, summed
  std::uint32_t empty_total_ = write_only_frame::kEmptyTotal;  // the IP total length without payload
  std::uint32_t max_payload_and_pad_ = 0;
  CrcBackend backend_ = CrcBackend::Isal;
  IcrcFlow flow_;
  bool flow_known_ = false;  // expect_ (but kSuspendAt) is the image flow_ was computed for
};

// A QP's template of one kind of frame it receives (its peer's WRITE ONLYs, or its ACKs) that
// hands on the Packet parse_frame would have made of a matched frame: the template frame's
// parsed Packet with the fields that vary put in from the frame (IP ID and checksum, UDP length
// and checksum, the BTH, the RETH or AETH, the payload, the ICRC). The frame's bytes are read
// again but for the parse: every check parse_frame makes is made or implied by the match
// (docs/perf-changes.md section 87).
class FlowTemplate {
 public:
  // WriteOnlyTemplate::learn, the parsed Packet kept.
  bool learn(ByteSpan frame, const Packet& pkt, const ParseOptions& opts) noexcept;
  void suspend() noexcept { t_.suspend(); }
  bool active() const noexcept { return t_.active(); }
  const WriteOnlyTemplate& image() const noexcept { return t_; }

  // The Packet parse_frame makes of `frame` (ParseError::None), when the template matches it.
  [[gnu::always_inline]] bool match(ByteSpan frame, Packet& out) const noexcept {
    namespace wo = write_only_frame;
    MatchedWriteOnly m;
    if (!t_.match(frame, m)) return false;
    const std::byte* f = m.frame;
    copy_packet(out);
    const std::uint32_t total = WriteOnlyTemplate::be16(f + wo::kIp + offsetof(Ipv4Header, total_length));
    out.datagram_end = wo::kIp + total;
    out.ipv4.id = static_cast<std::uint16_t>(WriteOnlyTemplate::be16(f + wo::kIp + offsetof(Ipv4Header, id)));
    out.ipv4_checksum = static_cast<std::uint16_t>(WriteOnlyTemplate::be16(f + wo::kIp + offsetof(Ipv4Header, checksum)));
    out.udp_length = static_cast<std::uint16_t>(total - kIpv4HeaderBytes);
    out.udp_checksum = static_cast<std::uint16_t>(WriteOnlyTemplate::be16(f + wo::kUdp + offsetof(UdpHeader, checksum)));
    std::memcpy(&out.bth, f + wo::kBth, sizeof(Bth));
    if (ack_) std::memcpy(&out.ext.aeth, f + wo::kExt, sizeof(Aeth));
    else std::memcpy(&out.ext.reth, f + wo::kExt, sizeof(Reth));
    out.payload = ByteSpan(f + out.payload_offset, m.length);
    out.payload_length = m.length;
    Le32 icrc;
    std::memcpy(&icrc, f + out.datagram_end - kIcrcBytes, sizeof icrc);
    out.icrc = icrc.get();
    return true;
  }

 private:
  // The kept Packet, in 16-byte moves (as parse_frame's reset: a struct copy became a memcpy call
  // or `rep movs`).
  [[gnu::always_inline]] void copy_packet(Packet& out) const noexcept {
    constexpr std::size_t kLines = sizeof(Packet) / 16, kTail = sizeof(Packet) % 16;
    const auto* from = reinterpret_cast<const std::byte*>(&pkt_);
    auto* to = reinterpret_cast<std::byte*>(&out);
    copy_lines(to, from, std::make_index_sequence<kLines>{});
    if constexpr (kTail != 0) std::memcpy(to + 16 * kLines, from + 16 * kLines, kTail);
  }
  // Straight-line moves, not a loop: gcc turns a copying loop back into `rep movsq`.
  template <std::size_t... I>
  [[gnu::always_inline]] static void copy_lines(std::byte* to, const std::byte* from, std::index_sequence<I...>) noexcept {
    (_mm_storeu_si128(reinterpret_cast<__m128i*>(to + 16 * I), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16 * I))), ...);
  }

  WriteOnlyTemplate t_;
  bool ack_ = false;
  Packet pkt_{};
};

}  // namespace roce::proto
