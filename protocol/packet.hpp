// A RoCEv2 packet as the parser decodes it and the builder writes it: the addressing of the
// frame, the BTH, the extension headers the opcode carries, and where the payload sits.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"
#include "protocol/opcode.hpp"

namespace roce::proto {

struct ExtHeaders {
  Rdeth rdeth{};
  Deth deth{};
  Feth feth{};
  Reth reth{};
  AtomicEth atomic{};
  Aeth aeth{};
  AtomicAckEth atomic_ack{};
  ImmDt imm{};
  Ieth ieth{};
  CnpReserved cnp{};

  // Storage of one extension header; lets parser and builder walk the opcode table.
  std::byte* storage(ExtHeader h) noexcept;
  const std::byte* storage(ExtHeader h) const noexcept {
    return const_cast<ExtHeaders*>(this)->storage(h);
  }
};

// Calls f(header, std::integral_constant<ExtHeader, kind>) for every extension header in wire
// order: the per-packet copies then have compile-time sizes (no memcpy call per header).
template <typename Ext, typename F>
constexpr void for_each_ext_header(Ext& e, F&& f) {
  using H = ExtHeader;
  f(e.rdeth, std::integral_constant<H, H::Rdeth>{});
  f(e.deth, std::integral_constant<H, H::Deth>{});
  f(e.feth, std::integral_constant<H, H::Feth>{});
  f(e.reth, std::integral_constant<H, H::Reth>{});
  f(e.atomic, std::integral_constant<H, H::AtomicEth>{});
  f(e.aeth, std::integral_constant<H, H::Aeth>{});
  f(e.atomic_ack, std::integral_constant<H, H::AtomicAckEth>{});
  f(e.imm, std::integral_constant<H, H::ImmDt>{});
  f(e.ieth, std::integral_constant<H, H::Ieth>{});
  f(e.cnp, std::integral_constant<H, H::CnpReserved>{});
  static_assert(static_cast<std::size_t>(H::CnpReserved) + 1 == kExtHeaderCount, "a header is missing above");
}

struct EthernetFields {
  MacAddr dst{};
  MacAddr src{};
  std::uint8_t vlan_count = 0;                 // 0..2 802.1Q/802.1ad tags
  std::array<std::uint16_t, 2> vlan_tpid{};    // TPID of each tag, outermost first
  std::array<std::uint16_t, 2> vlan_tci{};
};

struct Ipv4Fields {
  Ipv4Addr src{};
  Ipv4Addr dst{};
  std::uint8_t tos = 0;  // DSCP << 2 | ECN
  std::uint16_t id = 0;
  std::uint16_t flags_fragment = Ipv4Header::kDontFragment;
  std::uint8_t ttl = 64;
};

struct Ipv6Fields {
  Ipv6Addr src{};
  Ipv6Addr dst{};
  std::uint8_t traffic_class = 0;  // DSCP << 2 | ECN
  std::uint32_t flow_label = 0;
  std::uint8_t hop_limit = 64;
};

enum class IcrcStatus : std::uint8_t {
  Ok,
  Bad,
  NotCheckable,  // the capture holds fewer bytes than the packet, or IPv4 options are present
  NotChecked,    // the caller asked not to verify
  Deferred,      // headers checked; the payload's share is left to whoever copies it (icrc_deferred.hpp)
};

struct Packet {
  // Offsets into the buffer that was parsed. l2 is absent when parsing started at the IP header.
  bool has_l2 = false;
  std::size_t l3_offset = 0;
  std::size_t l4_offset = 0;
  std::size_t bth_offset = 0;
  std::size_t payload_offset = 0;
  std::size_t datagram_end = 0;  // end of the IP datagram; bytes after it are link-layer padding
  bool snap_truncated = false;   // the capture stops before the end of the datagram

  EthernetFields eth{};
  IpVersion ip_version = IpVersion::V4;
  Ipv4Fields ipv4{};
  Ipv6Fields ipv6{};
  std::uint16_t ipv4_checksum = 0;
  bool ipv4_checksum_ok = true;
  std::uint16_t udp_src_port = 0;
  std::uint16_t udp_dst_port = kRoceV2Port;
  std::uint16_t udp_length = 0;
  std::uint16_t udp_checksum = 0;

  Bth bth{};
  const OpcodeInfo* info = nullptr;
  ExtHeaders ext{};
  ByteSpan payload{};  // may be shorter than payload_length when snap_truncated
  std::uint32_t payload_length = 0;
  std::uint32_t icrc = 0;  // as on the wire, read least-significant byte first
  IcrcStatus icrc_status = IcrcStatus::NotChecked;
  std::uint32_t icrc_partial = 0;  // Deferred: the CRC of everything before the payload

  Ecn ecn() const { return ip_version == IpVersion::V4 ? static_cast<Ecn>(ipv4.tos & 3) : static_cast<Ecn>(ipv6.traffic_class & 3); }
  std::uint8_t opcode() const { return bth.opcode; }
  std::uint32_t dest_qp() const { return bth.dest_qp.get(); }
  std::uint32_t psn() const { return bth.psn.get(); }
};

std::string to_string(IcrcStatus s);

}  // namespace roce::proto
