// The general services interface on RoCEv2 (IBA 13.5, A17): MADs travel as UD SEND_ONLY
// (opcode 0x64) with a DETH, to and from QP1, Q_Key 0x80010000, one 256-byte MAD per packet.
// Builds such frames through the common builder and checks received ones before the MAD
// parser (mad_parser.hpp) reads the payload.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/builder.hpp"
#include "protocol/mad.hpp"
#include "protocol/packet.hpp"

namespace roce::proto {

inline constexpr std::uint32_t kGsiQpn = 1;
inline constexpr std::uint32_t kGsiQkey = 0x80010000;  // IB_QP1_QKEY

// Where a MAD goes on the wire; everything the frame needs besides the MAD itself.
struct GsiRoute {
  bool with_ethernet = true;
  EthernetFields eth{};
  IpVersion ip_version = IpVersion::V4;
  Ipv4Fields ipv4{};
  Ipv6Fields ipv6{};
  std::uint16_t udp_src_port = 0xC000;
  std::uint16_t pkey = Bth::kDefaultPkey;
  std::uint32_t dest_qp = kGsiQpn;    // a redirected class agent may live elsewhere
  std::uint32_t src_qp = kGsiQpn;
};

// The frame spec of one MAD: UD SEND_ONLY, BTH.PSN = psn (QP1's own send counter), DETH with
// the GSI Q_Key and the source QP.
FrameSpec gsi_frame_spec(const GsiRoute& route, std::uint32_t psn);
// Builds the whole frame (ICRC included) into out.
FrameLayout build_gsi_frame(const GsiRoute& route, std::uint32_t psn, const Mad& mad, MutableByteSpan out,
                            CrcBackend crc = CrcBackend::Isal) noexcept;

enum class GsiError : std::uint8_t {
  None,
  NotUdSend,    // anything but UD SEND_ONLY (SEND_ONLY_WITH_IMMEDIATE included: MADs carry none)
  NotQp1,       // destination QP is not 1
  BadQkey,      // DETH Q_Key is not 0x80010000
  BadPkey,      // BTH P_Key does not match the port's
  WrongLength,  // payload is not one 256-byte MAD
  Count,
};

// Checks a parsed packet as QP1 would before handing its payload to the MAD parser.
GsiError check_gsi_packet(const Packet& p, std::uint16_t port_pkey = Bth::kDefaultPkey) noexcept;

std::string to_string(GsiError e);

}  // namespace roce::proto
