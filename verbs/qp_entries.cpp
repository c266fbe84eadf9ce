// Queue pairs: ibv_create_qp / ibv_create_qp_ex .. ibv_destroy_qp, shared receive queues, and
// the QP kinds and features this device does not have (XRC, multicast, ECE).
#include <pthread.h>
#include <unistd.h>

#include "verbs/export.hpp"
#include "verbs/objects.hpp"
#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

using namespace roce;
using namespace roce::verbs;

namespace {

constexpr Nanos kArpWait = 3 * kSecond;

constexpr std::uint64_t kSupportedSendOps =
    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
    IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
    IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;

ibv_qp* make_qp(Pd* p, ibv_qp_init_attr_ex& a, bool extended) {
  Context* c = to_context(p->context);
  if (not_served(*c, "ibv_create_qp")) return nullptr;
  Cq* scq = to_cq(a.send_cq);
  Cq* rcq = to_cq(a.recv_cq);
  if (scq == nullptr || rcq == nullptr || scq->context != p->context || rcq->context != p->context)
    return fail<ibv_qp>(EINVAL);
  Srq* srq = a.srq ? to_srq(a.srq) : nullptr;
  if (a.srq != nullptr && (srq == nullptr || srq->context != p->context)) return fail<ibv_qp>(EINVAL);
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
  rdma::QpInit init;
  init.type = a.qp_type;
  init.send_cq = scq->impl;
  init.recv_cq = rcq->impl;
  init.cap = a.cap;
  init.sq_sig_all = a.sq_sig_all != 0;
  init.srq = srq ? srq->impl : nullptr;
  EngineGuard g(c->rt->lock());
  auto impl = c->rt->engine().create_qp(p->handle, init);
  if (!impl) return fail<ibv_qp>(impl.error().code);
  auto* q = new Qp{};
  q->rt = c->rt;
  q->impl = *impl;
  q->extended = extended;
  ibv_qp& b = q->qp_base;
  b.context = p->context;
  b.qp_context = a.qp_context;
  b.pd = p;
  b.send_cq = a.send_cq;
  b.recv_cq = a.recv_cq;
  b.srq = a.srq;
  b.handle = (*impl)->qpn();
  b.qp_num = (*impl)->qpn();
  b.state = IBV_QPS_RESET;
  b.qp_type = a.qp_type;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  if (extended) {
    q->comp_mask = 0;
    install_wr_api(*q);
  }
  a.cap = (*impl)->config().cap;  // what the QP really got
  ++p->users;
  ++scq->qps;
  ++rcq->qps;
  c->qps.insert(q);
  return &b;
}

}  // namespace

ROCE_VERBS_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  Pd* p = to_pd(pd);
  if (p == nullptr || attr == nullptr) return fail<ibv_qp>(EINVAL);
  if (Context* c = to_context(p->context); c->service) return service_create_qp(*c, *p, *attr);
  ibv_qp_init_attr_ex a{};
  a.qp_context = attr->qp_context;
  a.send_cq = attr->send_cq;
  a.recv_cq = attr->recv_cq;
  a.srq = attr->srq;
  a.cap = attr->cap;
  a.qp_type = attr->qp_type;
  a.sq_sig_all = attr->sq_sig_all;
  ibv_qp* qp = make_qp(p, a, false);
  if (qp) attr->cap = a.cap;
  return qp;
}

namespace roce::verbs {

ibv_qp* create_qp_ex_op(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  if (to_context(context) == nullptr || attr == nullptr) return fail<ibv_qp>(EINVAL);
  if (not_served(*to_context(context), "ibv_create_qp_ex")) return nullptr;
  const std::uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
                              IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
                              IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (attr->comp_mask & ~known) return fail<ibv_qp>(EINVAL);
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) return fail<ibv_qp>(EINVAL);
  if (attr->comp_mask & (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE |
                         IBV_QP_INIT_ATTR_RX_HASH))
    return fail<ibv_qp>(EOPNOTSUPP);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) return fail<ibv_qp>(EOPNOTSUPP);
  const bool extended = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (extended && (attr->send_ops_flags & ~kSupportedSendOps)) return fail<ibv_qp>(EOPNOTSUPP);
  Pd* p = to_pd(attr->pd);
  if (p == nullptr || p->context != context) return fail<ibv_qp>(EINVAL);
  return make_qp(p, *attr, extended);
}

int destroy_qp_locked(Context& c, Qp* q) {
  // What arrived since the program last polled is taken first, and what the QP owes for it (the
  // ACK of the peer's last SEND) leaves before the QP goes, with an ACK held for the program's
  // next post: a hardware responder would have answered those frames on arrival. Without it,
  // ibv_srq_pingpong's server had its last SENDs run out of retries about once in 12-25 runs,
  // their frames waiting in the port while the client, done polling, destroyed its QPs.
  for (int i = 0; i < 8 && c.rt->step_from_app() > 0; ++i) {
  }
  if (Status s = c.rt->engine().destroy_qp(q->impl); !s) return s.code();
  if (q->qp_base.srq) {
    std::lock_guard<std::mutex> l(c.async.mutex);
    std::erase_if(c.async.queue, [q](const ibv_async_event& e) {
      return e.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && e.element.qp == &q->qp_base;
    });
  }
  --to_pd(q->qp_base.pd)->users;
  --to_cq(q->qp_base.send_cq)->qps;
  --to_cq(q->qp_base.recv_cq)->qps;
  c.qps.erase(q);
  pthread_cond_destroy(&q->qp_base.cond);
  pthread_mutex_destroy(&q->qp_base.mutex);
  retire(q);
  return 0;
}

}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  Qp* q = to_qp(qp);
  Context* c = q ? to_context(q->qp_base.context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_destroy_qp(*c, q);
  EngineGuard g(c->rt->lock());
  return destroy_qp_locked(*c, q);
}

ROCE_VERBS_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  Qp* q = to_qp(qp);
  if (q == nullptr || attr == nullptr) return EINVAL;
  if (Context* c = to_context(qp->context); c->service) return service_modify_qp(*c, *q, *attr, mask);
  // A connected QP's path needs the peer's MAC: ask the link before taking the engine (the
  // dataplane thread answers ARP meanwhile).
  if ((mask & IBV_QP_AV) && qp->qp_type != IBV_QPT_UD && attr->ah_attr.is_global) {
    const rdma::IpAddress peer = rdma::ip_from_gid(attr->ah_attr.grh.dgid);
    // ARP or neighbour discovery; a peer of the other family is the engine's EINVAL below.
    if (peer.version == q->rt->local().ip.version && !q->rt->resolve(peer, kArpWait)) return EHOSTUNREACH;
  }
  if ((mask & IBV_QP_AV) && attr->ah_attr.port_num > 1) return EINVAL;
  EngineGuard g(q->rt->lock());
  q->rt->send_held();  // before the QP leaves RTS (an ACK held for the program's next post)
  if (Status s = q->rt->engine().modify_qp(q->impl, *attr, mask); !s) return s.code();
  if (mask & IBV_QP_AV) q->av = attr->ah_attr;
  if (mask & IBV_QP_PORT) q->port_num = attr->port_num;
  qp->state = to_ibv(q->impl->state());
  return 0;
}

ROCE_VERBS_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init_attr) {
  Qp* q = to_qp(qp);
  if (q == nullptr || attr == nullptr || init_attr == nullptr) return EINVAL;
  if (Context* c = to_context(qp->context); c->service) return service_query_qp(*c, *q, *attr, mask, *init_attr);
  EngineGuard g(q->rt->lock());
  q->impl->query(attr, init_attr);
  attr->ah_attr = q->av;
  attr->port_num = q->port_num;
  init_attr->qp_context = qp->qp_context;
  init_attr->send_cq = qp->send_cq;
  init_attr->recv_cq = qp->recv_cq;
  init_attr->srq = qp->srq;
  qp->state = attr->qp_state;
  return 0;
}

ROCE_VERBS_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  Qp* q = to_qp(qp);
  if (q == nullptr || !q->extended) return fail<ibv_qp_ex>(EOPNOTSUPP);
  return q;
}

// Data lands packet by packet in PSN order, but within a packet by memcpy, whose store order
// is not specified: the last byte may be written before the others.
ROCE_VERBS_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, std::uint32_t) { return 0; }

ROCE_VERBS_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece*) { return to_qp(qp) ? EOPNOTSUPP : EINVAL; }
ROCE_VERBS_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece*) { return to_qp(qp) ? EOPNOTSUPP : EINVAL; }

ROCE_VERBS_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid*, std::uint16_t) {
  return to_qp(qp) ? EOPNOTSUPP : EINVAL;
}
ROCE_VERBS_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid*, std::uint16_t) {
  return to_qp(qp) ? EOPNOTSUPP : EINVAL;
}

// Shared receive queues (lib/rdma/shared_receive_queue.hpp); their limit event and their QPs'
// last-WQE event reach the program through ibv_get_async_event (AsyncEvents).
ROCE_VERBS_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  Pd* p = to_pd(pd);
  if (p == nullptr || attr == nullptr) return fail<ibv_srq>(EINVAL);
  Context* c = to_context(p->context);
  if (c->service) return service_create_srq(*c, *p, *attr);
  EngineGuard g(c->rt->lock());
  auto impl = c->rt->engine().create_srq(p->handle, attr->attr);
  if (!impl) return fail<ibv_srq>(impl.error().code);
  auto* s = new Srq{};
  s->rt = c->rt;
  s->impl = *impl;
  ibv_srq& b = *s;
  b.context = p->context;
  b.srq_context = attr->srq_context;
  b.pd = pd;
  b.handle = 0;
  b.events_completed = 0;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  (*impl)->query(&attr->attr);  // what it really got
  ++p->users;
  if (c->srqs.empty()) c->rt->watch(&c->async);  // events exist only where SRQs do
  c->srqs.insert(s);
  return &b;
}

namespace roce::verbs {

bool AsyncEvents::check() {
  std::uint64_t raised = 0;
  std::lock_guard<std::mutex> l(mutex);
  for (Srq* s : owner->srqs) {
    if (!s->impl->take_limit_event()) continue;
    ibv_async_event ev{};
    ev.element.srq = s;
    ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
    queue.push_back(ev);
    ++raised;
  }
  for (Qp* q : owner->qps) {
    if (q->qp_base.srq == nullptr || !q->impl->take_last_wqe_reached()) continue;
    ibv_async_event ev{};
    ev.element.qp = &q->qp_base;
    ev.event_type = IBV_EVENT_QP_LAST_WQE_REACHED;
    queue.push_back(ev);
    ++raised;
  }
  if (raised) (void)!::write(owner->context.async_fd, &raised, sizeof raised);
  return false;
}

}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  Srq* s = to_srq(srq);
  if (s == nullptr || attr == nullptr) return EINVAL;
  if (Context* c = to_context(s->context); c->service) return service_modify_srq(*c, *s, *attr, mask);
  EngineGuard g(s->rt->lock());
  const Status st = s->rt->engine().modify_srq(s->impl, *attr, mask);
  return st ? 0 : st.code();
}

ROCE_VERBS_EXPORT int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  Srq* s = to_srq(srq);
  if (s == nullptr || attr == nullptr) return EINVAL;
  if (Context* c = to_context(s->context); c->service) return service_query_srq(*c, *s, *attr);
  EngineGuard g(s->rt->lock());
  s->impl->query(attr);
  return 0;
}

namespace roce::verbs {

int destroy_srq_locked(Context& c, Srq* s) {
  if (Status st = c.rt->engine().destroy_srq(s->impl); !st) return st.code();
  --to_pd(s->pd)->users;
  c.srqs.erase(s);
  if (c.srqs.empty()) c.rt->unwatch(&c.async);
  {
    // Events of it not yet read would name a freed SRQ.
    std::lock_guard<std::mutex> l(c.async.mutex);
    std::erase_if(c.async.queue, [s](const ibv_async_event& e) {
      return e.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && e.element.srq == s;
    });
  }
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mutex);
  retire(s);
  return 0;
}

int post_srq_recv_op(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* s = to_srq(srq);
  if (s == nullptr) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  EngineGuard g(s->rt->lock());
  return s->rt->engine().post_srq_recv(s->impl, wr, bad);
}

}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_destroy_srq(ibv_srq* srq) {
  Srq* s = to_srq(srq);
  Context* c = s ? to_context(s->context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_destroy_srq(*c, s);
  EngineGuard g(c->rt->lock());
  return destroy_srq_locked(*c, s);
}
