// ARP for the engine's IPv4 address: answers requests for it, learns peers from what it
// sees, and builds requests for peers it must reach. Works on plain byte spans (no DPDK),
// and its cache is safe to read from the control thread while the RX lcore writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "dataplane/neighbor_table.hpp"
#include "protocol/headers.hpp"

namespace roce::dp {

struct ArpPacket {
  proto::Be16 htype, ptype;
  std::uint8_t hlen, plen;
  proto::Be16 oper;
  proto::MacAddr sha;
  proto::Ipv4Addr spa;
  proto::MacAddr tha;
  proto::Ipv4Addr tpa;
};
static_assert(sizeof(ArpPacket) == 28);

inline constexpr std::size_t kArpFrameBytes = sizeof(proto::EthernetHeader) + sizeof(ArpPacket);

// IPv4 peers' MACs (the shared NeighborTable; 0.0.0.0 is never learnt).
class ArpCache {
 public:
  static constexpr std::size_t kEntries = NeighborTable::kEntries;
  void learn(const proto::Ipv4Addr& ip, const proto::MacAddr& mac) noexcept;
  std::optional<proto::MacAddr> lookup(const proto::Ipv4Addr& ip) const noexcept;

 private:
  NeighborTable table_;
};

enum class ArpAction : std::uint8_t { NotArp, Ignored, Learned, Reply };

// Handles one received frame. When the frame is a request for `my_ip`, writes the reply into
// `reply` (kArpFrameBytes) and returns Reply. Learns the sender of any request or reply.
ArpAction handle_arp(std::span<const std::byte> frame, const proto::MacAddr& my_mac, const proto::Ipv4Addr& my_ip,
                     ArpCache& cache, std::span<std::byte> reply) noexcept;

// Writes a broadcast who-has request for `target`.
void build_arp_request(const proto::MacAddr& my_mac, const proto::Ipv4Addr& my_ip, const proto::Ipv4Addr& target,
                       std::span<std::byte> out) noexcept;

}  // namespace roce::dp
