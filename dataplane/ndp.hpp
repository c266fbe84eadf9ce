// IPv6 neighbour discovery for the engine's IPv6 address, the counterpart of arp.hpp: answers
// Neighbor Solicitations for it (sent to its solicited-node group or to it directly), learns
// peers from solicitations and advertisements, and builds solicitations for peers it must
// reach. Plain byte spans, no DPDK; the cache is safe to read from the control thread while
// the RX lcore writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "dataplane/neighbor_table.hpp"
#include "protocol/icmpv6.hpp"

namespace roce::dp {

using proto::kNdFrameBytes;

// IPv6 peers' MACs (the shared NeighborTable; unspecified and multicast addresses are never learnt).
class NeighborCache {
 public:
  static constexpr std::size_t kEntries = NeighborTable::kEntries;
  void learn(const proto::Ipv6Addr& ip, const proto::MacAddr& mac) noexcept;
  std::optional<proto::MacAddr> lookup(const proto::Ipv6Addr& ip) const noexcept;

 private:
  NeighborTable table_;
};

enum class NdpAction : std::uint8_t {
  NotNdp,   // not an ICMPv6 Neighbor Solicitation/Advertisement
  Invalid,  // fails RFC 4861 7.1 validation (checksum, hop limit, lengths, options): a counted drop
  Ignored,  // valid, about another address, nothing to learn
  Learned,  // taught the cache a peer's MAC
  Reply,    // a solicitation for our address: `reply` holds the advertisement
};

// Handles one received frame (untagged Ethernet). A solicitation for `my_ip` gets a solicited
// advertisement in `reply` (kNdFrameBytes) and Reply; the sender's or target's link-layer
// address option is learnt.
NdpAction handle_ndp(std::span<const std::byte> frame, const proto::MacAddr& my_mac, const proto::Ipv6Addr& my_ip,
                     NeighborCache& cache, std::span<std::byte> reply) noexcept;

// Writes a multicast solicitation for `target` (to its solicited-node group), kNdFrameBytes.
void build_neighbor_solicitation(const proto::MacAddr& my_mac, const proto::Ipv6Addr& my_ip,
                                 const proto::Ipv6Addr& target, std::span<std::byte> out) noexcept;

}  // namespace roce::dp
