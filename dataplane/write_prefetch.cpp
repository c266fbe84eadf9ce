#include "dataplane/write_prefetch.hpp"

#include <cstddef>
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
  // The two fields alone: the DMA length is not needed (gcc read R_Key and DMA length as one
  // 8-byte word). Over IPv4 without VLAN the R_Key straddles the first and second cache lines
  // of the frame, which is why the worker asks for both three frames ahead (worker.cpp).
  const std::size_t reth = off + sizeof(Bth);
  const rdma::MemoryRegion* mr = mrs.find(load_header<Be32>(frame, reth + offsetof(Reth, rkey)).get());
  if (mr == nullptr || mr->addr == nullptr) return nullptr;
  const std::uint64_t at = load_header<Be64>(frame, reth + offsetof(Reth, va)).get() - mr->iova;  // wraps below iova
  if (at >= mr->length) return nullptr;
  return mr->addr + at;
}

}  // namespace roce::dp
