#include "dataplane/steering.hpp"

#include <cstring>

#include "protocol/headers.hpp"
#include "protocol/parser.hpp"

namespace roce::dp {

using namespace roce::proto;

std::string to_string(FrameClass c) {
  switch (c) {
    case FrameClass::Arp: return "arp";
    case FrameClass::Roce: return "roce";
    case FrameClass::Other: return "other";
    case FrameClass::Count: break;
  }
  return "FrameClass(" + std::to_string(static_cast<unsigned>(c)) + ")";
}

FrameClass classify(std::span<const std::byte> frame, std::uint32_t& dest_qp) noexcept {
  if (frame.size() < sizeof(EthernetHeader)) return FrameClass::Other;
  EthernetHeader eth;
  std::memcpy(&eth, frame.data(), sizeof eth);
  if (eth.ether_type.get() == kEtherTypeArp) return FrameClass::Arp;
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
