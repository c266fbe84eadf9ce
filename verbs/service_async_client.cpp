// Service mode's client half of asynchronous events: the context's async_fd is the program's
// end of a SOCK_SEQPACKET socket pair whose other end went to the service with Open; the service
// sends one AsyncEventRecord per event (service_async.cpp). So the fd is pollable and O_NONBLOCK
// gives EAGAIN, as library mode's eventfd and a uverbs file do.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "verbs/service_verbs.hpp"

namespace roce::verbs {
namespace {

// The program's object an event record names, put into the event; false when it is gone (the
// program destroyed it after the service sent the event).
bool name_element(Context& c, const service::AsyncEventRecord& rec, ibv_async_event& e) {
  e.event_type = static_cast<ibv_event_type>(rec.event_type);
  std::lock_guard g(c.service_mutex);
  switch (service::element_of(e.event_type)) {
    case service::AsyncElement::Qp:
      for (Qp* q : c.qps)
        if (q->qp_base.handle == rec.element) return (e.element.qp = &q->qp_base), true;
      return false;
    case service::AsyncElement::Srq:
      for (Srq* s : c.srqs)
        if (s->handle == rec.element) return (e.element.srq = s), true;
      return false;
    case service::AsyncElement::Cq:
      for (Cq* q : c.cqs)
        if (q->ring->handle == rec.element) return (e.element.cq = ibv_cq_ex_to_cq(q)), true;
      return false;
    case service::AsyncElement::Port:
      e.element.port_num = static_cast<int>(rec.element);
      return true;
  }
  return false;
}

}  // namespace

int service_event_socket(int& program_end) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  program_end = sv[0];
  return sv[1];
}

int service_get_async_event(Context& c, ibv_async_event& e) {
  for (;;) {
    service::AsyncEventRecord rec;
    ssize_t n;
    do n = ::recv(c.context.async_fd, &rec, sizeof rec, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) return -1;  // EAGAIN when the program made the fd non-blocking
    if (n == 0) {
      errno = ECONNRESET;  // the service is gone
      return -1;
    }
    if (n != sizeof rec) {
      errno = EPROTO;
      return -1;
    }
    e = ibv_async_event{};
    if (name_element(c, rec, e)) return 0;
    // An event of an object destroyed since: library mode drops those too; read the next.
  }
}

}  // namespace roce::verbs
