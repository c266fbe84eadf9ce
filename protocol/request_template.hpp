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

#include "protocol/builder.hpp"
#include "protocol/icrc_linear.hpp"

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
