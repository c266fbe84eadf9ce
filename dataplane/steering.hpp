// Steering: what a received frame is and which worker owns it, decided in one place for the
// run-to-completion workers (a frame on another worker's queue) and the pipeline's IO lcore.
// Each class of frame has one owner policy (kOwnerPolicy): ARP goes to the control worker
// (worker 0, which also sends the ARP requests), RoCEv2 to the worker whose shard holds the
// destination QPN (lib/rdma/qpn_shards.hpp, the rule the engines hand QPNs out by), anything
// else stays with the worker that received it, whose engine counts it as a parse drop.
// IPv6 neighbour discovery (ICMPv6 types 135/136, untagged as ARP) is owned by the control
// worker as ARP is.
// Plain byte spans, no DPDK: unit-tested on its own (tests/dataplane/steering_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "lib/rdma/qpn_shards.hpp"

namespace roce::dp {

// Most workers a dataplane runs (and so most shards a frame can be steered to).
inline constexpr unsigned kMaxWorkers = 16;
// The worker that answers the link's control protocols (ARP, NDP) and runs the CM agent (QP1).
inline constexpr unsigned kControlWorker = 0;

enum class FrameClass : std::uint8_t {
  Arp,    // EtherType 0x0806
  Ndp,    // ICMPv6 Neighbor Solicitation/Advertisement directly under IPv6
  Roce,   // UDP 4791 over IPv4 or IPv6 (up to two VLAN tags): has a destination QPN
  Other,  // anything else, or too short to tell
  Count,
};
std::string to_string(FrameClass c);

enum class OwnerPolicy : std::uint8_t {
  ControlWorker,  // kControlWorker
  QpnShard,       // QpnShards::owner of the destination QPN
  Receiver,       // whoever received it
};

inline constexpr OwnerPolicy kOwnerPolicy[static_cast<std::size_t>(FrameClass::Count)] = {
    OwnerPolicy::ControlWorker,  // Arp
    OwnerPolicy::ControlWorker,  // Ndp
    OwnerPolicy::QpnShard,       // Roce
    OwnerPolicy::Receiver,       // Other
};

struct SteerVerdict {
  FrameClass cls = FrameClass::Other;
  std::uint32_t dest_qp = 0;      // Roce only
  std::optional<unsigned> owner;  // none: no worker owns it (Other, or a QPN outside every shard)
};

// The class of a frame, reading no more than its headers.
FrameClass classify(std::span<const std::byte> frame, std::uint32_t& dest_qp) noexcept;
// Arp or Ndp (what the worker answers itself), else Other: all a frame's receiver needs once
// steering is done (the engine parses the rest), without looking for the QPN.
FrameClass control_class(std::span<const std::byte> frame) noexcept;

class Steering {
 public:
  explicit Steering(rdma::QpnShards shards = {}) noexcept : shards_(shards) {}
  SteerVerdict steer(std::span<const std::byte> frame) const noexcept;
  const rdma::QpnShards& shards() const noexcept { return shards_; }
  unsigned workers() const noexcept { return shards_.count(); }

 private:
  rdma::QpnShards shards_;
};

}  // namespace roce::dp
