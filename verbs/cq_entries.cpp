// Completion queues and completion channels: ibv_create_comp_channel .. ibv_ack_cq_events, the
// extended CQ (ibv_create_cq_ex and its start_poll/next_poll/read_* functions).
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "verbs/export.hpp"
#include "verbs/objects.hpp"
#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

using namespace roce;
using namespace roce::verbs;

ROCE_VERBS_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  Context* c = to_context(context);
  if (c == nullptr) return fail<ibv_comp_channel>(EINVAL);
  if (c->service) return service_create_channel(*c);
  // An eventfd in semaphore mode: one count per event, readable while any is waiting, so the
  // program can poll() or epoll it and set O_NONBLOCK as on a uverbs event file.
  const int fd = ::eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (fd < 0) return nullptr;
  auto* ch = new Channel{};
  ch->context = context;
  ch->fd = fd;
  ch->refcnt = 0;
  EngineGuard g(c->rt->lock());
  c->channels.insert(ch);
  return ch;
}

namespace roce::verbs {
int destroy_channel(Context& c, Channel* ch) {
  {
    EngineGuard g(c.rt->lock());
    if (ch->cqs) return EBUSY;
    c.channels.erase(ch);
  }
  ::close(ch->fd);
  retire(ch);
  return 0;
}
}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  Channel* ch = to_channel(channel);
  Context* c = ch ? to_context(ch->context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_destroy_channel(*c, ch);
  return destroy_channel(*c, ch);
}

namespace {

Cq* current_cq(ibv_cq_ex* cq) { return static_cast<Cq*>(cq); }

// Takes the next completion into cq->current (start_poll may step the dataplane once, as
// ibv_poll_cq does).
int take_one(Cq* c, bool may_step) {
  const int n = poll_or_step(*c, 1, &c->current, may_step);
  if (n < 0) return EIO;  // the CQ overran
  if (n == 0) return ENOENT;
  c->status = c->current.status;
  c->wr_id = c->current.wr_id;
  return 0;
}

int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr && attr->comp_mask) return EINVAL;
  return take_one(current_cq(cq), true);
}
int next_poll(ibv_cq_ex* cq) { return take_one(current_cq(cq), false); }
void end_poll(ibv_cq_ex*) {}
ibv_wc_opcode read_opcode(ibv_cq_ex* cq) { return current_cq(cq)->current.opcode; }
std::uint32_t read_vendor_err(ibv_cq_ex* cq) { return current_cq(cq)->current.vendor_err; }
std::uint32_t read_byte_len(ibv_cq_ex* cq) { return current_cq(cq)->current.byte_len; }
__be32 read_imm_data(ibv_cq_ex* cq) { return current_cq(cq)->current.imm_data; }
std::uint32_t read_qp_num(ibv_cq_ex* cq) { return current_cq(cq)->current.qp_num; }
std::uint32_t read_src_qp(ibv_cq_ex* cq) { return current_cq(cq)->current.src_qp; }
unsigned read_wc_flags(ibv_cq_ex* cq) { return current_cq(cq)->current.wc_flags; }
std::uint32_t read_slid(ibv_cq_ex* cq) { return current_cq(cq)->current.slid; }
std::uint8_t read_sl(ibv_cq_ex* cq) { return current_cq(cq)->current.sl; }
std::uint8_t read_dlid_path_bits(ibv_cq_ex* cq) { return current_cq(cq)->current.dlid_path_bits; }

Cq* make_cq(Context& c, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  if (not_served(c, "ibv_create_cq")) return nullptr;
  Channel* ch = nullptr;
  if (channel != nullptr) {
    ch = to_channel(channel);
    if (ch == nullptr || ch->context != &c.context) return fail<Cq>(EINVAL);
  }
  if (comp_vector < 0 || comp_vector >= c.context.num_comp_vectors) return fail<Cq>(EINVAL);
  EngineGuard g(c.rt->lock());
  const auto max = static_cast<int>(c.rt->engine().config().max_cqe);
  if (cqe < 1 || cqe > max) return fail<Cq>(EINVAL);
  if (c.cqs.size() >= 65536) return fail<Cq>(ENOMEM);
  auto impl = c.rt->engine().create_cq(static_cast<std::uint32_t>(cqe));
  if (!impl) return fail<Cq>(impl.error().code);
  auto* q = new Cq{};
  q->rt = c.rt;
  q->impl = *impl;
  q->notify = ch;
  q->context = &c.context;
  q->channel = channel;
  q->cq_context = cq_context;
  q->handle = static_cast<std::uint32_t>(c.cqs.size());
  q->cqe = cqe;
  pthread_mutex_init(&q->mutex, nullptr);
  pthread_cond_init(&q->cond, nullptr);
  if (ch) ++ch->cqs;
  c.cqs.insert(q);
  return q;
}

}  // namespace

ROCE_VERBS_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                        int comp_vector) {
  Context* c = to_context(context);
  if (c == nullptr) return fail<ibv_cq>(EINVAL);
  if (c->service) return service_create_cq(*c, cqe, cq_context, channel, comp_vector);
  return reinterpret_cast<ibv_cq*>(static_cast<ibv_cq_ex*>(make_cq(*c, cqe, cq_context, channel, comp_vector)));
}

namespace roce::verbs {

ibv_cq_ex* create_cq_ex_op(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  Context* c = to_context(context);
  if (c == nullptr || attr == nullptr) return fail<ibv_cq_ex>(EINVAL);
  if (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
    return fail<ibv_cq_ex>(EINVAL);
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain) return fail<ibv_cq_ex>(EOPNOTSUPP);
  // Completions carry what ibv_wc carries; timestamps, VLANs, flow tags and tag matching do not exist here.
  if (attr->wc_flags & ~static_cast<std::uint64_t>(IBV_WC_STANDARD_FLAGS)) return fail<ibv_cq_ex>(EOPNOTSUPP);
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
      (attr->flags & ~static_cast<std::uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))
    return fail<ibv_cq_ex>(EOPNOTSUPP);
  if (attr->cqe > static_cast<std::uint32_t>(INT32_MAX)) return fail<ibv_cq_ex>(EINVAL);
  Cq* q = make_cq(*c, static_cast<int>(attr->cqe), attr->cq_context, attr->channel, static_cast<int>(attr->comp_vector));
  if (q == nullptr) return nullptr;
  q->comp_mask = 0;
  q->start_poll = start_poll;
  q->next_poll = next_poll;
  q->end_poll = end_poll;
  q->read_opcode = read_opcode;
  q->read_vendor_err = read_vendor_err;
  q->read_byte_len = read_byte_len;
  q->read_imm_data = read_imm_data;
  q->read_qp_num = read_qp_num;
  q->read_src_qp = read_src_qp;
  q->read_wc_flags = read_wc_flags;
  q->read_slid = read_slid;
  q->read_sl = read_sl;
  q->read_dlid_path_bits = read_dlid_path_bits;
  return q;
}

int destroy_cq_unlocked(Context& c, Cq* q) {
  {
    EngineGuard g(c.rt->lock());
    if (q->qps) return EBUSY;
    if (Status s = c.rt->engine().destroy_cq(q->impl); !s) return s.code();
    c.rt->unwatch(q);
    c.cqs.erase(q);
    q->magic = Magic::CqClosing;  // only ibv_ack_cq_events still takes it
    if (q->notify) --q->notify->cqs;
  }
  if (Channel* ch = q->notify) {
    // Events not yet read go with the CQ, as uverbs drops them from the event file.
    std::lock_guard l(ch->mutex);
    std::erase(ch->events, q);
  }
  // Like libibverbs: wait until every event handed out has been acknowledged.
  pthread_mutex_lock(&q->mutex);
  while (q->comp_events_completed != q->events_read) pthread_cond_wait(&q->cond, &q->mutex);
  pthread_mutex_unlock(&q->mutex);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mutex);
  retire(q);
  return 0;
}

}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  Cq* q = to_cq(cq);
  Context* c = q ? to_context(q->context) : nullptr;
  if (c == nullptr) return EINVAL;
  if (c->service) return service_destroy_cq(*c, q);
  return destroy_cq_unlocked(*c, q);
}

// A CQ keeps the size it was made with (the engine's rings do not move).
ROCE_VERBS_EXPORT int ibv_resize_cq(ibv_cq* cq, int) { return to_cq(cq) ? EOPNOTSUPP : EINVAL; }

ROCE_VERBS_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  Channel* ch = to_channel(channel);
  if (ch == nullptr || cq == nullptr || cq_context == nullptr) {
    errno = EINVAL;
    return -1;
  }
  for (;;) {
    std::uint64_t v;
    if (::read(ch->fd, &v, sizeof v) != sizeof v) return -1;  // errno from read (EAGAIN on O_NONBLOCK)
    Cq* q = nullptr;
    if (Context* c = to_context(ch->context); c && c->service) {
      q = service_fired_cq(*c, ch);
    } else {
      std::lock_guard l(ch->mutex);
      if (!ch->events.empty()) {
        q = ch->events.front();
        ch->events.pop_front();
      }
    }
    if (q == nullptr) continue;  // its CQ was destroyed before the event was read
    pthread_mutex_lock(&q->mutex);
    ++q->events_read;
    pthread_mutex_unlock(&q->mutex);
    *cq = reinterpret_cast<ibv_cq*>(static_cast<ibv_cq_ex*>(q));
    *cq_context = q->cq_context;
    return 0;
  }
}

ROCE_VERBS_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned nevents) {
  Cq* q = to_cq(cq);
  if (q == nullptr) q = ours<Cq>(reinterpret_cast<ibv_cq_ex*>(cq), Magic::CqClosing);  // ibv_destroy_cq waits for this
  if (q == nullptr) return;
  pthread_mutex_lock(&q->mutex);
  q->comp_events_completed += nevents;
  pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->mutex);
}
