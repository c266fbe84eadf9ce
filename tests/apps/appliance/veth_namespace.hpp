// A network namespace with a veth pair for appliance tests that write crafted frames on a real
// port: the appliance drives port() (net_af_packet), the test sends and receives raw frames on
// the peer end. The namespace is the test's own and goes with it. Root only; why_not() says
// why it could not be made.
#pragma once

#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "tests/support/packet_socket.hpp"

namespace roce::test {

inline int run_quietly(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

struct VethOptions {
  std::string port_mac;  // the appliance's end (empty: the kernel's choice)
  std::string peer_mac;
  std::string peer_ip;   // e.g. "10.0.0.9/24": the kernel then answers ARP for the peer
};

class VethNamespace {
 public:
  explicit VethNamespace(const VethOptions& o = {}) {
    const std::string id = std::to_string(::getpid() % 100000);
    ns_ = "dct" + id;
    port_ = "dct" + id + "a";
    peer_ = "dct" + id + "b";
    if (run_quietly("ip netns add " + ns_) != 0) {
      why_ = "cannot create a network namespace (ip netns add failed)";
      return;
    }
    made_ = true;
    const std::string in = "ip -n " + ns_ + " ";
    if (run_quietly(in + "link add " + port_ + " mtu 9000 type veth peer name " + peer_ + " mtu 9000") != 0) {
      why_ = "cannot create a veth pair";
      return;
    }
    // No IPv6 on either end: nothing but the test's frames (and ARP) crosses the link.
    for (const std::string& dev : {port_, peer_})
      run_quietly("ip netns exec " + ns_ + " sysctl -w net.ipv6.conf." + dev + ".disable_ipv6=1");
    if ((!o.port_mac.empty() && run_quietly(in + "link set " + port_ + " address " + o.port_mac) != 0) ||
        (!o.peer_mac.empty() && run_quietly(in + "link set " + peer_ + " address " + o.peer_mac) != 0)) {
      why_ = "cannot set a MAC address on the veth pair";
      return;
    }
    if (!o.peer_ip.empty() && run_quietly(in + "addr add " + o.peer_ip + " dev " + peer_) != 0) {
      why_ = "cannot give the peer end the address " + o.peer_ip;
      return;
    }
    if (run_quietly(in + "link set " + port_ + " up") != 0 || run_quietly(in + "link set " + peer_ + " up") != 0) {
      why_ = "cannot bring the veth pair up";
      return;
    }
    // A raw socket on the peer end, opened inside the namespace; it sees every frame there.
    const int self = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = ::open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (self >= 0 && target >= 0 && ::setns(target, CLONE_NEWNET) == 0) {
      fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
      ifindex_ = static_cast<int>(::if_nametoindex(peer_.c_str()));
      ::setns(self, CLONE_NEWNET);
    }
    if (self >= 0) ::close(self);
    if (target >= 0) ::close(target);
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = ifindex_;
    if (fd_ < 0 || ifindex_ == 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0)
      why_ = "cannot open a packet socket in the namespace";
    // Room for a burst of tens of thousands of frames between two reads.
    const int bytes = 256 << 20;
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
  }
  ~VethNamespace() {
    if (fd_ >= 0) ::close(fd_);
    if (made_) run_quietly("ip netns del " + ns_);
  }
  VethNamespace(const VethNamespace&) = delete;
  VethNamespace& operator=(const VethNamespace&) = delete;

  bool ready() const { return why_.empty(); }
  const std::string& why_not() const { return why_; }
  const std::string& ns() const { return ns_; }
  const std::string& port() const { return port_; }

  bool send(std::span<const std::byte> frame) const {
    return send_on_packet_socket(fd_, ifindex_, frame);
  }

  // The next frame that arrived on the peer end (not one it sent), waiting up to `timeout_ms`;
  // empty when none came.
  std::vector<std::byte> receive(int timeout_ms) const {
    std::vector<std::byte> buf(16384);
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return {};
      sockaddr_ll from{};
      socklen_t len = sizeof from;
      const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) return {};
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      buf.resize(static_cast<std::size_t>(n));
      return buf;
    }
  }

  // Frames the kernel dropped because the socket's buffer was full, since the last call.
  unsigned receive_drops() const {
    tpacket_stats st{};
    socklen_t len = sizeof st;
    return ::getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 ? st.tp_drops : 0;
  }

 private:
  std::string ns_, port_, peer_, why_;
  bool made_ = false;
  int fd_ = -1;
  int ifindex_ = 0;
};

}  // namespace roce::test
