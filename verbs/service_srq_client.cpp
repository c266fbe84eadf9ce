// Service mode's client half for shared receive queues: made by a request to the service with
// a ring of receive WQEs in a memfd this side makes (service_rings.hpp); ibv_post_srq_recv
// writes WQEs into the ring and publishes its tail, as ibv_post_recv does for a QP.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

namespace roce::verbs {

ibv_srq* service_create_srq(Context& c, Pd& p, ibv_srq_init_attr& attr) {
  // The ring holds every WQE the SRQ can: at most kMaxRingEntries in service mode.
  if (attr.attr.max_wr > service::kMaxRingEntries || attr.attr.max_sge > service::kMaxWqeSge)
    return fail<ibv_srq>(EINVAL);
  const std::uint32_t size = service::ring_size_for(std::max(1u, attr.attr.max_wr));
  const std::size_t bytes = service::srq_ring_bytes(size);
  RingFile f = make_ring_file(bytes);
  if (f.map == nullptr) return nullptr;
  auto* ring = new ServiceSrqRing{};
  ring->memfd = f.fd;
  ring->map = f.map;
  ring->bytes = bytes;
  ring->ring = new (f.map) service::RingHeader{};
  ring->entries = reinterpret_cast<service::RecvWqe*>(static_cast<char*>(f.map) + sizeof(service::RingHeader));
  ring->size = size;
  service::CreateSrqRequest rq{attr.attr, size};
  service::CreateSrqReply rep;
  if (int rc = c.service->call(service::Op::CreateSrq, p.service_handle, 0, &rq, sizeof rq, &rep, sizeof rep, &f.fd, 1);
      rc != 0) {
    free_rings(ring);
    return fail<ibv_srq>(rc);
  }
  ring->handle = rep.handle;
  ring->max_sge = rep.attr.max_sge;
  attr.attr = rep.attr;  // what it really got
  auto* s = new Srq{};
  s->ring = ring;
  ibv_srq& b = *s;
  b.context = p.context;
  b.srq_context = attr.srq_context;
  b.pd = &p;
  b.handle = rep.handle;
  b.events_completed = 0;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  std::lock_guard g(c.service_mutex);
  c.srqs.insert(s);
  return &b;
}

int service_modify_srq(Context& c, Srq& s, ibv_srq_attr& attr, int mask) {
  service::ModifySrqRequest rq{attr, mask};
  return c.service->call(service::Op::ModifySrq, s.ring->handle, 0, &rq, sizeof rq, nullptr, 0);
}

int service_query_srq(Context& c, Srq& s, ibv_srq_attr& attr) {
  return c.service->call(service::Op::QuerySrq, s.ring->handle, 0, nullptr, 0, &attr, sizeof attr);
}

int service_destroy_srq(Context& c, Srq* s) {
  if (int rc = c.service->call(service::Op::DestroySrq, s->ring->handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  {
    std::lock_guard g(c.service_mutex);
    c.srqs.erase(s);
  }
  free_rings(s->ring);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mutex);
  retire(s);
  return 0;
}

// Library mode's post-time refusals (more SGEs than the SRQ's, a full queue), then the ring.
int service_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* s = to_srq(srq);
  if (s == nullptr || s->ring == nullptr) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  ServiceSrqRing& r = *s->ring;
  std::lock_guard g(r.mutex);
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > r.max_sge) {
      err = EINVAL;
    } else if (r.tail - r.ring->head.load(std::memory_order_acquire) >= r.size) {
      err = ENOMEM;
    }
    if (err) {
      if (bad) *bad = wr;
      break;
    }
    put_recv_wqe(r.entries[r.tail & (r.size - 1)], *wr);
    ++r.tail;
  }
  r.ring->tail.store(r.tail, std::memory_order_release);
  return err;
}

}  // namespace roce::verbs
