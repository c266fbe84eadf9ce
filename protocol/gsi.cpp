#include "protocol/gsi.hpp"

#include "protocol/pkey.hpp"

namespace roce::proto {

FrameSpec gsi_frame_spec(const GsiRoute& route, std::uint32_t psn) {
  FrameSpec s;
  s.with_ethernet = route.with_ethernet;
  s.eth = route.eth;
  s.ip_version = route.ip_version;
  s.ipv4 = route.ipv4;
  s.ipv6 = route.ipv6;
  s.udp_src_port = route.udp_src_port;
  s.bth.opcode = raw(Opcode::UdSendOnly);
  s.bth.pkey.set(route.pkey);
  s.bth.dest_qp.set(route.dest_qp);
  s.bth.psn.set(psn);
  s.ext.deth.qkey.set(kGsiQkey);
  s.ext.deth.src_qp.set(route.src_qp & 0xFFFFFF);
  return s;
}

FrameLayout build_gsi_frame(const GsiRoute& route, std::uint32_t psn, const Mad& mad, MutableByteSpan out,
                            CrcBackend crc) noexcept {
  return build_frame(gsi_frame_spec(route, psn), ByteSpan(mad), out, crc);
}

GsiError check_gsi_packet(const Packet& p, std::uint16_t port_pkey) noexcept {
  if (p.opcode() != raw(Opcode::UdSendOnly)) return GsiError::NotUdSend;
  if (p.dest_qp() != kGsiQpn) return GsiError::NotQp1;
  if (p.ext.deth.qkey.get() != kGsiQkey) return GsiError::BadQkey;
  if (!pkey_matches(p.bth.pkey.get(), port_pkey)) return GsiError::BadPkey;
  if (p.payload_length != kMadBytes) return GsiError::WrongLength;
  return GsiError::None;
}

std::string to_string(GsiError e) {
  switch (e) {
    case GsiError::None: return "ok";
    case GsiError::NotUdSend: return "not-ud-send-only";
    case GsiError::NotQp1: return "not-qp1";
    case GsiError::BadQkey: return "bad-qkey";
    case GsiError::BadPkey: return "bad-pkey";
    case GsiError::WrongLength: return "wrong-length";
    case GsiError::Count: break;
  }
  return "unknown";
}

}  // namespace roce::proto
