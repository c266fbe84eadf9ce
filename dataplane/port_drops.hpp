// What a port dropped on receive before a poller read it: rte_eth_stats' imissed (the RX ring was
// full) and rx_nombuf (no mbuf to receive into), plus, on net_af_packet, the kernel's ring drops.
// DPDK's af_packet PMD (22.11 here, and the upstream source read for this) fills neither
// imissed nor rx_nombuf for them: a frame that finds its TPACKET ring full is counted only by the socket
// (PACKET_STATISTICS tp_drops), which the PMD never reads. So for an af_packet port the PMD's
// sockets are found by their bound interface and their tp_drops read here. Control path: read
// by one loop on a timer (overrun.hpp), never per packet.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace roce::dp {

class PortDrops {
 public:
  // Finds the port's af_packet sockets when its driver is net_af_packet (they exist from the
  // vdev's probe until the port stops).
  explicit PortDrops(std::uint16_t port);

  // imissed + rx_nombuf + af_packet ring drops since the port opened; nullopt when the port's
  // statistics cannot be read. One caller at a time: reading PACKET_STATISTICS resets the
  // kernel's counters, so the ring drops are summed here.
  std::optional<std::uint64_t> read();
  // The af_packet sockets found (0 for other drivers).
  std::size_t packet_sockets() const { return sockets_.size(); }

 private:
  std::uint16_t port_;
  std::vector<int> sockets_;  // the PMD's: never closed here
  std::uint64_t ring_drops_ = 0;
};

}  // namespace roce::dp
