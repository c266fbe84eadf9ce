#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "verbs/export.hpp"
#include "verbs/service_verbs.hpp"
#include "verbs/shared_memory.hpp"

namespace roce::verbs {

using service::Op;

ibv_pd* service_alloc_pd(Context& c) {
  service::Handle h;
  if (int rc = c.service->call(Op::AllocPd, &h, sizeof h); rc != 0) return fail<ibv_pd>(rc);
  auto* p = new Pd{};
  p->context = &c.context;
  p->service_handle = h.value;
  std::lock_guard g(c.service_mutex);
  c.pds.insert(p);
  return p;
}

int service_dealloc_pd(Context& c, Pd& p) {
  if (int rc = c.service->call(Op::DeallocPd, p.service_handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  std::lock_guard g(c.service_mutex);
  c.pds.erase(&p);
  retire(&p);
  return 0;
}

ibv_mr* service_reg_mr(Context& c, Pd& p, void* addr, std::size_t length, std::uint64_t iova, unsigned access) {
  auto segments = share_pages(addr, length);
  if (!segments) return fail<ibv_mr>(segments.error().code);
  // More runs than one record carries: a buffer pieced together from many earlier registrations.
  if (segments->size() > service::kMaxSegments) return fail<ibv_mr>(ENOMEM);
  service::RegMrRequest q;
  q.addr = reinterpret_cast<std::uintptr_t>(addr);
  q.length = length;
  q.iova = iova;
  q.access = access;
  q.segments = static_cast<std::uint32_t>(segments->size());
  int fds[service::kMaxSegments];
  for (std::size_t i = 0; i < segments->size(); ++i) {
    q.segment[i] = {(*segments)[i].fd_offset, (*segments)[i].length};
    fds[i] = (*segments)[i].fd;
  }
  service::RegMrReply rep;
  const std::size_t len = offsetof(service::RegMrRequest, segment) + q.segments * sizeof(service::RegMrRequest::Segment);
  if (int rc = c.service->call(Op::RegMr, p.service_handle, 0, &q, len, &rep, sizeof rep, fds, q.segments); rc != 0)
    return fail<ibv_mr>(rc);
  auto* m = new Mr{};
  m->context = &c.context;
  m->pd = &p;
  m->addr = addr;
  m->length = length;
  m->handle = rep.handle;
  m->lkey = rep.lkey;
  m->rkey = rep.rkey;
  m->service_handle = rep.handle;
  std::lock_guard g(c.service_mutex);
  c.mrs.insert(m);
  return m;
}

int service_dereg_mr(Context& c, Mr& m) {
  if (int rc = c.service->call(Op::DeregMr, m.service_handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  std::lock_guard g(c.service_mutex);
  c.mrs.erase(&m);
  retire(&m);
  return 0;
}

ibv_ah* service_create_ah(Context& c, Pd& p, const ibv_ah_attr& attr) {
  service::Handle h;
  if (int rc = c.service->call(Op::CreateAh, p.service_handle, 0, &attr, sizeof attr, &h, sizeof h); rc != 0)
    return fail<ibv_ah>(rc);
  auto* ah = new ServiceAh{};
  ah->context = &c.context;
  ah->pd = &p;
  ah->handle = h.value;
  ah->service_handle = h.value;
  std::lock_guard g(c.service_mutex);
  c.service_ahs.insert(ah);
  return ah;
}

int service_destroy_ah(Context& c, ibv_ah* ah) {
  auto* a = static_cast<ServiceAh*>(ah);
  {
    std::lock_guard g(c.service_mutex);
    if (!c.service_ahs.count(a)) return EINVAL;
  }
  if (int rc = c.service->call(Op::DestroyAh, a->service_handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  std::lock_guard g(c.service_mutex);
  c.service_ahs.erase(a);
  delete a;
  return 0;
}

ibv_mw* service_alloc_mw(Context& c, Pd& p, ibv_mw_type type) {
  service::AllocMwReply rep;
  if (int rc = c.service->call(service::Op::AllocMw, p.service_handle, static_cast<std::uint32_t>(type), nullptr, 0,
                               &rep, sizeof rep);
      rc != 0)
    return fail<ibv_mw>(rc);
  auto* w = new Mw{};
  w->service_handle = rep.handle;
  w->context = p.context;
  w->pd = &p;
  w->rkey = rep.rkey;
  w->handle = rep.handle;
  w->type = type;
  std::lock_guard g(c.service_mutex);
  c.mws.insert(w);
  return w;
}

int service_dealloc_mw(Context& c, Mw* m) {
  if (int rc = c.service->call(service::Op::DeallocMw, m->service_handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  std::lock_guard g(c.service_mutex);
  c.mws.erase(m);
  retire(m);
  return 0;
}

void service_close(Context& c) {
  c.service.reset();  // the service frees everything this connection owned
  std::lock_guard g(c.service_mutex);
  for (Qp* q : c.qps) {
    ::munmap(q->rings->map, q->rings->bytes);
    ::close(q->rings->memfd);
    delete q->rings;
    retire(q);
  }
  c.qps.clear();
  for (Srq* s : c.srqs) {
    ::munmap(s->ring->map, s->ring->bytes);
    ::close(s->ring->memfd);
    delete s->ring;
    retire(s);
  }
  c.srqs.clear();
  for (Cq* q : c.cqs) {
    ::munmap(q->ring->map, q->ring->bytes);
    ::close(q->ring->memfd);
    delete q->ring;
    retire(q);
  }
  c.cqs.clear();
  for (Channel* ch : c.channels) {
    ::close(ch->fd);
    retire(ch);
  }
  c.channels.clear();
  for (ServiceAh* a : c.service_ahs) delete a;
  c.service_ahs.clear();
  for (Mw* m : c.mws) retire(m);
  c.mws.clear();
  for (Mr* m : c.mrs) retire(m);
  for (Pd* p : c.pds) retire(p);
  c.mrs.clear();
  c.pds.clear();
}

}  // namespace roce::verbs

// Tests only (roce-verbsd --allow-probe): the service WRITEs `length` bytes of `pattern` into
// (addr, rkey) from a QP pair of its own in `pd`. Returns 0 or an errno (EIO: the completion
// failed, its status in *wc_status).
ROCE_VERBS_EXPORT int roce_verbs_probe_write(ibv_pd* pd, std::uint64_t addr, std::uint32_t rkey, std::uint32_t length,
                                             std::uint8_t pattern, std::uint32_t* wc_status) {
  using namespace roce::verbs;
  Pd* p = to_pd(pd);
  Context* c = p ? to_context(p->context) : nullptr;
  if (c == nullptr || !c->service) return EINVAL;
  service::ProbeWriteRequest q;
  q.addr = addr;
  q.rkey = rkey;
  q.length = length;
  q.pattern = pattern;
  service::Handle status;
  const int rc = c->service->call(service::Op::ProbeWrite, p->service_handle, 0, &q, sizeof q, &status, sizeof status);
  if (wc_status) *wc_status = status.value;
  return rc;
}
