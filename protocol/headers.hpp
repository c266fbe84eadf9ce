// Packed RoCEv2 wire headers (Ethernet, IPv4/IPv6, UDP, BTH and the IBA extension headers).
// Multi-byte fields carry their byte order in their type; single-bit flags are read through
// masks, never bit-fields, so the layout is the same on every host.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "protocol/be.hpp"

namespace roce::proto {

using MacAddr = std::array<std::uint8_t, 6>;
using Ipv4Addr = std::array<std::uint8_t, 4>;
using Ipv6Addr = std::array<std::uint8_t, 16>;

inline constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr std::uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr std::uint16_t kEtherTypeArp = 0x0806;
inline constexpr std::uint16_t kEtherTypeVlan = 0x8100;
inline constexpr std::uint16_t kEtherTypeQinQ = 0x88A8;
inline constexpr std::uint16_t kEtherTypeRoceV1 = 0x8915;
inline constexpr std::uint8_t kIpProtoUdp = 17;
inline constexpr std::uint16_t kRoceV2Port = 4791;

struct EthernetHeader {
  MacAddr dst;
  MacAddr src;
  Be16 ether_type;
};
static_assert(sizeof(EthernetHeader) == 14);

struct VlanTag {
  Be16 tci;         // PCP(3) | DEI(1) | VID(12)
  Be16 ether_type;  // the EtherType that follows this tag
};
static_assert(sizeof(VlanTag) == 4);

// RFC 3168 codepoints of the two low bits of IPv4 TOS / IPv6 Traffic Class.
enum class Ecn : std::uint8_t { NotEct = 0, Ect1 = 1, Ect0 = 2, Ce = 3 };

struct Ipv4Header {
  std::uint8_t version_ihl;
  std::uint8_t tos;  // DSCP << 2 | ECN
  Be16 total_length;
  Be16 id;
  Be16 flags_fragment;  // 0x4000 DF, 0x2000 MF, low 13 bits offset
  std::uint8_t ttl;
  std::uint8_t protocol;
  Be16 checksum;
  Ipv4Addr src;
  Ipv4Addr dst;

  static constexpr std::uint16_t kDontFragment = 0x4000;
  static constexpr std::uint16_t kMoreFragments = 0x2000;
  static constexpr std::uint16_t kFragmentOffsetMask = 0x1FFF;
  constexpr std::uint8_t version() const { return version_ihl >> 4; }
  constexpr std::size_t header_bytes() const { return std::size_t{version_ihl & 0x0Fu} * 4; }
  constexpr Ecn ecn() const { return static_cast<Ecn>(tos & 0x03); }
  constexpr std::uint8_t dscp() const { return tos >> 2; }
};
static_assert(sizeof(Ipv4Header) == 20);

struct Ipv6Header {
  Be32 ver_tc_flow;  // version(4) | traffic class(8) | flow label(20)
  Be16 payload_length;
  std::uint8_t next_header;
  std::uint8_t hop_limit;
  Ipv6Addr src;
  Ipv6Addr dst;

  constexpr std::uint8_t version() const { return static_cast<std::uint8_t>(ver_tc_flow.get() >> 28); }
  constexpr std::uint8_t traffic_class() const {
    return static_cast<std::uint8_t>((ver_tc_flow.get() >> 20) & 0xFF);
  }
  constexpr std::uint32_t flow_label() const { return ver_tc_flow.get() & 0xFFFFF; }
  constexpr Ecn ecn() const { return static_cast<Ecn>(traffic_class() & 0x03); }
};
static_assert(sizeof(Ipv6Header) == 40);

struct UdpHeader {
  Be16 src_port;
  Be16 dst_port;
  Be16 length;  // UDP header + BTH ... ICRC
  Be16 checksum;
};
static_assert(sizeof(UdpHeader) == 8);

// Base Transport Header.
struct Bth {
  std::uint8_t opcode;
  std::uint8_t flags;  // SE | M | PadCnt(2) | TVer(4)
  Be16 pkey;
  std::uint8_t resv8a;  // FECN | BECN | Resv6; masked to ones in the ICRC
  Be24 dest_qp;
  std::uint8_t ack_req;  // A | Resv7
  Be24 psn;

  static constexpr std::uint8_t kSe = 0x80;
  static constexpr std::uint8_t kMigReq = 0x40;
  static constexpr std::uint8_t kPadCntMask = 0x30;
  static constexpr int kPadCntShift = 4;
  static constexpr std::uint8_t kTVerMask = 0x0F;
  static constexpr std::uint8_t kFecn = 0x80;
  static constexpr std::uint8_t kBecn = 0x40;
  static constexpr std::uint8_t kAckReq = 0x80;
  static constexpr std::uint16_t kDefaultPkey = 0xFFFF;

  constexpr bool se() const { return flags & kSe; }
  constexpr bool mig_req() const { return flags & kMigReq; }
  constexpr std::uint8_t pad_count() const { return (flags & kPadCntMask) >> kPadCntShift; }
  constexpr std::uint8_t tver() const { return flags & kTVerMask; }
  constexpr bool fecn() const { return resv8a & kFecn; }
  constexpr bool becn() const { return resv8a & kBecn; }
  constexpr bool ack_requested() const { return ack_req & kAckReq; }

  constexpr void set_flag(std::uint8_t& byte, std::uint8_t mask, bool on) {
    byte = static_cast<std::uint8_t>(on ? (byte | mask) : (byte & ~mask));
  }
  constexpr void set_se(bool on) { set_flag(flags, kSe, on); }
  constexpr void set_mig_req(bool on) { set_flag(flags, kMigReq, on); }
  constexpr void set_pad_count(std::uint8_t pad) {
    flags = static_cast<std::uint8_t>((flags & ~kPadCntMask) | ((pad << kPadCntShift) & kPadCntMask));
  }
  constexpr void set_fecn(bool on) { set_flag(resv8a, kFecn, on); }
  constexpr void set_becn(bool on) { set_flag(resv8a, kBecn, on); }
  constexpr void set_ack_requested(bool on) { set_flag(ack_req, kAckReq, on); }
};
static_assert(sizeof(Bth) == 12);

struct Rdeth {
  Be32 ee_context;  // reserved(8) | EE context(24)
};
static_assert(sizeof(Rdeth) == 4);

struct Deth {
  Be32 qkey;
  Be32 src_qp;  // reserved(8) | source QP(24)
  constexpr std::uint32_t source_qp() const { return src_qp.get() & 0xFFFFFF; }
};
static_assert(sizeof(Deth) == 8);

struct Reth {
  Be64 va;
  Be32 rkey;
  Be32 dma_length;
};
static_assert(sizeof(Reth) == 16);

struct AtomicEth {
  Be64 va;
  Be32 rkey;
  Be64 swap_add;
  Be64 compare;
};
static_assert(sizeof(AtomicEth) == 28);

struct Aeth {
  std::uint8_t syndrome;
  Be24 msn;
};
static_assert(sizeof(Aeth) == 4);

struct AtomicAckEth {
  Be64 original_data;
};
static_assert(sizeof(AtomicAckEth) == 8);

// Immediate data travels opaque: verbs hands it to the application in network order.
struct ImmDt {
  std::array<std::uint8_t, 4> bytes;
};
static_assert(sizeof(ImmDt) == 4);

struct Ieth {
  Be32 rkey;
};
static_assert(sizeof(Ieth) == 4);

// FLUSH extended transport header (IBTA 1.5): selectivity level bits 5..4, placement type 3..0.
struct Feth {
  Be32 bits;
};
static_assert(sizeof(Feth) == 4);

// The 16 reserved bytes that follow the BTH of a RoCEv2 CNP.
struct CnpReserved {
  std::array<std::uint8_t, 16> bytes;
};
static_assert(sizeof(CnpReserved) == 16);

inline constexpr std::size_t kIcrcBytes = 4;

std::string to_string(Ecn e);
std::string mac_to_string(const MacAddr& m);
std::string ipv4_to_string(const Ipv4Addr& a);
std::string ipv6_to_string(const Ipv6Addr& a);

}  // namespace roce::proto
