// Pipeline mode's IO lcore: owns the port's single queue, answers ARP, steers each RoCEv2
// frame to the worker that owns its destination QP (QPNs are sharded by worker), and sends
// what the workers queue for transmission. For ports without enough queues for RSS.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <vector>

#include "dataplane/arp.hpp"
#include "lib/rdma/address.hpp"
#include "lib/time.hpp"

namespace roce::dp {

struct IoStats {
  std::uint64_t rx_packets = 0;
  std::uint64_t tx_packets = 0;
  std::uint64_t steered = 0;
  std::uint64_t not_roce = 0;        // neither ARP nor UDP 4791: dropped here
  std::uint64_t unknown_worker = 0;  // QPN outside every worker's shard
  std::uint64_t worker_ring_full = 0;
  std::uint64_t tx_dropped = 0;
  std::uint64_t arp_replies = 0;
};

struct IoConfig {
  std::uint16_t port = 0;
  rte_mempool* pool = nullptr;
  LocalAddress local{};
  std::uint32_t qpn_base = 0x11;
  std::vector<rte_ring*> worker_rx;  // one per worker, in shard order
  std::vector<rte_ring*> worker_tx;
};

class IoLoop {
 public:
  IoLoop(IoConfig cfg, ArpCache& arp) : cfg_(std::move(cfg)), arp_(arp) {}
  unsigned poll(Nanos now);
  const IoStats& stats() const { return stats_; }
  void drain_tx();

 private:
  IoConfig cfg_;
  ArpCache& arp_;
  IoStats stats_;
};

}  // namespace roce::dp
