// One frame out of an AF_PACKET socket on one interface: how tests put raw frames on a veth
// end that a DPDK af_packet port (or the kernel) reads on the other.
#pragma once

#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cstddef>
#include <span>

namespace roce::test {

inline bool send_on_packet_socket(int fd, int ifindex, std::span<const std::byte> frame) {
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = ifindex;
  to.sll_halen = 6;
  return ::sendto(fd, frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
         static_cast<ssize_t>(frame.size());
}

}  // namespace roce::test
