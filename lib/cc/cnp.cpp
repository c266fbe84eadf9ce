#include "lib/cc/cnp.hpp"

namespace roce::cc {

using proto::Operation;

bool triggers_cnp(const proto::Packet& p) {
  if (p.ecn() != proto::Ecn::Ce) return false;
  const proto::OpcodeInfo& info = proto::opcode_info(p.opcode());
  if (!info.valid) return false;
  switch (info.operation) {
    case Operation::Send:
    case Operation::Write: return info.is_request;
    case Operation::ReadResponse: return true;
    default: return false;
  }
}

proto::FrameSpec cnp_frame_spec(const CnpEndpoints& ep, std::uint32_t remote_qpn, const CnpParams& params) {
  proto::FrameSpec s;
  s.with_ethernet = false;
  s.ip_version = ep.ip_version;
  const auto tos = static_cast<std::uint8_t>(params.dscp << 2 | static_cast<std::uint8_t>(params.ecn));
  s.ipv4.src = ep.src4;
  s.ipv4.dst = ep.dst4;
  s.ipv4.tos = tos;
  s.ipv4.id = 0;
  s.ipv4.flags_fragment = proto::Ipv4Header::kDontFragment;
  s.ipv4.ttl = params.ttl;
  s.ipv6.src = ep.src6;
  s.ipv6.dst = ep.dst6;
  s.ipv6.traffic_class = tos;
  s.ipv6.flow_label = 0;
  s.ipv6.hop_limit = params.ttl;
  s.udp_src_port = params.udp_src_port;
  s.udp_dst_port = proto::kRoceV2Port;
  s.udp_checksum = 0;
  s.bth = proto::Bth{};
  s.bth.opcode = proto::raw(proto::Opcode::Cnp);
  s.bth.pkey.set(proto::Bth::kDefaultPkey);
  s.bth.set_becn(true);
  s.bth.dest_qp.set(remote_qpn & 0xFFFFFF);
  s.bth.psn.set(0);
  s.ext.cnp = proto::CnpReserved{};
  return s;
}

proto::FrameSpec cnp_reply_spec(const proto::Packet& marked, std::uint32_t remote_qpn, const CnpParams& params) {
  CnpEndpoints ep;
  ep.ip_version = marked.ip_version;
  ep.src4 = marked.ipv4.dst;
  ep.dst4 = marked.ipv4.src;
  ep.src6 = marked.ipv6.dst;
  ep.dst6 = marked.ipv6.src;
  proto::FrameSpec s = cnp_frame_spec(ep, remote_qpn, params);
  if (!marked.has_l2) return s;
  s.with_ethernet = true;
  s.eth = marked.eth;
  s.eth.src = marked.eth.dst;
  s.eth.dst = marked.eth.src;
  constexpr std::uint16_t kPcpShift = 13;
  constexpr std::uint16_t kVidDeiMask = 0x1FFF;
  for (std::uint8_t i = 0; i < s.eth.vlan_count && i < s.eth.vlan_tci.size(); ++i)
    s.eth.vlan_tci[i] = static_cast<std::uint16_t>((s.eth.vlan_tci[i] & kVidDeiMask) | params.pcp << kPcpShift);
  return s;
}

}  // namespace roce::cc
