// Two net_ring ports wired back to back inside one process: what one transmits the other
// receives. For tests and benchmarks with no NIC.
#pragma once

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

}  // namespace roce::dp
