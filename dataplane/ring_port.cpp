#include "dataplane/ring_port.hpp"

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

namespace roce::dp {

Result<RingPair> make_ring_pair(const std::string& name_a, const std::string& name_b, unsigned ring_size) {
  rte_ring* ab = rte_ring_create((name_a + "_to_" + name_b).c_str(), ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* ba = rte_ring_create((name_b + "_to_" + name_a).c_str(), ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!ab || !ba) return make_error(rte_errno, std::string("cannot create rings for a ring port pair: ") + rte_strerror(rte_errno));
  const int a = rte_eth_from_rings(name_a.c_str(), &ba, 1, &ab, 1, SOCKET_ID_ANY);
  const int b = rte_eth_from_rings(name_b.c_str(), &ab, 1, &ba, 1, SOCKET_ID_ANY);
  if (a < 0 || b < 0) return make_error(rte_errno, std::string("cannot create ring ports: ") + rte_strerror(rte_errno));
  return RingPair{static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b)};
}

}  // namespace roce::dp
