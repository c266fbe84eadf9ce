#include "client/tcp.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace roce::client {

namespace {

Status wait_fd(int fd, short events, int timeout_ms, const char* what) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, timeout_ms);
    if (rc > 0) return {};
    if (rc == 0) return make_error(ETIMEDOUT, std::string("timed out waiting to ") + what);
    if (errno != EINTR) return make_error(errno, std::string(what) + ": " + std::strerror(errno));
  }
}

}  // namespace

TcpStream::~TcpStream() {
  if (fd_ >= 0) ::close(fd_);
}

TcpStream& TcpStream::operator=(TcpStream&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Result<TcpStream> TcpStream::connect(const std::string& host, std::uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    return make_error(EHOSTUNREACH, "cannot resolve " + host + ": " + gai_strerror(rc));
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ::freeaddrinfo(res);
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return TcpStream(fd);
    }
    last = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  (void)timeout_ms;
  return make_error(ECONNREFUSED, "cannot connect to " + host + ":" + service + ": " + last);
}

Status TcpStream::read_exact(std::span<std::byte> out, int timeout_ms) {
  // One deadline for the whole record: a peer dripping a byte now and then cannot stretch it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  std::size_t got = 0;
  while (got < out.size()) {
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      wait_ms = static_cast<int>(std::max<std::int64_t>(left, 0));
    }
    if (Status s = wait_fd(fd_, POLLIN, wait_ms, "read from the peer"); !s) {
      if (s.error().code == ETIMEDOUT)
        return make_error(ETIMEDOUT, "timed out after " + std::to_string(timeout_ms) + " ms waiting for the peer (" +
                                         std::to_string(got) + " of " + std::to_string(out.size()) + " bytes came)");
      return s;
    }
    const ssize_t n = ::recv(fd_, out.data() + got, out.size() - got, 0);
    if (n == 0)
      return make_error(ECONNRESET, "the peer closed the connection after " + std::to_string(got) + " of " +
                                        std::to_string(out.size()) + " bytes");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return make_error(errno, std::string("read failed: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  return {};
}

std::size_t TcpStream::read_some(std::span<std::byte> out) {
  const ssize_t n = ::recv(fd_, out.data(), out.size(), MSG_DONTWAIT);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

Status TcpStream::write_all(std::span<const std::byte> data) {
  // One send() per record: ibv_*_pingpong reads each record with a single read().
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(errno, std::string("write failed: ") + std::strerror(errno));
    }
    sent += static_cast<std::size_t>(n);
  }
  return {};
}

bool TcpStream::wait_readable(int timeout_ms) const { return wait_fd(fd_, POLLIN, timeout_ms, "read").ok(); }

namespace {
std::string endpoint_text(int fd, bool with_port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  std::uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
    port = ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  } else {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
    port = ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  }
  if (!with_port) return buf;
  return ss.ss_family == AF_INET6 ? "[" + std::string(buf) + "]:" + std::to_string(port) : std::string(buf) + ":" + std::to_string(port);
}
}  // namespace

std::string TcpStream::peer_address() const { return endpoint_text(fd_, false); }
std::string TcpStream::peer_endpoint() const { return endpoint_text(fd_, true); }

TcpListener::~TcpListener() {
  if (fd_ >= 0) ::close(fd_);
}

Result<TcpListener> TcpListener::listen(const std::string& bind_address, std::uint16_t port, int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(errno, std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (bind_address.empty() || bind_address == "0.0.0.0") {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (::inet_pton(AF_INET, bind_address.c_str(), &sa.sin_addr) != 1) {
    ::close(fd);
    return make_error(EINVAL, "not an IPv4 address to listen on: " + bind_address);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, backlog) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error(err, "cannot listen on TCP port " + std::to_string(port) + ": " + std::strerror(err));
  }
  TcpListener l;
  l.fd_ = fd;
  return l;
}

Result<TcpStream> TcpListener::accept(int timeout_ms) {
  if (Status s = wait_fd(fd_, POLLIN, timeout_ms, "accept a connection"); !s) return s.error();
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return make_error(errno, std::string("accept: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return TcpStream(fd);
}

std::uint16_t TcpListener::port() const {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

}  // namespace roce::client
