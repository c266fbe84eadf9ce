#include "verbs/ops.hpp"

#include <unistd.h>

#include <cstring>

#include "verbs/device.hpp"

namespace roce::verbs {

int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* q = to_qp(qp);
  if (q == nullptr) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  EngineGuard g(q->rt->lock());
  const int rc = q->rt->engine().post_send(q->impl, wr, bad);
  q->rt->doorbell_from_app();
  return rc;
}

int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* q = to_qp(qp);
  if (q == nullptr) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  EngineGuard g(q->rt->lock());
  return q->rt->engine().post_recv(q->impl, wr, bad);
}

int poll_or_step(Cq& c, int n, ibv_wc* wc, bool may_step) {
  EngineGuard g(c.rt->lock());
  int got = c.impl->poll(n, wc);
  if (got == 0 && n > 0 && may_step) {
    unsigned received = c.rt->step_from_app(true);
    got = c.impl->poll(n, wc);
    if (got == 0 && c.rt->holds_tx()) {
      // Nothing for the program to answer: what the step owes goes now (and what that step
      // brings is this poll's, or nobody would decide whether to linger for it).
      received += c.rt->step_from_app();
      got = c.impl->poll(n, wc);
    }
    if (got > 0) c.rt->completions_from_step(wc[got - 1], received);
  }
  return got;
}

int poll_cq_op(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  Cq* c = to_cq(cq);
  if (c == nullptr || num_entries < 0) return -1;
  return poll_or_step(*c, num_entries, wc, true);
}

// Arms the CQ for one event: the next completion, or at once when entries are already waiting
// (as a ConnectX CQ whose consumer index is behind raises its event on arming). Solicited-only
// arming is treated the same: the event can come earlier than asked, never later.
int req_notify_cq_op(ibv_cq* cq, int) {
  Cq* c = to_cq(cq);
  if (c == nullptr) return EINVAL;
  EngineGuard g(c->rt->lock());
  if (c->impl->size() > 0) {
    c->signal();
    c->rt->unwatch(c);
    return 0;
  }
  c->armed = true;
  c->rt->watch(c);
  c->rt->program_waits();
  return 0;
}

bool Cq::check() {
  if (impl->size() == 0) return false;
  signal();
  return true;
}

void Cq::signal() {
  armed = false;
  if (notify == nullptr) return;
  {
    std::lock_guard l(notify->mutex);
    notify->events.push_back(this);
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto w = ::write(notify->fd, &one, sizeof one);
}

int query_port_op(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr, std::size_t attr_len) {
  Context* c = to_context(context);
  if (c == nullptr || attr == nullptr) return EINVAL;
  if (port_num != 1) return EINVAL;
  ibv_port_attr full{};
  if (c->service) {
    if (int rc = c->service->call(service::Op::QueryPort, &full, sizeof full, port_num); rc != 0) return rc;
  } else {
    EngineGuard g(c->rt->lock());
    fill_port_attr(*c->rt, full);
  }
  std::memset(attr, 0, attr_len);
  std::memcpy(attr, &full, std::min(attr_len, sizeof full));
  return 0;
}

int query_device_ex_op(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       std::size_t attr_size) {
  Context* c = to_context(context);
  if (c == nullptr || attr == nullptr) return EINVAL;
  if (input && input->comp_mask) return EINVAL;
  ibv_device_attr_ex full{};
  if (c->service) {
    if (int rc = c->service->call(service::Op::QueryDevice, &full.orig_attr, sizeof full.orig_attr); rc != 0) return rc;
  } else {
    EngineGuard g(c->rt->lock());
    fill_device_attr(*c->rt, full.orig_attr);
  }
  full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
  full.phys_port_cnt_ex = 1;
  // Nothing else of the extended attributes exists here: no ODP, TSO, RSS, tag matching,
  // timestamps, packet pacing or device memory.
  std::memset(attr, 0, attr_size);
  std::memcpy(attr, &full, std::min(attr_size, sizeof full));
  return 0;
}

void install_ops(Context& c) {
  ibv_context_ops& o = c.context.ops;
  o.poll_cq = poll_cq_op;
  o.req_notify_cq = req_notify_cq_op;
  o.post_send = post_send_op;
  o.post_recv = post_recv_op;
  o.post_srq_recv = post_srq_recv_op;
  o.alloc_mw = alloc_mw_op;
  o.dealloc_mw = dealloc_mw_op;
  o.bind_mw = bind_mw_op;
  c.query_port = query_port_op;
  c.query_device_ex = query_device_ex_op;
  c.create_qp_ex = create_qp_ex_op;
  c.create_cq_ex = create_cq_ex_op;
}

void release_everything(Context& c) {
  {
    EngineGuard g(c.rt->lock());
    while (!c.qps.empty()) destroy_qp_locked(c, *c.qps.begin());
    while (!c.srqs.empty()) destroy_srq_locked(c, *c.srqs.begin());
    while (!c.mws.empty()) dealloc_mw_locked(c, *c.mws.begin());
    while (!c.ahs.empty()) destroy_ah_locked(c, *c.ahs.begin());
    while (!c.mrs.empty()) dereg_mr_locked(c, *c.mrs.begin());
  }
  while (!c.cqs.empty()) {
    Cq* q = *c.cqs.begin();
    // Nobody will acknowledge its events any more.
    pthread_mutex_lock(&q->mutex);
    q->comp_events_completed = q->events_read;
    pthread_mutex_unlock(&q->mutex);
    destroy_cq_unlocked(c, q);
  }
  while (!c.channels.empty()) destroy_channel(c, *c.channels.begin());
  EngineGuard g(c.rt->lock());
  for (Pd* p : c.pds) {
    retire(p);
  }
  c.pds.clear();
}

}  // namespace roce::verbs
