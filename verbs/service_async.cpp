// The service's side of asynchronous events: each program's context in the service is a
// library-mode context, which raises library mode's events (SRQ limit reached, last WQE reached)
// on its async_fd. The control loop polls those fds; each event is taken and acknowledged here,
// its object named by the handle the program knows it by, and sent as one record on the
// program's event socket (service_proto.hpp's AsyncEventRecord). A program that reads none of
// them is not waited for: a record its full socket refuses is counted and dropped.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "verbs/service.hpp"

namespace roce::verbs {
namespace {

// The handle under which the program knows the object an event names; 0: none (destroyed
// meanwhile, or not the program's).
template <typename Map, typename Get>
std::uint32_t handle_of(const Map& m, const void* object, Get get) {
  for (const auto& [h, v] : m)
    if (get(v) == object) return h;
  return 0;
}

std::uint32_t element_handle(const auto& c, const ibv_async_event& e) {
  switch (service::element_of(e.event_type)) {
    case service::AsyncElement::Qp:
      return handle_of(c.qps, e.element.qp, [](const auto& q) { return q.qp; });
    case service::AsyncElement::Srq:
      return handle_of(c.srqs, e.element.srq, [](const auto& q) { return q.srq; });
    case service::AsyncElement::Cq:
      return handle_of(c.cqs, e.element.cq, [](const auto& q) { return q.cq; });
    case service::AsyncElement::Port:
      return static_cast<std::uint32_t>(e.element.port_num);
  }
  return 0;
}

}  // namespace

int VerbsService::async_open(Client& c, const std::vector<int>& files) {
  // The service reads its context's events without blocking its loop.
  const int fd = c.ctx->async_fd;
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return errno;
  if (files.empty()) return 0;  // a program that takes no events (raw tests): they are dropped uncounted
  if (!is_record_socket(files[0])) return EINVAL;
  c.async_sock = ::fcntl(files[0], F_DUPFD_CLOEXEC, 0);
  return c.async_sock < 0 ? errno : 0;
}

void VerbsService::async_poll_fds(std::vector<pollfd>& fds) const {
  for (const auto& c : clients_)
    if (c->ctx) fds.push_back({c->ctx->async_fd, POLLIN, 0});
}

void VerbsService::async_deliver() {
  for (auto& c : clients_) {
    if (!c->ctx) continue;
    ibv_async_event e{};
    while (ibv_get_async_event(c->ctx, &e) == 0) {
      const service::AsyncEventRecord rec{static_cast<std::uint32_t>(e.event_type), element_handle(*c, e)};
      ibv_ack_async_event(&e);
      if (c->async_sock < 0 || (rec.element == 0 && service::element_of(e.event_type) != service::AsyncElement::Port))
        continue;
      if (::send(c->async_sock, &rec, sizeof rec, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof rec))
        continue;
      ++async_events_dropped_;
      if (!c->async_full_said) {
        std::fprintf(stderr, "roce-verbsd: program %d reads none of its asynchronous events: those its socket cannot hold are dropped\n",
                     c->pid);
        c->async_full_said = true;
      }
    }
  }
}

}  // namespace roce::verbs
