// One ethdev port: found by name or id, configured with the queues the pipeline needs, with
// checksum and RSS offloads when the PMD reports them, and started.
#pragma once

#include <rte_ethdev.h>
#include <rte_mempool.h>

#include <string>

#include "lib/status.hpp"
#include "protocol/headers.hpp"

namespace roce::dp {

struct PortOptions {
  std::string name;          // ethdev name (net_ring0, net_tap0, 0000:3b:00.0) or a port number
  std::uint16_t queues = 1;  // RX and TX queue pairs
  std::uint16_t rx_desc = 1024;
  std::uint16_t tx_desc = 1024;
  std::uint16_t mtu = 0;     // 0 = leave the PMD's default
  bool promiscuous = false;
  // MBUF_FAST_FREE when the PMD offers it: only for ports whose transmitted mbufs all come from
  // one pool with refcnt 1 (a forwarder sending other pools' mbufs must leave it off).
  bool tx_fast_free = true;
};

struct PortInfo {
  std::uint16_t id = 0;
  std::string name;
  std::string driver;
  proto::MacAddr mac{};
  std::uint16_t queues = 1;
  bool tx_ipv4_checksum = false;
  bool rss_udp = false;
  std::uint16_t mtu = 1500;
};

Result<PortInfo> open_port(const PortOptions& o, rte_mempool* pool);
void close_port(std::uint16_t id);
// Makes the port deliver frames sent to an Ethernet multicast address (an IPv6 endpoint's
// solicited-node group): its multicast filter, else all-multicast. A PMD with neither
// filters nothing (net_ring, net_tap, af_packet deliver what the link carries).
Status join_multicast(std::uint16_t id, const proto::MacAddr& group);
std::string describe_ports();  // "0: net_ring0 (net_ring), 1: ..." for error messages

}  // namespace roce::dp
