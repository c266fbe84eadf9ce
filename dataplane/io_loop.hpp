// Pipeline mode's IO lcore: owns the port's single queue, answers ARP, steers each RoCEv2
// frame to the worker that owns its destination QP (QPNs are sharded by worker), and sends
// what the workers queue for transmission. For ports without enough queues for RSS.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <vector>

#include "dataplane/arp.hpp"
#include "dataplane/stats.hpp"
#include "lib/rdma/address.hpp"
#include "lib/time.hpp"

namespace roce::dp {

struct IoConfig {
  std::uint16_t port = 0;
  rte_mempool* pool = nullptr;
  LocalAddress local{};
  std::uint32_t qpn_base = 0x11;
  std::vector<rte_ring*> worker_rx;  // one per worker, in shard order
  std::vector<rte_ring*> worker_tx;
  Nanos stats_interval_ns = 10 * kMilli;
};

class IoLoop {
 public:
  IoLoop(IoConfig cfg, ArpCache& arp) : cfg_(std::move(cfg)), arp_(arp) {}
  unsigned poll(Nanos now);
  const IoStats& stats() const { return stats_; }
  void drain_tx();
  // As Worker::publish_stats: on the IO lcore's thread only.
  void publish_stats(Nanos now);
  IoSnapshot published_stats() const { return published_.read(); }

 private:
  IoConfig cfg_;
  ArpCache& arp_;
  IoStats stats_;
  Nanos last_publish_ = 0;
  std::uint64_t publications_ = 0;
  Published<IoSnapshot> published_;
};

}  // namespace roce::dp
