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

#include <smmintrin.h>

#include "protocol/be.hpp"
#include "protocol/crc32_short.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/packet.hpp"
#include "protocol/parser.hpp"

namespace roce::proto {

// Where an untagged IPv4 RC WRITE ONLY frame (no IP options) has its headers.
namespace write_only_frame {
inline constexpr std::size_t kIp = sizeof(EthernetHeader);            // 14
inline constexpr std::size_t kUdp = kIp + kIpv4HeaderBytes;           // 34
inline constexpr std::size_t kBth = kUdp + sizeof(UdpHeader);         // 42
inline constexpr std::size_t kReth = kBth + sizeof(Bth);              // 54
inline constexpr std::size_t kPayload = kReth + sizeof(Reth);         // 70
// The IP total length of an empty WRITE ONLY: the headers from IPv4's on and the ICRC.
inline constexpr std::size_t kEmptyTotal = kPayload - kIp + kIcrcBytes;  // 60
inline constexpr std::size_t kImage = 64;                             // the bytes compared
}  // namespace write_only_frame

// The largest payload plus pad a template matches: the datagram (to the ICRC) within one pass of
// crc32_short.hpp's kernel, as parse_frame's own ICRC of such a frame (compute_icrc_linear).
inline constexpr std::size_t kWriteOnlyMatchMaxPayload =
    kCrc32ShortMax - (write_only_frame::kEmptyTotal - kIcrcBytes);  // 200

// A frame the template matched: its BTH, RETH and payload read where they are. The accessors are
// the parsed Packet's values for the same frame (psn() is bth.psn, va() ext.reth.va, ...).
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

class WriteOnlyTemplate {
 public:
  // Takes the flow of `frame`, which parse_frame accepted with `opts` (`pkt`), as the template:
  // its Ethernet addresses, IPv4 header (but length, ID, checksum), UDP ports, P_Key and
  // destination QP, with opcode RC WRITE ONLY and the BTH's reserved byte (FECN, BECN) clear
  // whatever the frame's were (the caller's expectation of the run's next frames, as
  // Engine::straight_bth's). False, and the template matches nothing, where no frame of the flow
  // could match: a VLAN tag, IPv6, IPv4 options, a CE mark, options under which parse_frame would
  // not check such a frame's ICRC whole (verify_icrc off, deferred below the match's largest
  // payload) or would refuse a payload it takes (a path MTU below it). The flow's CRC state is
  // computed only when the flow's bytes differ from the last template's.
  bool set(ByteSpan frame, const Packet& pkt, const ParseOptions& opts) noexcept;
  // Matches nothing until the next set() (which reuses the flow's state when it is the same flow).
  void suspend() noexcept { expect_[kSuspendAt] = 1; }
  bool active() const noexcept { return expect_[kSuspendAt] == 0; }

  // Whether `frame` is an RC WRITE ONLY of the template's flow that parse_frame (with the
  // options set() saw) accepts with IcrcStatus::Ok: the template's bytes, the lengths (IP total
  // = UDP + 20, the frame holds the datagram, payload+pad a multiple of 4 and at most
  // kWriteOnlyMatchMaxPayload, PadCnt within it), TVer 0, a good IPv4 header checksum and a good
  // ICRC. Fills `out` only when it matches.
  [[gnu::always_inline]] bool match(ByteSpan frame, MatchedWriteOnly& out) const noexcept {
    namespace wo = write_only_frame;
    // Suspended (no run: every frame at queue depth 1) is a byte's test, not the lines' compare.
    if (!active() || frame.size() < wo::kEmptyTotal + wo::kIp) return false;
    const std::byte* f = frame.data();
    // The invariant bytes: four 16-byte lines, masked, compared at once.
    __m128i diff = _mm_setzero_si128();
    for (std::size_t i = 0; i < wo::kImage; i += 16) {
      const __m128i line = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + i));
      const __m128i keep = _mm_load_si128(reinterpret_cast<const __m128i*>(kKeep.data() + i));
      const __m128i want = _mm_load_si128(reinterpret_cast<const __m128i*>(expect_.data() + i));
      diff = _mm_or_si128(diff, _mm_xor_si128(_mm_and_si128(line, keep), want));
    }
    if (!_mm_testz_si128(diff, diff)) return false;
    const std::uint32_t total = be16(f + wo::kIp + offsetof(Ipv4Header, total_length));
    // payload + pad; wraps to a large value below the empty length
    const std::uint32_t payload_and_pad = total - static_cast<std::uint32_t>(wo::kEmptyTotal);
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
  static std::uint32_t be16(const std::byte* p) noexcept {
    Be16 v;
    std::memcpy(&v, p, sizeof v);
    return v.get();
  }
  // The bits of the image the template holds (the others vary from frame to frame).
  static constexpr std::array<std::uint8_t, write_only_frame::kImage> keep_mask() noexcept;
  alignas(16) static const std::array<std::uint8_t, write_only_frame::kImage> kKeep;
  // A byte the mask drops (the IP total length's first): nonzero there, no frame matches.
  static constexpr std::size_t kSuspendAt = write_only_frame::kIp + offsetof(Ipv4Header, total_length);

  alignas(16) std::array<std::uint8_t, write_only_frame::kImage> expect_{};  // the image, masked
  std::uint32_t ip_words_ = 0;             // the IPv4 header's kept 16-bit words, summed
  std::uint32_t max_payload_and_pad_ = 0;
  CrcBackend backend_ = CrcBackend::Isal;
  IcrcFlow flow_;
  bool flow_known_ = false;  // expect_ (but kSuspendAt) is the image flow_ was computed for
};

}  // namespace roce::proto
