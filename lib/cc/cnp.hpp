// The wire side of congestion notification: which received packets may trigger a CNP, and the
// FrameSpec of the RoCEv2 CNP the notification point sends back (spec 5.1, 5.3, 7.2).
#pragma once

#include <cstdint>

#include "protocol/builder.hpp"
#include "protocol/packet.hpp"

namespace roce::cc {

// CE-marked and data-bearing: SEND and RDMA WRITE requests (any transport) and RDMA READ
// responses. Never ACKs/NAKs, CNPs, READ or atomic requests, or packets without CE (RFC 3168:
// ECT(0), ECT(1) and Not-ECT all mean "not congested"). Whether the QP has CC enabled is the
// caller's decision.
bool triggers_cnp(const proto::Packet& p);

struct CnpParams {
  std::uint8_t dscp = 48;                   // np_cnp_dscp
  proto::Ecn ecn = proto::Ecn::Ect0;        // CNPs are ECN-capable (CX-4 Lx sends ToS 0xC2)
  std::uint8_t pcp = 6;                     // np_cnp_prio, used only when the reply is VLAN-tagged
  std::uint16_t udp_src_port = 0;           // CX-4 Lx sends 0
  std::uint8_t ttl = 64;
};

struct CnpEndpoints {
  proto::IpVersion ip_version = proto::IpVersion::V4;
  proto::Ipv4Addr src4{};  // our address
  proto::Ipv4Addr dst4{};  // the data sender's address
  proto::Ipv6Addr src6{};
  proto::Ipv6Addr dst6{};
};

// A CNP for the remote (data-sending) QP: opcode 0x81, BECN set, P_Key 0xFFFF, PSN 0, 16 zero
// bytes, UDP checksum 0, IPv4 DF with id 0. No Ethernet header: the caller adds L2 or uses
// cnp_reply_spec().
proto::FrameSpec cnp_frame_spec(const CnpEndpoints& ep, std::uint32_t remote_qpn, const CnpParams& params);

// The CNP answering `marked`: addresses and MACs swapped, the VLAN tags kept with their PCP set
// to params.pcp. `remote_qpn` comes from the receiving QP's context (the marked packet carries
// our own QPN).
proto::FrameSpec cnp_reply_spec(const proto::Packet& marked, std::uint32_t remote_qpn, const CnpParams& params);

}  // namespace roce::cc
