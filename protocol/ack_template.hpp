// One connection's RC ACK frame, built once and patched per ACK (issue 26, the responder's ACK:
// docs/perf-changes.md section 39). An ACK's Ethernet, IP, UDP and BTH bytes are the same in
// every ACK of a connection but for the PSN; with the AETH (syndrome and MSN) that is the last
// 7 bytes before the ICRC. The IP header is fixed too (the length is, and the builder sends the
// path's ID, TOS and TTL), so its checksum is. A CRC is affine in its input: the ICRC of an ACK
// is the ICRC of the template (those 7 bytes zero) XOR the CRC register of the last 8 bytes
// entered into a zero register. So an ACK is a copy, one 8-byte store and an 8-byte CRC, where
// the builder laid out, wrote and checksummed every header and ran the ICRC over the header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"

namespace roce::proto {

class AckTemplate {
 public:
  // Ethernet with two VLAN tags, IPv6, UDP, BTH, AETH, ICRC: 90 bytes, rounded up so that a
  // frame buffer of this size takes a copy of constant length.
  static constexpr std::size_t kCapacity = 96;

  // Builds the ACK of the path `spec` (its addressing, P_Key and destination QP; its opcode, PSN
  // and extension headers are ignored) with the builder. false (and cleared) if the builder
  // refuses the path; ACKs are then built the long way.
  bool build(const FrameSpec& spec, CrcBackend crc) noexcept;
  void clear() noexcept { length_ = 0; }
  bool valid() const { return length_ != 0; }
  std::size_t length() const { return length_; }

  // Writes the ACK with `psn` (24 bits), `syndrome` and `msn` (24 bits) into `out`: the same
  // bytes as write_headers + seal of the path with opcode RcAck. Returns its length, or 0 when
  // there is no template or `out` is too short.
  std::size_t write(std::uint32_t psn, Syndrome syndrome, std::uint32_t msn, MutableByteSpan out) const noexcept;

 private:
  std::array<std::byte, kCapacity> frame_{};  // PSN and AETH zero, ICRC of that
  std::uint32_t icrc_ = 0;                    // the template's ICRC
  std::uint8_t length_ = 0;                   // 0: none
  std::uint8_t tail_at_ = 0;                  // offset of BTH byte 8 (AckReq), the first of the last 8 bytes
};

}  // namespace roce::proto
