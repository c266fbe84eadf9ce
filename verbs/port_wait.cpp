#include "verbs/port_wait.hpp"

#include <dirent.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <cstdlib>

namespace roce::verbs {

PortWait PortWait::for_interface(int ifindex) {
  PortWait w;
  if (ifindex <= 0) return w;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return w;
  const int own = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    struct stat st{};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int domain = 0;
    socklen_t len = sizeof domain;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) continue;
    sockaddr_ll ll{};
    len = sizeof ll;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&ll), &len) != 0 || ll.sll_ifindex != ifindex)
      continue;
    w.fds_.push_back(pollfd{static_cast<int>(fd), POLLIN, 0});
  }
  ::closedir(d);
  return w;
}

bool PortWait::wait(Nanos timeout) {
  timespec ts{static_cast<time_t>(timeout / kSecond), static_cast<long>(timeout % kSecond)};
  const int n = ::ppoll(fds_.data(), fds_.size(), &ts, nullptr);
  if (n <= 0) return false;
  bool frame = false;
  for (const pollfd& p : fds_) {
    frame = frame || (p.revents & POLLIN) != 0;
    // A socket that reports an error would wake every call: timer naps from now on.
    if (p.revents & (POLLERR | POLLNVAL)) {
      fds_.clear();
      return false;
    }
  }
  return frame;
}

}  // namespace roce::verbs
