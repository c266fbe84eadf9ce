#include "dataplane/write_prefetch.hpp"

#include <cstdint>

#include "protocol/headers.hpp"
#include "protocol/opcode.hpp"

namespace roce::dp {

using namespace roce::proto;

namespace {

bool starts_write(std::uint8_t op) noexcept {
  switch (static_cast<Opcode>(op)) {
    case Opcode::RcWriteFirst:
    case Opcode::RcWriteOnly:
    case Opcode::RcWriteOnlyImm:
    case Opcode::UcWriteFirst:
    case Opcode::UcWriteOnly:
    case Opcode::UcWriteOnlyImm: return true;
    default: return false;
  }
}

}  // namespace

// The walk to the BTH is peek_dest_qp's (protocol/parser.cpp), which stops at the QPN.
const std::byte* write_destination(std::span<const std::byte> frame, const rdma::MrTable& mrs) noexcept {
  std::size_t off = sizeof(EthernetHeader);
  if (frame.size() < off) return nullptr;
  std::uint16_t type = load_header<EthernetHeader>(frame, 0).ether_type.get();
  for (int tags = 0; (type == kEtherTypeVlan || type == kEtherTypeQinQ) && tags < 2; ++tags) {
    if (frame.size() < off + sizeof(VlanTag)) return nullptr;
    type = load_header<VlanTag>(frame, off).ether_type.get();
    off += sizeof(VlanTag);
  }
  if (type == kEtherTypeIpv4) {
    if (frame.size() < off + sizeof(Ipv4Header)) return nullptr;
    const auto ip = load_header<Ipv4Header>(frame, off);
    if (ip.protocol != kIpProtoUdp || ip.header_bytes() < sizeof(Ipv4Header)) return nullptr;
    off += ip.header_bytes();
  } else if (type == kEtherTypeIpv6) {
    if (frame.size() < off + sizeof(Ipv6Header)) return nullptr;
    if (load_header<Ipv6Header>(frame, off).next_header != kIpProtoUdp) return nullptr;
    off += sizeof(Ipv6Header);
  } else {
    return nullptr;
  }
  if (frame.size() < off + sizeof(UdpHeader) + sizeof(Bth) + sizeof(Reth)) return nullptr;
  if (load_header<UdpHeader>(frame, off).dst_port.get() != kRoceV2Port) return nullptr;
  off += sizeof(UdpHeader);
  if (!starts_write(load_header<Bth>(frame, off).opcode)) return nullptr;
  const auto reth = load_header<Reth>(frame, off + sizeof(Bth));
  const rdma::MemoryRegion* mr = mrs.find(reth.rkey.get());
  if (mr == nullptr || mr->addr == nullptr) return nullptr;
  const std::uint64_t at = reth.va.get() - mr->iova;  // wraps to a huge offset below iova
  if (at >= mr->length) return nullptr;
  return mr->addr + at;
}

}  // namespace roce::dp
