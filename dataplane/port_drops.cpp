#include "dataplane/port_drops.hpp"

#include <dirent.h>
#include <linux/if_packet.h>
#include <rte_ethdev.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace roce::dp {

namespace {

// The process's AF_PACKET sockets bound to interface `ifindex`: the PMD opens one per queue
// pair and binds it there (a socket bound to no interface has index 0 and is not taken).
std::vector<int> packet_sockets_on(int ifindex) {
  std::vector<int> found;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return found;
  const int own = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    int domain = 0;
    socklen_t len = sizeof domain;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) continue;
    sockaddr_ll at{};
    len = sizeof at;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&at), &len) != 0 || at.sll_ifindex != ifindex)
      continue;
    found.push_back(static_cast<int>(fd));
  }
  ::closedir(d);
  return found;
}

}  // namespace

PortDrops::PortDrops(std::uint16_t port) : port_(port) {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == nullptr) return;
  if (std::string_view(info.driver_name) != "net_af_packet" || info.if_index == 0) return;
  sockets_ = packet_sockets_on(static_cast<int>(info.if_index));
}

std::optional<std::uint64_t> PortDrops::read() {
  rte_eth_stats s{};
  if (rte_eth_stats_get(port_, &s) != 0) return std::nullopt;
  for (int fd : sockets_) {
    tpacket_stats t{};
    socklen_t len = sizeof t;
    if (::getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &t, &len) == 0) ring_drops_ += t.tp_drops;
  }
  return s.imissed + s.rx_nombuf + ring_drops_;
}

}  // namespace roce::dp
