#include "dataplane/write_prefetch.hpp"

namespace roce::dp {

using namespace roce::proto;

// The walk to the BTH is peek_dest_qp's (protocol/parser.cpp), which stops at the QPN.
std::size_t WriteDestinations::write_reth_offset(std::span<const std::byte> frame) noexcept {
  std::size_t off = sizeof(EthernetHeader);
  if (frame.size() < off) return 0;
  std::uint16_t type = load_header<EthernetHeader>(frame, 0).ether_type.get();
  for (int tags = 0; (type == kEtherTypeVlan || type == kEtherTypeQinQ) && tags < 2; ++tags) {
    if (frame.size() < off + sizeof(VlanTag)) return 0;
    type = load_header<VlanTag>(frame, off).ether_type.get();
    off += sizeof(VlanTag);
  }
  if (type == kEtherTypeIpv4) {
    if (frame.size() < off + sizeof(Ipv4Header)) return 0;
    const auto ip = load_header<Ipv4Header>(frame, off);
    if (ip.protocol != kIpProtoUdp || ip.header_bytes() < sizeof(Ipv4Header)) return 0;
    off += ip.header_bytes();
  } else if (type == kEtherTypeIpv6) {
    if (frame.size() < off + sizeof(Ipv6Header)) return 0;
    if (load_header<Ipv6Header>(frame, off).next_header != kIpProtoUdp) return 0;
    off += sizeof(Ipv6Header);
  } else {
    return 0;
  }
  if (frame.size() < off + sizeof(UdpHeader) + sizeof(Bth) + sizeof(Reth)) return 0;
  if (load_header<UdpHeader>(frame, off).dst_port.get() != kRoceV2Port) return 0;
  return off + sizeof(UdpHeader) + sizeof(Bth);
}

// The two RETH fields alone: the DMA length is not needed. Over IPv4 without VLAN the R_Key
// straddles the first and second cache lines of the frame, which is why the worker asks for both
// three frames ahead (worker.cpp).
const std::byte* write_destination(std::span<const std::byte> frame, const rdma::MrTable& mrs) noexcept {
  const std::size_t reth = WriteDestinations::write_reth_offset(frame);
  if (reth == 0 || !WriteDestinations::starts_write(static_cast<std::uint8_t>(frame[reth - sizeof(Bth)]))) return nullptr;
  const rdma::MemoryRegion* mr = mrs.find(load_header<Be32>(frame, reth + offsetof(Reth, rkey)).get());
  if (mr == nullptr || mr->addr == nullptr) return nullptr;
  const std::uint64_t at = load_header<Be64>(frame, reth + offsetof(Reth, va)).get() - mr->iova;  // wraps below iova
  if (at >= mr->length) return nullptr;
  return mr->addr + at;
}

const std::byte* WriteDestinations::look_up(std::uint32_t rkey, std::uint64_t va, const rdma::MrTable& mrs) noexcept {
  const rdma::MemoryRegion* mr = mrs.find(rkey);
  if (mr == nullptr || mr->addr == nullptr) return nullptr;
  last_.remember(mrs, rkey, *mr);
  const std::uint64_t at = va - mr->iova;  // wraps below iova
  return at < mr->length ? mr->addr + at : nullptr;
}

}  // namespace roce::dp
