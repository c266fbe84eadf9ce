// Frames our builder does not write, assembled byte by byte for tests: Mellanox DC transport
// frames (RoCEv2, opcodes 0x40-0x5f, laid out as Wireshark's dissector reads them) and RoCEv1
// frames (EtherType 0x8915, GRH + BTH). Both end in a correct ICRC.
#pragma once

#include <cstring>
#include <vector>

#include "protocol/checksum.hpp"
#include "protocol/dc_transport.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"
#include "protocol/payload_rule.hpp"
#include "protocol/rocev1.hpp"

namespace roce::test {

struct VendorFrameSpec {
  std::uint8_t opcode = 0x4A;
  bool se = false;
  bool ack_req = true;
  std::uint32_t dest_qp = 0x000321;
  std::uint32_t psn = 0x000100;
  std::uint64_t dct_eth = 0x1122334455667788ull;  // DC only
  proto::ExtHeaders ext{};
  std::vector<std::byte> payload;
  std::uint8_t tos = 0x02;
};

namespace detail {

template <typename H>
void put(std::vector<std::byte>& f, const H& h) {
  const auto* p = reinterpret_cast<const std::byte*>(&h);
  f.insert(f.end(), p, p + sizeof h);
}

inline proto::Bth bth_of(const VendorFrameSpec& s, std::uint8_t pad) {
  proto::Bth b{};
  b.opcode = s.opcode;
  b.set_se(s.se);
  b.set_pad_count(pad);
  b.pkey.set(0xFFFF);
  b.dest_qp.set(s.dest_qp);
  b.set_ack_requested(s.ack_req);
  b.psn.set(s.psn);
  return b;
}

// The extension headers `bits` names, in wire order.
inline void put_ext(std::vector<std::byte>& f, const proto::ExtHeaders& ext, std::uint16_t bits) {
  proto::for_each_ext_header(ext, [&](const auto& h, auto kind) {
    if (bits & proto::header_bit(decltype(kind)::value)) put(f, h);
  });
}

inline void put_payload(std::vector<std::byte>& f, const VendorFrameSpec& s, std::uint8_t pad) {
  f.insert(f.end(), s.payload.begin(), s.payload.end());
  f.insert(f.end(), pad, std::byte{0});
}

inline void put_icrc(std::vector<std::byte>& f, std::uint32_t icrc) {
  f.resize(f.size() + proto::kIcrcBytes);
  proto::write_icrc(proto::MutableByteSpan(f).last(proto::kIcrcBytes), icrc);
}

inline void put_ethernet(std::vector<std::byte>& f, std::uint16_t type) {
  proto::EthernetHeader e{};
  e.dst = {0x02, 0, 0, 0, 0, 0x02};
  e.src = {0x02, 0, 0, 0, 0, 0x01};
  e.ether_type.set(type);
  put(f, e);
}

}  // namespace detail

inline std::vector<std::byte> dc_frame(const VendorFrameSpec& s) {
  using namespace proto;
  const DcOpcodeInfo info = dc_opcode_info(s.opcode, s.se);
  const std::uint8_t pad = pad_for(static_cast<std::uint32_t>(s.payload.size()));
  std::vector<std::byte> body;  // BTH to the last pad byte
  detail::put(body, detail::bth_of(s, pad));
  detail::put(body, Be64::of(s.dct_eth));
  if (info.connect_eth) body.insert(body.end(), kDcConnectEthBytes, std::byte{0xC5});
  detail::put_ext(body, s.ext, info.headers);
  detail::put_payload(body, s, pad);

  std::vector<std::byte> f;
  detail::put_ethernet(f, kEtherTypeIpv4);
  Ipv4Header ip{};
  ip.version_ihl = 0x45;
  ip.tos = s.tos;
  ip.total_length.set(static_cast<std::uint16_t>(sizeof(Ipv4Header) + sizeof(UdpHeader) + body.size() + kIcrcBytes));
  ip.flags_fragment.set(Ipv4Header::kDontFragment);
  ip.ttl = 64;
  ip.protocol = kIpProtoUdp;
  ip.src = {10, 0, 0, 1};
  ip.dst = {10, 0, 0, 2};
  ip.checksum.set(ipv4_header_checksum(ip.tos, ip.total_length.get(), 0, Ipv4Header::kDontFragment, 64, kIpProtoUdp, ip.src, ip.dst));
  detail::put(f, ip);
  UdpHeader udp{};
  udp.src_port.set(0xC123);
  udp.dst_port.set(kRoceV2Port);
  udp.length.set(static_cast<std::uint16_t>(sizeof(UdpHeader) + body.size() + kIcrcBytes));
  detail::put(f, udp);
  f.insert(f.end(), body.begin(), body.end());
  const std::size_t l3 = sizeof(EthernetHeader);
  detail::put_icrc(f, compute_icrc(CrcBackend::Portable, IpVersion::V4, ByteSpan(f).subspan(l3)));
  return f;
}

inline std::vector<std::byte> rocev1_frame(const VendorFrameSpec& s) {
  using namespace proto;
  const OpcodeInfo& info = opcode_info(s.opcode);
  const std::uint8_t pad = pad_for(static_cast<std::uint32_t>(s.payload.size()));
  std::vector<std::byte> body;
  detail::put(body, detail::bth_of(s, pad));
  detail::put_ext(body, s.ext, static_cast<std::uint16_t>(info.headers & ~header_bit(ExtHeader::CnpReserved)));
  if (info.has(ExtHeader::CnpReserved)) body.insert(body.end(), sizeof(CnpReserved), std::byte{0});
  detail::put_payload(body, s, pad);

  std::vector<std::byte> f;
  detail::put_ethernet(f, kEtherTypeRoceV1);
  Ipv6Header grh{};
  grh.ver_tc_flow.set(6u << 28 | std::uint32_t{s.tos} << 20 | 0x12345);
  grh.payload_length.set(static_cast<std::uint16_t>(body.size() + kIcrcBytes));
  grh.next_header = kGrhNextHeaderIba;
  grh.hop_limit = 1;
  grh.src[15] = 1;
  grh.dst[15] = 2;
  grh.src[0] = grh.dst[0] = 0xFE;
  grh.src[1] = grh.dst[1] = 0x80;
  detail::put(f, grh);
  f.insert(f.end(), body.begin(), body.end());
  const std::size_t grh_off = sizeof(EthernetHeader);
  detail::put_icrc(f, compute_icrc_v1(CrcBackend::Portable, ByteSpan(f).subspan(grh_off)));
  return f;
}

}  // namespace roce::test
