// Writes complete RoCEv2 frames into a caller buffer: Ethernet (optional VLAN tags), IPv4 or
// IPv6, UDP 4791, BTH, the opcode's extension headers, payload, pad and ICRC. Lengths, PadCnt,
// the IPv4 header checksum and the ICRC are computed here; everything else comes from the spec.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "protocol/packet.hpp"

namespace roce::proto {

class IcrcHeaderCache;  // icrc_linear.hpp
class IcrcFlow;

struct FrameSpec {
  bool with_ethernet = true;
  EthernetFields eth{};
  IpVersion ip_version = IpVersion::V4;
  Ipv4Fields ipv4{};
  Ipv6Fields ipv6{};
  std::uint16_t udp_src_port = 0xC000;
  std::uint16_t udp_dst_port = kRoceV2Port;
  std::uint16_t udp_checksum = 0;  // RoCEv2 sends 0; the ICRC protects the packet
  Bth bth{};                        // PadCnt is overwritten from the payload length
  ExtHeaders ext{};
  bool validate = true;             // refuse a payload length the opcode does not allow
  std::uint32_t pmtu = 0;           // for validation; 0 = any IBA MTU

  void set_ecn(Ecn e);
};

enum class BuildError : std::uint8_t { None, BufferTooSmall, UnknownOpcode, PayloadAbovePmtu, PayloadLengthInvalid, TooLarge };

// Where the parts of a frame go, for callers that fill the payload themselves (scatter/gather
// from registered memory) between write_headers() and seal().
struct FrameLayout {
  BuildError error = BuildError::None;
  std::size_t l3_offset = 0;
  std::size_t payload_offset = 0;
  std::uint32_t payload_length = 0;
  std::uint8_t pad = 0;
  std::size_t length = 0;  // whole frame, ICRC included
  bool ok() const { return error == BuildError::None; }
};

// The extension headers `info` names, from `ext`, at `at` (the end of the BTH).
[[gnu::always_inline]] inline void write_ext_headers(const OpcodeInfo& info, const ExtHeaders& ext, std::byte* at) noexcept {
  for_each_ext_header(ext, [&](const auto& h, auto kind) {
    constexpr auto i = static_cast<std::size_t>(decltype(kind)::value);
    static_assert(sizeof h == kExtHeaderBytes[i]);
    if (info.has(kind)) std::memcpy(at + info.offset[i], &h, sizeof h);
  });
}

FrameLayout layout_frame(const FrameSpec& spec, std::uint32_t payload_length) noexcept;
// Writes every header; the payload area is left for the caller.
FrameLayout write_headers(const FrameSpec& spec, std::uint32_t payload_length, MutableByteSpan out) noexcept;
// Writes the pad bytes and the ICRC once the payload is in place. With `cache`, the headers'
// share of the ICRC comes from the sender's flow templates (icrc_linear.hpp).
void seal(const FrameSpec& spec, const FrameLayout& layout, MutableByteSpan out, CrcBackend crc,
          IcrcHeaderCache* cache = nullptr) noexcept;
// Puts the payload (layout.payload_length bytes from `payload`) in place and seals. From
// kSealCopyingFrom bytes the payload's share of the ICRC is computed as it is copied
// (crc32_copy), so the payload is read once; below it, a copy and then seal.
void place_and_seal(const FrameSpec& spec, const FrameLayout& layout, MutableByteSpan out, CrcBackend crc,
                    const std::byte* payload, IcrcHeaderCache* cache = nullptr) noexcept;
inline constexpr std::uint32_t kSealCopyingFrom = 2048;
// place_unsealed() for a payload the caller put in place itself (a requester run's short
// payload, copied without a call: lib/rdma/short_copy.hpp): the pad zeroed, the datagram
// returned.
inline MutableByteSpan pad_unsealed(const FrameLayout& l, MutableByteSpan out) noexcept {
  // The pad (0-3 bytes) in one 4-byte store: the frame runs pad + 4 bytes past pad_at (the
  // ICRC), so the store stays inside it.
  const std::size_t pad_at = l.payload_offset + l.payload_length;
  std::memset(out.data() + pad_at, 0, kIcrcBytes);
  return out.subspan(l.l3_offset, pad_at + l.pad - l.l3_offset);
}
// place_and_seal() without the seal, for a payload below kSealCopyingFrom: the payload copied
// and the pad bytes zeroed. Returns the datagram the ICRC covers (IP header to the last pad
// byte); the ICRC goes in the four bytes after it (IcrcSealBatch, icrc_batch.hpp), whose first
// 4 - pad bytes the pad's store zeroes (the seal writes them). `out` holds the layout's whole
// frame (write_headers checked that).
// Inline: a requester run's every frame (the call and its saves were a third of its cost).
inline MutableByteSpan place_unsealed(const FrameLayout& l, MutableByteSpan out, const std::byte* payload) noexcept {
  // The length goes through an empty asm so the compiler no longer knows it is below 2 KiB:
  // knowing it, gcc's generic tuning (the portable x86-64-v2 build) inlined this copy as a
  // `rep movsq`, whose start-up was most of the 9 % a 64 B WRITE's build cost over the
  // -march=native build (docs/perf-changes.md 24); libc's memcpy picks its instructions at
  // run time.
  std::size_t n = l.payload_length;
  asm("" : "+r"(n));
  if (n) std::memcpy(out.data() + l.payload_offset, payload, n);
  return pad_unsealed(l, out);
}
// The same two with the headers' share from one flow's state (a connection's request template:
// request_template.hpp), for frames of that flow.
void seal(const IcrcFlow& flow, const FrameLayout& layout, MutableByteSpan out, CrcBackend crc) noexcept;
void place_and_seal(const IcrcFlow& flow, const FrameLayout& layout, MutableByteSpan out, CrcBackend crc,
                    const std::byte* payload) noexcept;
// All of it, copying `payload`.
FrameLayout build_frame(const FrameSpec& spec, ByteSpan payload, MutableByteSpan out, CrcBackend crc) noexcept;

// The spec that rebuilds a parsed packet byte for byte (the payload is packet.payload).
FrameSpec frame_spec_from(const Packet& packet);

std::string to_string(BuildError e);

}  // namespace roce::proto
