#include "dataplane/steering.hpp"

#include <cstddef>
#include <cstring>

#include "protocol/headers.hpp"
#include "protocol/icmpv6.hpp"
#include "protocol/parser.hpp"

namespace roce::dp {

using namespace roce::proto;

std::string to_string(FrameClass c) {
  switch (c) {
    case FrameClass::Arp: return "arp";
    case FrameClass::Ndp: return "ndp";
    case FrameClass::Roce: return "roce";
    case FrameClass::Other: return "other";
    case FrameClass::Count: break;
  }
  return "FrameClass(" + std::to_string(static_cast<unsigned>(c)) + ")";
}

namespace {

// The ICMPv6 type byte follows a 40-byte IPv6 header whose next header is ICMPv6.
bool is_neighbor_discovery(std::span<const std::byte> l3) noexcept {
  if (l3.size() < sizeof(Ipv6Header) + sizeof(Icmpv6Header)) return false;
  if (std::to_integer<std::uint8_t>(l3[offsetof(Ipv6Header, next_header)]) != kIpProtoIcmpv6) return false;
  const auto type = std::to_integer<std::uint8_t>(l3[sizeof(Ipv6Header)]);
  return type == kIcmpv6NeighborSolicitation || type == kIcmpv6NeighborAdvertisement;
}

}  // namespace

FrameClass control_class(std::span<const std::byte> frame) noexcept {
  if (frame.size() < sizeof(EthernetHeader)) return FrameClass::Other;
  EthernetHeader eth;
  std::memcpy(&eth, frame.data(), sizeof eth);
  if (eth.ether_type.get() == kEtherTypeArp) return FrameClass::Arp;
  if (eth.ether_type.get() == kEtherTypeIpv6 && is_neighbor_discovery(frame.subspan(sizeof eth))) return FrameClass::Ndp;
  return FrameClass::Other;
}

FrameClass classify(std::span<const std::byte> frame, std::uint32_t& dest_qp) noexcept {
  if (const FrameClass c = control_class(frame); c != FrameClass::Other) return c;
  const auto qpn = peek_dest_qp(frame);
  if (!qpn) return FrameClass::Other;
  dest_qp = *qpn;
  return FrameClass::Roce;
}

SteerVerdict Steering::steer(std::span<const std::byte> frame) const noexcept {
  SteerVerdict v;
  v.cls = classify(frame, v.dest_qp);
  switch (kOwnerPolicy[static_cast<std::size_t>(v.cls)]) {
    case OwnerPolicy::ControlWorker: v.owner = kControlWorker; break;
    case OwnerPolicy::QpnShard: v.owner = shards_.owner(v.dest_qp); break;
    case OwnerPolicy::Receiver: break;
  }
  return v;
}

}  // namespace roce::dp
