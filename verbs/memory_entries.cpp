// Protection domains and memory regions: ibv_alloc_pd .. ibv_dereg_mr, and the MR kinds this
// device does not have (dma-buf, device memory, imported objects).
#include <sys/mman.h>
#include <unistd.h>

#include "verbs/export.hpp"
#include "verbs/objects.hpp"
#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

using namespace roce;
using namespace roce::verbs;

namespace {

// Access bits the kernel accepts for any device (IB_ACCESS_SUPPORTED as rdma-core 44 knows it).
constexpr unsigned kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING |
                                  static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);

// The memory must be mapped: a region the peer may write is written by the dataplane thread, so
// an unmapped one must fail now (EFAULT, as pinning it fails on a real device) rather than there.
bool mapped(const void* addr, std::size_t length) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto begin = reinterpret_cast<std::uintptr_t>(addr) & ~static_cast<std::uintptr_t>(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(addr) + length;
  return ::msync(reinterpret_cast<void*>(begin), end - begin, MS_ASYNC) == 0;
}

}  // namespace

ROCE_VERBS_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Context* c = to_context(context);
  if (c == nullptr) return fail<ibv_pd>(EINVAL);
  if (c->service) return service_alloc_pd(*c);
  EngineGuard g(c->rt->lock());
  if (c->pds.size() >= 65536) return fail<ibv_pd>(ENOMEM);
  auto* p = new Pd{};
  p->context = context;
  p->handle = c->rt->memory().alloc_pd();
  c->pds.insert(p);
  return p;
}

ROCE_VERBS_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  Pd* p = to_pd(pd);
  Context* c = p ? to_context(p->context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_dealloc_pd(*c, *p);
  EngineGuard g(c->rt->lock());
  if (p->users) return EBUSY;
  c->pds.erase(p);
  retire(p);
  return 0;
}

ROCE_VERBS_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova,
                                           unsigned access) {
  Pd* p = to_pd(pd);
  Context* c = p ? to_context(p->context) : nullptr;
  if (c == nullptr) return fail<ibv_mr>(EINVAL);
  if (access & ~kKnownAccess) return fail<ibv_mr>(EINVAL);
  if (access & IBV_ACCESS_ON_DEMAND) return fail<ibv_mr>(EOPNOTSUPP);  // no on-demand paging
  // Optional bits are hints a device may ignore (libibverbs drops them for such devices);
  // MW_BIND lets windows be bound to the region (the engine checks it); HUGETLB is a hint.
  access &= ~(static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE) | IBV_ACCESS_HUGETLB);
  if (length == 0 || addr == nullptr) return fail<ibv_mr>(EINVAL);
  if (!mapped(addr, length)) return fail<ibv_mr>(EFAULT);
  if (c->service) return service_reg_mr(*c, *p, addr, length, iova, access);
  EngineGuard g(c->rt->lock());
  auto r = c->rt->memory().register_region(p->handle, addr, length, static_cast<int>(access),
                                           (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova);
  if (!r) return fail<ibv_mr>(r.error().code);
  auto* m = new Mr{};
  m->context = p->context;
  m->pd = pd;
  m->addr = addr;
  m->length = length;
  m->handle = (*r)->key;
  m->lkey = (*r)->lkey();
  m->rkey = (*r)->rkey();
  ++p->users;
  c->mrs.insert(m);
  return m;
}

ROCE_VERBS_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, std::size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr), static_cast<unsigned>(access));
}

ROCE_VERBS_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

namespace roce::verbs {
int dereg_mr_locked(Context& c, Mr* m) {
  if (Status s = c.rt->memory().deregister(m->handle); !s) return s.code();
  --to_pd(m->pd)->users;
  c.mrs.erase(m);
  retire(m);
  return 0;
}
}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  Mr* m = to_mr(mr);
  Context* c = m ? to_context(m->context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_dereg_mr(*c, *m);
  EngineGuard g(c->rt->lock());
  return dereg_mr_locked(*c, m);
}

// Re-registration would change the keys the peer holds; programs fall back to dereg + reg.
ROCE_VERBS_EXPORT int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, std::size_t, int) { return EOPNOTSUPP; }

ROCE_VERBS_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, std::uint64_t, std::size_t, std::uint64_t, int, int) {
  return fail<ibv_mr>(EOPNOTSUPP);
}

ROCE_VERBS_EXPORT ibv_pd* ibv_import_pd(ibv_context*, std::uint32_t) { return fail<ibv_pd>(EOPNOTSUPP); }
ROCE_VERBS_EXPORT void ibv_unimport_pd(ibv_pd*) {}
ROCE_VERBS_EXPORT ibv_mr* ibv_import_mr(ibv_pd*, std::uint32_t) { return fail<ibv_mr>(EOPNOTSUPP); }
ROCE_VERBS_EXPORT void ibv_unimport_mr(ibv_mr*) {}
ROCE_VERBS_EXPORT ibv_dm* ibv_import_dm(ibv_context*, std::uint32_t) { return fail<ibv_dm>(EOPNOTSUPP); }
ROCE_VERBS_EXPORT void ibv_unimport_dm(ibv_dm*) {}

// Memory windows (lib/rdma/memory_window.hpp), through the context's ops as libibverbs'
// inlines call them: ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw (type 1; a type 2 window is
// bound by an IBV_WR_BIND_MW work request). The handle's rkey follows each type 1 bind.
namespace roce::verbs {

ibv_mw* alloc_mw_op(ibv_pd* pd, ibv_mw_type type) {
  Pd* p = to_pd(pd);
  Context* c = p ? to_context(p->context) : nullptr;
  if (c == nullptr) return fail<ibv_mw>(EINVAL);
  if (c->service) return service_alloc_mw(*c, *p, type);
  EngineGuard g(c->rt->lock());
  auto impl = c->rt->engine().alloc_mw(p->handle, type);
  if (!impl) return fail<ibv_mw>(impl.error().code);
  auto* w = new Mw{};
  w->rt = c->rt;
  w->impl = *impl;
  w->context = p->context;
  w->pd = pd;
  w->rkey = (*impl)->base.rkey;
  w->handle = w->rkey;
  w->type = type;
  ++p->users;
  c->mws.insert(w);
  return w;
}

int dealloc_mw_locked(Context& c, Mw* w) {
  if (Status s = c.rt->engine().dealloc_mw(w->impl); !s) return s.code();
  --to_pd(w->pd)->users;
  c.mws.erase(w);
  retire(w);
  return 0;
}

int dealloc_mw_op(ibv_mw* mw) {
  Mw* w = to_mw(mw);
  Context* c = w ? to_context(w->context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_dealloc_mw(*c, w);
  EngineGuard g(c->rt->lock());
  return dealloc_mw_locked(*c, w);
}

int bind_mw_op(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
  Qp* q = to_qp(qp);
  Mw* w = to_mw(mw);
  if (q == nullptr || w == nullptr || bind == nullptr || w->context != qp->context) return EINVAL;
  if (bind->bind_info.mr && to_mr(bind->bind_info.mr) == nullptr) return EINVAL;
  if (to_context(qp->context)->service) return service_bind_mw(*q, *w, *bind);
  EngineGuard g(q->rt->lock());
  const int rc = q->rt->engine().bind_mw(q->impl, w->impl, *bind);
  if (rc == 0) w->rkey = w->impl->base.rkey;
  return rc;
}

}  // namespace roce::verbs
