// Pipeline mode's IO lcore: owns the port's single queue, steers each received frame to the
// worker that owns it (steering.hpp: ARP to the control worker, RoCEv2 by destination QPN),
// and sends what the workers queue for transmission. For ports without enough queues for RSS.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <vector>

#include "dataplane/overrun.hpp"
#include "dataplane/ring_port.hpp"
#include "dataplane/rx_backlog.hpp"
#include "dataplane/stats.hpp"
#include "dataplane/steering.hpp"
#include "lib/time.hpp"

namespace roce::dp {

struct IoConfig {
  std::uint16_t port = 0;
  rdma::QpnShards shards;                  // shards.shards == worker_rx.size()
  std::vector<rte_ring*> worker_rx;  // one per worker, in shard order
  std::vector<rte_ring*> worker_tx;
  Nanos stats_interval_ns = 10 * kMilli;
  PortDropReader port_drops;  // receive overruns marked CE (overrun.hpp); empty: none
  OverrunConfig overrun{};
  BacklogConfig backlog{};  // marks from the port queue's backlog (rx_backlog.hpp)
};

class IoLoop {
 public:
  explicit IoLoop(IoConfig cfg) : cfg_(std::move(cfg)), steering_(cfg_.shards), overrun_(cfg_.overrun, cfg_.port_drops),
        backlog_(cfg_.backlog.mark ? BacklogMarking(cfg_.backlog, rx_queue_count_of(cfg_.port, 0)) : BacklogMarking()) {
    port_rx_ring_ = ring_port_rx_ring(cfg_.port, 0);
  }
  unsigned poll(Nanos now);
  const IoStats& stats() const { return stats_; }
  void drain_tx();
  // As Worker::publish_stats: on the IO lcore's thread only.
  void publish_stats(Nanos now);
  IoSnapshot published_stats() const { return published_.read(); }

 private:
  IoConfig cfg_;
  Steering steering_;
  IoStats stats_;
  // A ring port's RX ring (ring_port.hpp): while it is empty the loop does not call the PMD.
  rte_ring* port_rx_ring_ = nullptr;
  OverrunMarking overrun_;
  BacklogMarking backlog_;
  Nanos last_publish_ = 0;
  std::uint64_t publications_ = 0;
  Published<IoSnapshot> published_;
};

}  // namespace roce::dp
