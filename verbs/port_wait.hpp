// Sleeping until the port has a frame, for the library-mode dataplane thread. net_af_packet
// receives through a packet socket with a mapped ring; poll() on that socket answers POLLIN
// once the kernel has filled a frame the PMD has not yet taken back. The PMD does not hand its
// sockets out, so they are found among the process's descriptors: packet sockets bound to the
// port's kernel interface. Ports without such a socket (net_ring, net_tap) cannot be waited on;
// the dataplane thread naps on a timer there.
#pragma once

#include <poll.h>

#include <vector>

#include "lib/time.hpp"

namespace roce::verbs {

class PortWait {
 public:
  PortWait() = default;
  // The packet sockets of this process bound to the interface `ifindex` (0: none).
  static PortWait for_interface(int ifindex);

  bool can_wait() const { return !fds_.empty(); }
  // Sleeps until a frame waits on the port or `timeout` passed; true when a frame waits. A socket
  // in error ends the waiting (can_wait() is false afterwards).
  bool wait(Nanos timeout);

 private:
  std::vector<pollfd> fds_;
};

}  // namespace roce::verbs
