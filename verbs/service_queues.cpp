// Service mode's client half for completion channels, CQs and QPs (slice 3): each is made by a
// request to the service, with the rings in a memfd this side makes (sealed at its size) and
// maps; posting writes WQEs into the ring and publishes its tail, polling reads completions the
// service wrote, neither with a syscall (service_rings.hpp).
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/rdma/memory_window.hpp"
#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

namespace roce::verbs {
namespace {

using service::Op;

int svc_poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  Cq* q = to_cq(cq);
  if (q == nullptr || q->ring == nullptr || num_entries < 0) return -1;
  ServiceCqRing& r = *q->ring;
  std::lock_guard g(r.mutex);
  const std::uint32_t avail = r.ring->tail.load(std::memory_order_acquire) - r.head;
  if (avail > r.size) return -1;
  const auto n = std::min<std::uint32_t>(avail, static_cast<std::uint32_t>(num_entries));
  for (std::uint32_t i = 0; i < n; ++i) wc[i] = r.entries[(r.head + i) & (r.size - 1)];
  r.head += n;
  r.ring->head.store(r.head, std::memory_order_release);
  return static_cast<int>(n);
}

// Arms for one event. The service raises it when it writes the next completion; if entries are
// already waiting, this side raises it at once (as library mode does). Whoever clears `armed`
// raises it, so there is exactly one.
int svc_req_notify_cq(ibv_cq* cq, int) {
  Cq* q = to_cq(cq);
  if (q == nullptr || q->ring == nullptr) return EINVAL;
  ServiceCqRing& r = *q->ring;
  r.ring->armed.store(1, std::memory_order_seq_cst);
  std::uint32_t head;
  {
    std::lock_guard g(r.mutex);
    head = r.head;
  }
  if (r.ring->tail.load(std::memory_order_acquire) != head && r.ring->armed.exchange(0) != 0 && q->notify) {
    r.ring->fired.fetch_add(1, std::memory_order_release);
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto w = ::write(q->notify->fd, &one, sizeof one);
  }
  return 0;
}

bool posting_allowed(ibv_qp_state s) { return s != IBV_QPS_RESET && s != IBV_QPS_INIT && s != IBV_QPS_RTR; }

// A bind's window and region, by the service's handles; EINVAL for objects not of this context.
int put_bind(service::SendWqe& w, const ibv_send_wr& wr, const ibv_context* context) {
  Mw* m = to_mw(wr.bind_mw.mw);
  if (m == nullptr || m->context != context) return EINVAL;
  Mr* r = nullptr;
  if (wr.bind_mw.bind_info.mr != nullptr) {
    r = to_mr(wr.bind_mw.bind_info.mr);
    if (r == nullptr || r->context != context) return EINVAL;
  }
  w.bind.mw = m->service_handle;
  w.bind.mr = r ? r->service_handle : 0;
  w.bind.addr = wr.bind_mw.bind_info.addr;
  w.bind.length = wr.bind_mw.bind_info.length;
  w.bind.access = wr.bind_mw.bind_info.mw_access_flags;
  w.rkey = wr.bind_mw.rkey;
  return 0;
}

// `type1_bind`: the one WR is ibv_bind_mw's (the ring's kRingBindType1).
int post_to_ring(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad, bool type1_bind) {
  Qp* q = to_qp(qp);
  if (q == nullptr || q->rings == nullptr) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  ServiceQpRings& r = *q->rings;
  std::lock_guard g(r.mutex);
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    // Library mode's post-time refusals, checked here; the rest (opcode for the QP type, ...)
    // the service's QP answers with an error completion.
    if (!posting_allowed(qp->state) || wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > r.cap.max_send_sge) {
      err = EINVAL;
    } else if (r.sq_tail - r.sq->head.load(std::memory_order_acquire) >= r.sq_size) {
      err = ENOMEM;
    }
    service::SendWqe& w = r.sq_entries[r.sq_tail & (r.sq_size - 1)];
    if (!err && (wr->send_flags & IBV_SEND_INLINE)) {
      std::uint64_t total = 0;
      for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
      if (total > r.cap.max_inline_data || total > service::kMaxWqeInline) {
        err = EINVAL;
      } else {
        std::uint32_t at = 0;
        for (int i = 0; i < wr->num_sge; ++i) {
          std::memcpy(w.inline_data + at, reinterpret_cast<const void*>(wr->sg_list[i].addr), wr->sg_list[i].length);
          at += wr->sg_list[i].length;
        }
        w.inline_bytes = at;
        w.num_sge = 0;
      }
    } else if (!err) {
      std::memcpy(w.sge, wr->sg_list, static_cast<std::size_t>(wr->num_sge) * sizeof(ibv_sge));
      w.num_sge = static_cast<std::uint32_t>(wr->num_sge);
      w.inline_bytes = 0;
    }
    if (err) {
      if (bad) *bad = wr;
      break;
    }
    w.wr_id = wr->wr_id;
    w.opcode = type1_bind ? service::kRingBindType1 : static_cast<std::uint32_t>(wr->opcode);
    w.send_flags = wr->send_flags;
    w.imm_data = wr->imm_data;
    w.ah = 0;
    if (wr->opcode == IBV_WR_BIND_MW) {
      if ((err = put_bind(w, *wr, qp->context)) != 0) {
        if (bad) *bad = wr;
        break;
      }
    } else if (qp->qp_type == IBV_QPT_UD) {
      // The AH must be one of this context's (the service checks its handle again).
      auto* ah = static_cast<ServiceAh*>(wr->wr.ud.ah);
      {
        std::lock_guard l(to_context(qp->context)->service_mutex);
        if (ah == nullptr || !to_context(qp->context)->service_ahs.count(ah)) err = EINVAL;
      }
      if (err) {
        if (bad) *bad = wr;
        break;
      }
      w.ah = ah->service_handle;
      w.remote_qpn = wr->wr.ud.remote_qpn;
      w.remote_qkey = wr->wr.ud.remote_qkey;
    } else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      w.remote_addr = wr->wr.atomic.remote_addr;
      w.rkey = wr->wr.atomic.rkey;
      w.compare_add = wr->wr.atomic.compare_add;
      w.swap = wr->wr.atomic.swap;
    } else {
      w.remote_addr = wr->wr.rdma.remote_addr;
      w.rkey = wr->wr.rdma.rkey;
    }
    ++r.sq_tail;
  }
  r.sq->tail.store(r.sq_tail, std::memory_order_release);  // the doorbell
  return err;
}

int svc_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) { return post_to_ring(qp, wr, bad, false); }

int svc_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* q = to_qp(qp);
  if (q == nullptr || q->rings == nullptr) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  ServiceQpRings& r = *q->rings;
  std::lock_guard g(r.mutex);
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    if (qp->srq != nullptr || qp->state == IBV_QPS_RESET || wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > r.cap.max_recv_sge) {
      err = EINVAL;
    } else if (r.rq_tail - r.rq->head.load(std::memory_order_acquire) >= r.rq_size) {
      err = ENOMEM;
    }
    if (err) {
      if (bad) *bad = wr;
      break;
    }
    put_recv_wqe(r.rq_entries[r.rq_tail & (r.rq_size - 1)], *wr);
    ++r.rq_tail;
  }
  r.rq->tail.store(r.rq_tail, std::memory_order_release);
  return err;
}

}  // namespace

// A type 1 window's key follows each bind at post time, as library mode's does; the service's
// window takes the same next key (rdma::next_window_key).
int service_bind_mw(Qp& q, Mw& m, const ibv_mw_bind& b) {
  if (m.type != IBV_MW_TYPE_1) return EINVAL;
  ibv_send_wr wr{};
  wr.wr_id = b.wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = b.send_flags;
  wr.bind_mw.mw = &m;
  wr.bind_mw.rkey = rdma::next_window_key(m.rkey);
  wr.bind_mw.bind_info = b.bind_info;
  ibv_send_wr* bad = nullptr;
  const int rc = post_to_ring(&q.qp_base, &wr, &bad, true);
  if (rc == 0) m.rkey = wr.bind_mw.rkey;
  return rc;
}

void put_recv_wqe(service::RecvWqe& w, const ibv_recv_wr& wr) {
  w.wr_id = wr.wr_id;
  w.num_sge = static_cast<std::uint32_t>(wr.num_sge);
  std::memcpy(w.sge, wr.sg_list, static_cast<std::size_t>(wr.num_sge) * sizeof(ibv_sge));
}

RingFile make_ring_file(std::size_t bytes) {
  RingFile f;
  f.fd = ::memfd_create("roce-verbs-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (f.fd < 0) return f;
  if (::ftruncate(f.fd, static_cast<off_t>(bytes)) == 0 &&
      ::fcntl(f.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) {
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
    if (m != MAP_FAILED) {
      f.map = m;
      return f;
    }
  }
  const int e = errno;
  ::close(f.fd);
  f.fd = -1;
  errno = e;
  return f;
}

void install_service_ops(Context& c) {
  ibv_context_ops& o = c.context.ops;
  o.poll_cq = svc_poll_cq;
  o.req_notify_cq = svc_req_notify_cq;
  o.post_send = svc_post_send;
  o.post_recv = svc_post_recv;
  o.post_srq_recv = service_post_srq_recv;
}

ibv_comp_channel* service_create_channel(Context& c) {
  const int fd = ::eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (fd < 0) return nullptr;
  auto* ch = new Channel{};
  ch->context = &c.context;
  ch->fd = fd;
  ch->refcnt = 0;
  std::lock_guard g(c.service_mutex);
  c.channels.insert(ch);
  return ch;
}

int service_destroy_channel(Context& c, Channel* ch) {
  {
    std::lock_guard g(c.service_mutex);
    if (ch->cqs) return EBUSY;
    c.channels.erase(ch);
  }
  ::close(ch->fd);
  retire(ch);
  return 0;
}

ibv_cq* service_create_cq(Context& c, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  Channel* ch = nullptr;
  if (channel != nullptr) {
    ch = to_channel(channel);
    if (ch == nullptr || ch->context != &c.context) return fail<ibv_cq>(EINVAL);
  }
  if (comp_vector != 0) return fail<ibv_cq>(EINVAL);
  // The ring holds every entry the CQ can: at most kMaxRingEntries in service mode.
  if (cqe < 1 || static_cast<std::uint32_t>(cqe) > service::kMaxRingEntries) return fail<ibv_cq>(EINVAL);
  const std::uint32_t size = service::ring_size_for(static_cast<std::uint32_t>(cqe));
  const std::size_t bytes = service::cq_ring_bytes(size);
  RingFile f = make_ring_file(bytes);
  if (f.map == nullptr) return nullptr;
  auto* ring = new ServiceCqRing{};
  ring->memfd = f.fd;
  ring->map = f.map;
  ring->bytes = bytes;
  ring->ring = new (f.map) service::RingHeader{};
  ring->entries = reinterpret_cast<ibv_wc*>(static_cast<char*>(f.map) + sizeof(service::RingHeader));
  ring->size = size;
  service::CreateCqRequest rq{static_cast<std::uint32_t>(cqe), size, ch ? 1u : 0u};
  const int fds[2] = {f.fd, ch ? ch->fd : -1};
  service::CreateCqReply rep;
  if (int rc = c.service->call(Op::CreateCq, 0, 0, &rq, sizeof rq, &rep, sizeof rep, fds, ch ? 2 : 1); rc != 0) {
    free_rings(ring);
    return fail<ibv_cq>(rc);
  }
  ring->handle = rep.handle;
  auto* q = new Cq{};
  q->ring = ring;
  q->notify = ch;
  q->context = &c.context;
  q->channel = channel;
  q->cq_context = cq_context;
  q->handle = rep.handle;
  q->cqe = static_cast<int>(rep.cqe);
  pthread_mutex_init(&q->mutex, nullptr);
  pthread_cond_init(&q->cond, nullptr);
  std::lock_guard g(c.service_mutex);
  if (ch) ++ch->cqs;
  c.cqs.insert(q);
  return reinterpret_cast<ibv_cq*>(static_cast<ibv_cq_ex*>(q));
}

int service_destroy_cq(Context& c, Cq* q) {
  {
    std::lock_guard g(c.service_mutex);
    if (q->qps) return EBUSY;
  }
  if (int rc = c.service->call(Op::DestroyCq, q->ring->handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  {
    std::lock_guard g(c.service_mutex);
    c.cqs.erase(q);
    q->magic = Magic::CqClosing;  // only ibv_ack_cq_events still takes it
    if (q->notify) --q->notify->cqs;
  }
  // Like libibverbs: wait until every event handed out has been acknowledged.
  pthread_mutex_lock(&q->mutex);
  while (q->comp_events_completed != q->events_read) pthread_cond_wait(&q->cond, &q->mutex);
  pthread_mutex_unlock(&q->mutex);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mutex);
  free_rings(q->ring);
  retire(q);
  return 0;
}

Cq* service_fired_cq(Context& c, Channel* ch) {
  std::lock_guard g(c.service_mutex);
  for (Cq* q : c.cqs) {
    if (q->notify != ch || q->ring == nullptr) continue;
    auto& fired = q->ring->ring->fired;
    std::uint32_t f = fired.load(std::memory_order_acquire);
    while (f > 0 && !fired.compare_exchange_weak(f, f - 1, std::memory_order_acq_rel)) {
    }
    if (f > 0) return q;
  }
  return nullptr;
}

ibv_qp* service_create_qp(Context& c, Pd& p, ibv_qp_init_attr& a) {
  Cq* scq = to_cq(a.send_cq);
  Cq* rcq = to_cq(a.recv_cq);
  if (scq == nullptr || rcq == nullptr || scq->context != p.context || rcq->context != p.context)
    return fail<ibv_qp>(EINVAL);
  Srq* srq = a.srq ? to_srq(a.srq) : nullptr;
  if (a.srq != nullptr && (srq == nullptr || srq->context != p.context || srq->ring == nullptr))
    return fail<ibv_qp>(EINVAL);
  switch (a.qp_type) {
    case IBV_QPT_RC:
    case IBV_QPT_UC:
    case IBV_QPT_UD: break;
    case IBV_QPT_RAW_PACKET:
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV:
    case IBV_QPT_DRIVER: return fail<ibv_qp>(EOPNOTSUPP);
    default: return fail<ibv_qp>(EINVAL);
  }
  if (a.cap.max_send_sge > service::kMaxWqeSge || a.cap.max_recv_sge > service::kMaxWqeSge ||
      a.cap.max_inline_data > service::kMaxWqeInline || a.cap.max_send_wr > service::kMaxRingEntries ||
      a.cap.max_recv_wr > service::kMaxRingEntries)
    return fail<ibv_qp>(EINVAL);
  service::CreateQpRequest rq;
  rq.send_cq = scq->ring->handle;
  rq.recv_cq = rcq->ring->handle;
  rq.qp_type = a.qp_type;
  rq.sq_sig_all = static_cast<std::uint32_t>(a.sq_sig_all);
  rq.cap = a.cap;
  rq.sq_size = service::ring_size_for(std::max(1u, a.cap.max_send_wr));
  rq.srq = srq ? srq->ring->handle : 0;
  // A QP on an SRQ takes its receives from the SRQ's ring: its own stays at one entry, unused.
  rq.rq_size = srq ? 1 : service::ring_size_for(std::max(1u, a.cap.max_recv_wr));
  const auto layout = service::qp_ring_layout(rq.sq_size, rq.rq_size);
  RingFile f = make_ring_file(layout.bytes);
  if (f.map == nullptr) return nullptr;
  auto* rings = new ServiceQpRings{};
  rings->memfd = f.fd;
  rings->map = f.map;
  rings->bytes = layout.bytes;
  char* base = static_cast<char*>(f.map);
  rings->sq = new (base + layout.sq_header) service::RingHeader{};
  rings->sq_entries = reinterpret_cast<service::SendWqe*>(base + layout.sq_entries);
  rings->sq_size = rq.sq_size;
  rings->rq = new (base + layout.rq_header) service::RingHeader{};
  rings->rq_entries = reinterpret_cast<service::RecvWqe*>(base + layout.rq_entries);
  rings->rq_size = rq.rq_size;
  service::CreateQpReply rep;
  if (int rc = c.service->call(Op::CreateQp, p.service_handle, 0, &rq, sizeof rq, &rep, sizeof rep, &f.fd, 1); rc != 0) {
    free_rings(rings);
    return fail<ibv_qp>(rc);
  }
  rings->handle = rep.handle;
  rings->cap = rep.cap;
  auto* q = new Qp{};
  q->rings = rings;
  ibv_qp& b = q->qp_base;
  b.context = p.context;
  b.qp_context = a.qp_context;
  b.pd = &p;
  b.send_cq = a.send_cq;
  b.recv_cq = a.recv_cq;
  b.srq = a.srq;
  b.handle = rep.handle;
  b.qp_num = rep.qp_num;
  b.state = IBV_QPS_RESET;
  b.qp_type = a.qp_type;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  a.cap = rep.cap;  // what the QP really got
  std::lock_guard g(c.service_mutex);
  ++scq->qps;
  ++rcq->qps;
  c.qps.insert(q);
  return &b;
}

int service_modify_qp(Context& c, Qp& q, ibv_qp_attr& attr, int mask) {
  service::ModifyQpRequest rq;
  rq.attr = attr;
  rq.mask = mask;
  if (int rc = c.service->call(Op::ModifyQp, q.rings->handle, 0, &rq, sizeof rq, nullptr, 0); rc != 0) return rc;
  if (mask & IBV_QP_STATE) q.qp_base.state = attr.qp_state;
  return 0;
}

int service_query_qp(Context& c, Qp& q, ibv_qp_attr& attr, int mask, ibv_qp_init_attr& init) {
  service::QueryQpReply rep;
  if (int rc = c.service->call(Op::QueryQp, q.rings->handle, static_cast<std::uint32_t>(mask), nullptr, 0, &rep,
                               sizeof rep);
      rc != 0)
    return rc;
  attr = rep.attr;
  init = ibv_qp_init_attr{};
  init.qp_context = q.qp_base.qp_context;
  init.send_cq = q.qp_base.send_cq;
  init.recv_cq = q.qp_base.recv_cq;
  init.cap = rep.cap;
  init.qp_type = q.qp_base.qp_type;
  init.sq_sig_all = static_cast<int>(rep.sq_sig_all);
  q.qp_base.state = attr.qp_state;
  return 0;
}

int service_destroy_qp(Context& c, Qp* q) {
  if (int rc = c.service->call(Op::DestroyQp, q->rings->handle, 0, nullptr, 0, nullptr, 0); rc != 0) return rc;
  std::lock_guard g(c.service_mutex);
  --to_cq(q->qp_base.send_cq)->qps;
  --to_cq(q->qp_base.recv_cq)->qps;
  c.qps.erase(q);
  free_rings(q->rings);
  pthread_cond_destroy(&q->qp_base.cond);
  pthread_mutex_destroy(&q->qp_base.mutex);
  retire(q);
  return 0;
}

}  // namespace roce::verbs
