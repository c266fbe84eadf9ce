#include "apps/appliance/control_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/util/json_writer.hpp"

namespace roce::app {

namespace {
constexpr std::size_t kMaxLine = 64 * 1024;
}

std::string control_error(const std::string& message) {
  JsonWriter w;
  w.begin_object().field("ok", false).field("error", message).end_object();
  return w.str();
}

ControlSocket::~ControlSocket() { stop(); }

Status ControlSocket::start(const std::string& path, Handler handler) {
  sockaddr_un sa{};
  if (path.size() >= sizeof sa.sun_path) return make_error(ENAMETOOLONG, "control socket path too long: " + path);
  path_ = path;
  handler_ = std::move(handler);
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return make_error(errno, std::string("socket: ") + std::strerror(errno));
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  // Owner-only from the first instant: the file is never visible with wider permissions.
  const mode_t old = ::umask(0077);
  const int rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::umask(old);
  if (rc != 0 || ::listen(listen_fd_, 4) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    listen_fd_ = -1;
    return make_error(err, "cannot listen on control socket " + path + ": " + std::strerror(err));
  }
  ::chmod(path.c_str(), 0600);
  thread_ = std::thread([this] { serve(); });
  return {};
}

void ControlSocket::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(path_.c_str());
  }
}

void ControlSocket::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
      ++refused_;
      const std::string msg = control_error("refused: the control socket serves only its owner") + "\n";
      ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
      ::close(fd);
      continue;
    }
    serve_client(fd);
    ::close(fd);
  }
}

void ControlSocket::serve_client(int fd) {
  std::string buf;
  char chunk[4096];
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return;
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      const std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.empty()) continue;
      auto cmd = parse_json(line);
      std::string out = cmd ? handler_(*cmd) : control_error(cmd.error().message);
      out += '\n';
      if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) return;
    }
    if (buf.size() > kMaxLine) {
      const std::string out = control_error("command line longer than 64 KiB") + "\n";
      ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      return;
    }
  }
}

}  // namespace roce::app
