#include "dataplane/port.hpp"

#include <rte_errno.h>

#include <cstring>

namespace roce::dp {

std::string describe_ports() {
  std::string s;
  std::uint16_t id;
  RTE_ETH_FOREACH_DEV(id) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(id, name);
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(id, &info);
    s += (s.empty() ? "" : ", ") + std::to_string(id) + ": " + name + " (" + (info.driver_name ? info.driver_name : "?") + ")";
  }
  return s.empty() ? "none (add one with --vdev=net_ring0 or use a NIC bound to DPDK)" : s;
}

Result<PortInfo> open_port(const PortOptions& o, rte_mempool* pool) {
  std::uint16_t id = 0;
  if (!o.name.empty() && o.name.find_first_not_of("0123456789") == std::string::npos) {
    id = static_cast<std::uint16_t>(std::stoul(o.name));
    if (!rte_eth_dev_is_valid_port(id)) return make_error(ENODEV, "no DPDK port " + o.name + "; ports: " + describe_ports());
  } else if (rte_eth_dev_get_port_by_name(o.name.c_str(), &id) != 0) {
    return make_error(ENODEV, "no DPDK port named '" + o.name + "'; ports: " + describe_ports());
  }
  PortInfo p;
  p.id = id;
  p.name = o.name;
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(id, &info); rc != 0)
    return make_error(-rc, "cannot query port " + o.name + ": " + rte_strerror(-rc));
  p.driver = info.driver_name ? info.driver_name : "";
  if (o.queues > info.max_rx_queues || o.queues > info.max_tx_queues)
    return make_error(EINVAL, "port " + o.name + " (" + p.driver + ") has at most " + std::to_string(info.max_rx_queues) +
                                  " RX and " + std::to_string(info.max_tx_queues) + " TX queues; asked for " +
                                  std::to_string(o.queues));
  rte_eth_conf conf{};
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    p.tx_ipv4_checksum = true;
  }
  if (o.queues > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP)) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_NONFRAG_IPV4_UDP & info.flow_type_rss_offloads;
    p.rss_udp = true;
  }
  if (o.tx_fast_free && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE))
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
  if (int rc = rte_eth_dev_configure(id, o.queues, o.queues, &conf); rc != 0)
    return make_error(-rc, "cannot configure port " + o.name + ": " + rte_strerror(-rc));
  std::uint16_t rxd = o.rx_desc, txd = o.tx_desc;
  rte_eth_dev_adjust_nb_rx_tx_desc(id, &rxd, &txd);
  const int socket = rte_eth_dev_socket_id(id);
  for (std::uint16_t q = 0; q < o.queues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(id, q, rxd, socket < 0 ? 0 : static_cast<unsigned>(socket), nullptr, pool); rc != 0)
      return make_error(-rc, "cannot set up RX queue " + std::to_string(q) + " of " + o.name + ": " + rte_strerror(-rc));
    rte_eth_txconf txc = info.default_txconf;
    txc.offloads = conf.txmode.offloads;
    if (int rc = rte_eth_tx_queue_setup(id, q, txd, socket < 0 ? 0 : static_cast<unsigned>(socket), &txc); rc != 0)
      return make_error(-rc, "cannot set up TX queue " + std::to_string(q) + " of " + o.name + ": " + rte_strerror(-rc));
  }
  if (o.mtu) {
    if (int rc = rte_eth_dev_set_mtu(id, o.mtu); rc != 0 && rc != -ENOTSUP)
      return make_error(-rc, "cannot set MTU " + std::to_string(o.mtu) + " on " + o.name + ": " + rte_strerror(-rc));
  }
  if (int rc = rte_eth_dev_start(id); rc != 0)
    return make_error(-rc, "cannot start port " + o.name + ": " + rte_strerror(-rc));
  if (o.promiscuous) rte_eth_promiscuous_enable(id);
  rte_ether_addr mac{};
  rte_eth_macaddr_get(id, &mac);
  std::memcpy(p.mac.data(), mac.addr_bytes, 6);
  rte_eth_dev_get_mtu(id, &p.mtu);
  p.queues = o.queues;
  return p;
}

Status join_multicast(std::uint16_t id, const proto::MacAddr& group) {
  rte_ether_addr mc{};
  std::memcpy(mc.addr_bytes, group.data(), 6);
  int rc = rte_eth_dev_set_mc_addr_list(id, &mc, 1);
  if (rc == -ENOTSUP) rc = rte_eth_allmulticast_enable(id);
  if (rc == 0 || rc == -ENOTSUP) return {};
  return make_error(-rc, "cannot receive multicast " + proto::mac_to_string(group) + " on port " + std::to_string(id) +
                             ": " + rte_strerror(-rc));
}

void close_port(std::uint16_t id) {
  rte_eth_dev_stop(id);
  rte_eth_dev_close(id);
}

}  // namespace roce::dp
