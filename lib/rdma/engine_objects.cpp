// The engine's verbs objects beyond QPs, CQs and address handles: memory windows (and shared
// receive queues).
#include <algorithm>
#include <string>

#include "lib/rdma/engine.hpp"

namespace roce::rdma {

// The QPs go first: their reorder buffers give their chunks back to the pool. Windows live in
// the shared region table: the ones still allocated give their slots back.
Engine::~Engine() {
  qps_.clear();
  for (const auto& mw : mws_) (void)mrs_.dealloc_window(mw->base.rkey);
}

Result<MemoryWindow*> Engine::alloc_mw(PdHandle pd, ibv_mw_type type) {
  auto key = mrs_.alloc_window(pd, type);
  if (!key.ok()) return key.error();
  auto mw = std::make_unique<MemoryWindow>();
  mw->base.rkey = *key;
  mw->base.type = type;
  mw->pd = pd;
  mws_.push_back(std::move(mw));
  return mws_.back().get();
}

Status Engine::dealloc_mw(MemoryWindow* mw) {
  const auto it = std::find_if(mws_.begin(), mws_.end(), [mw](const auto& p) { return p.get() == mw; });
  if (it == mws_.end()) return make_error(EINVAL, "unknown memory window");
  if (Status s = mrs_.dealloc_window(mw->base.rkey); !s) return s;
  mws_.erase(it);
  return {};
}

int Engine::bind_mw(QueuePair* qp, MemoryWindow* mw, const ibv_mw_bind& bind) {
  if (qp == nullptr || mw == nullptr || mw->base.type != IBV_MW_TYPE_1) return EINVAL;
  ibv_send_wr wr{};
  wr.wr_id = bind.wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = bind.send_flags;
  wr.bind_mw.mw = &mw->base;
  wr.bind_mw.rkey = next_window_key(mw->base.rkey);
  wr.bind_mw.bind_info = bind.bind_info;
  ibv_send_wr* bad = nullptr;
  const int rc = post_send(qp, &wr, &bad);
  if (rc == 0) mw->base.rkey = wr.bind_mw.rkey;
  return rc;
}

Result<SharedReceiveQueue*> Engine::create_srq(PdHandle pd, const ibv_srq_attr& attr) {
  if (!mrs_.pd_exists(pd)) return make_error(EINVAL, "unknown protection domain");
  if (attr.max_wr == 0 || attr.max_wr > cfg_.max_qp_wr || attr.max_sge > cfg_.max_sge) {
    hit(EngineLimit::QueueCaps);
    return make_error(EINVAL, "SRQ max_wr must be 1.." + std::to_string(cfg_.max_qp_wr) + " and max_sge at most " +
                                  std::to_string(cfg_.max_sge));
  }
  if (attr.srq_limit > attr.max_wr) return make_error(EINVAL, "srq_limit above max_wr");
  srqs_.push_back(std::make_unique<SharedReceiveQueue>(pd, attr, &mrs_));
  return srqs_.back().get();
}

bool Engine::owns_srq(const SharedReceiveQueue* srq) const {
  return std::any_of(srqs_.begin(), srqs_.end(), [srq](const auto& p) { return p.get() == srq; });
}

Status Engine::modify_srq(SharedReceiveQueue* srq, const ibv_srq_attr& attr, int mask) {
  if (!owns_srq(srq)) return make_error(EINVAL, "unknown shared receive queue");
  return srq->modify(attr, mask);
}

Status Engine::destroy_srq(SharedReceiveQueue* srq) {
  const auto it = std::find_if(srqs_.begin(), srqs_.end(), [srq](const auto& p) { return p.get() == srq; });
  if (it == srqs_.end()) return make_error(EINVAL, "unknown shared receive queue");
  if (srq->attached_qps != 0)
    return make_error(EBUSY, "shared receive queue still used by " + std::to_string(srq->attached_qps) + " QPs");
  srqs_.erase(it);
  return {};
}

bool Engine::get_async_event(AsyncEvent* ev) {
  for (const auto& s : srqs_) {
    if (s->take_limit_event()) {
      *ev = AsyncEvent{IBV_EVENT_SRQ_LIMIT_REACHED, s.get(), nullptr};
      return true;
    }
  }
  for (const auto& q : qps_) {
    if (q && q->take_last_wqe_reached()) {
      *ev = AsyncEvent{IBV_EVENT_QP_LAST_WQE_REACHED, nullptr, q.get()};
      return true;
    }
  }
  return false;
}

}  // namespace roce::rdma
