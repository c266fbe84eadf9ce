// Two net_ring ports wired back to back inside one process: what one transmits the other
// receives. For tests and benchmarks with no NIC.
#pragma once

#include <rte_ring.h>

#include <cstdint>
#include <string>

#include "lib/status.hpp"

namespace roce::dp {

struct RingPair {
  std::uint16_t a = 0;
  std::uint16_t b = 0;
};

// `queues` RX/TX queue pairs per port: what port a sends on its queue i arrives on port b's
// queue i (and back), like a NIC whose RSS put each flow on the queue of the same number.
Result<RingPair> make_ring_pair(const std::string& name_a, const std::string& name_b, unsigned ring_size = 4096,
                                unsigned queues = 1);

// The rte_ring that RX queue `queue` of a port made by make_ring_pair reads, nullptr for any
// other port or queue. An empty ring means an empty rx_burst, so a poll loop may skip the call
// (the ethdev call and the PMD's dequeue, about 60 instructions) on an empty ring: a port with
// an RX callback that adds frames to an empty burst must not be polled that way (none in the
// tree does; callbacks here filter or rewrite what came). Control path (takes a lock).
rte_ring* ring_port_rx_ring(std::uint16_t port, std::uint16_t queue);

}  // namespace roce::dp
