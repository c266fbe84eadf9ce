#include "dataplane/ring_port.hpp"

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <rte_ethdev.h>

#include <mutex>
#include <vector>

namespace roce::dp {

namespace {

// The RX rings of the ports make_ring_pair made, by ethdev name. Rings are never freed and a
// ring's name cannot be taken twice, so a name found here still means those rings, even after
// its port was closed and the port id went to another device.
struct RingPortRx {
  std::string name;
  std::vector<rte_ring*> rx;
};
std::mutex ring_ports_mutex;
std::vector<RingPortRx> ring_ports;

// By the name the port got (the PMD derives it from the one asked for).
void remember(std::uint16_t port, std::vector<rte_ring*> rx) {
  char name[RTE_ETH_NAME_MAX_LEN];
  if (rte_eth_dev_get_name_by_port(port, name) != 0) return;
  std::lock_guard lock(ring_ports_mutex);
  ring_ports.push_back(RingPortRx{name, std::move(rx)});
}

}  // namespace

Result<RingPair> make_ring_pair(const std::string& name_a, const std::string& name_b, unsigned ring_size,
                                unsigned queues) {
  if (queues == 0 || queues > RTE_PMD_RING_MAX_RX_RINGS)
    return make_error(EINVAL, "a ring port has 1.." + std::to_string(RTE_PMD_RING_MAX_RX_RINGS) + " queues");
  std::vector<rte_ring*> ab(queues), ba(queues);
  for (unsigned q = 0; q < queues; ++q) {
    const std::string sfx = queues == 1 ? "" : "_q" + std::to_string(q);
    ab[q] = rte_ring_create((name_a + "_to_" + name_b + sfx).c_str(), ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ba[q] = rte_ring_create((name_b + "_to_" + name_a + sfx).c_str(), ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!ab[q] || !ba[q])
      return make_error(rte_errno, std::string("cannot create rings for a ring port pair: ") + rte_strerror(rte_errno));
  }
  const int a = rte_eth_from_rings(name_a.c_str(), ba.data(), queues, ab.data(), queues, SOCKET_ID_ANY);
  const int b = rte_eth_from_rings(name_b.c_str(), ab.data(), queues, ba.data(), queues, SOCKET_ID_ANY);
  if (a < 0 || b < 0) return make_error(rte_errno, std::string("cannot create ring ports: ") + rte_strerror(rte_errno));
  remember(static_cast<std::uint16_t>(a), ba);
  remember(static_cast<std::uint16_t>(b), ab);
  return RingPair{static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b)};
}

rte_ring* ring_port_rx_ring(std::uint16_t port, std::uint16_t queue) {
  char name[RTE_ETH_NAME_MAX_LEN];
  if (!rte_eth_dev_is_valid_port(port) || rte_eth_dev_get_name_by_port(port, name) != 0) return nullptr;
  std::lock_guard lock(ring_ports_mutex);
  for (const RingPortRx& r : ring_ports)
    if (r.name == name) return queue < r.rx.size() ? r.rx[queue] : nullptr;
  return nullptr;
}

}  // namespace roce::dp
