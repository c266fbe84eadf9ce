#include "verbs/service_client.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace roce::verbs {

using service::Op;

Result<std::unique_ptr<ServiceConnection>> ServiceConnection::connect(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) return make_error(EINVAL, "bad service socket path '" + path + "'");
  std::memcpy(a.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(errno, std::string("socket: ") + std::strerror(errno));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error(e, "cannot reach the service at " + path + ": " + std::strerror(e) + " (is roce-verbsd running?)");
  }
  std::unique_ptr<ServiceConnection> c(new ServiceConnection(fd));
  service::HelloReply hello{};
  if (int rc = c->call(Op::Hello, &hello, sizeof hello); rc != 0)
    return make_error(rc, "the service at " + path + " refused the hello: " + std::strerror(rc));
  if (hello.version != service::kProtocolVersion)
    return make_error(EPROTO, "the service at " + path + " speaks protocol " + std::to_string(hello.version) +
                                  ", this library " + std::to_string(service::kProtocolVersion));
  hello.device_name[service::kNameBytes - 1] = '\0';
  c->device_name_ = hello.device_name;
  return c;
}

ServiceConnection::~ServiceConnection() { ::close(fd_); }

int ServiceConnection::call(Op op, std::uint32_t handle, std::uint32_t arg, const void* body, std::size_t len, void* out,
                            std::size_t out_len, const int* fds, std::size_t nfds) {
  if (len > service::kBodyBytes || nfds > service::kMaxFiles) return EINVAL;
  service::Request req;
  req.op = op;
  req.handle = handle;
  req.arg = arg;
  if (len) std::memcpy(req.body, body, len);
  service::Reply rep;
  std::lock_guard g(mutex_);
  ssize_t n;
  iovec iov{&req, service::kRequestHeader + len};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * service::kMaxFiles)];
  if (nfds) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
  }
  do n = ::sendmsg(fd_, &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EPIPE ? ECONNRESET : errno;
  do n = ::recv(fd_, &rep, sizeof rep, 0);
  while (n < 0 && errno == EINTR);
  if (n == 0) return ECONNRESET;  // the service went away
  if (n < 0) return errno;
  if (static_cast<std::size_t>(n) < service::kReplyHeader || rep.size > static_cast<std::size_t>(n) - service::kReplyHeader)
    return EPROTO;
  if (out_len) {  // an answer may carry a body with an errno too (ProbeWrite's completion status)
    std::memset(out, 0, out_len);
    std::memcpy(out, rep.body, std::min<std::size_t>(out_len, rep.size));
  }
  return rep.err;
}

}  // namespace roce::verbs
