#include "lib/rdma/shared_receive_queue.hpp"

#include <algorithm>
#include <string>

namespace roce::rdma {
namespace {

constexpr std::uint32_t kMaxMessage = 1u << 31;

}  // namespace

SharedReceiveQueue::SharedReceiveQueue(PdHandle pd, const ibv_srq_attr& attr, MrTable* mrs)
    : pd_(pd),
      mrs_(mrs),
      max_sge_(std::max<std::uint32_t>(attr.max_sge, 1)),
      limit_(attr.srq_limit),
      q_(attr.max_wr),
      segs_(std::size_t{q_.slots()} * std::max<std::uint32_t>(attr.max_sge, 1)) {}  // per slot

int SharedReceiveQueue::post_recv(const ibv_recv_wr* wr, ibv_recv_wr** bad) {
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (q_.full()) err = ENOMEM;
    else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > max_sge_) err = EINVAL;
    if (err) {
      if (bad) *bad = const_cast<ibv_recv_wr*>(wr);
      return err;
    }
    const std::uint64_t index = q_.tail();
    RecvWqe& r = q_.push();
    r = RecvWqe{};
    r.wr_id = wr->wr_id;
    r.seg_begin = q_.slot_of(index) * max_sge_;
    r.num_seg = static_cast<std::uint32_t>(wr->num_sge);
    LocalSegment* segs = segs_.data() + r.seg_begin;
    std::uint64_t total = 0;
    for (int i = 0; i < wr->num_sge; ++i) {
      const ibv_sge& g = wr->sg_list[i];
      std::byte* p = nullptr;
      if (g.length && mrs_->check_local(g.lkey, pd_, g.addr, g.length, IBV_ACCESS_LOCAL_WRITE, &p) != AccessResult::Ok)
        r.local_error = true;
      segs[i] = LocalSegment{p, g.length};
      total += g.length;
    }
    r.length = static_cast<std::uint32_t>(std::min<std::uint64_t>(total, kMaxMessage));
  }
  return 0;
}

Status SharedReceiveQueue::modify(const ibv_srq_attr& attr, int mask) {
  if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return make_error(EINVAL, "unknown ibv_srq_attr_mask bits");
  if (mask & IBV_SRQ_MAX_WR) return make_error(EINVAL, "resizing a shared receive queue is not supported");
  if ((mask & IBV_SRQ_LIMIT) && attr.srq_limit > q_.depth())
    return make_error(EINVAL, "srq_limit " + std::to_string(attr.srq_limit) + " above max_wr " + std::to_string(q_.depth()));
  if (mask & IBV_SRQ_LIMIT) {
    limit_ = attr.srq_limit;
    limit_event_ = false;
  }
  return {};
}

void SharedReceiveQueue::query(ibv_srq_attr* attr) const {
  attr->max_wr = q_.depth();
  attr->max_sge = max_sge_;
  attr->srq_limit = limit_;
}

void SharedReceiveQueue::take(RecvWqe* out, LocalSegment* out_segs) {
  if (out) {
    *out = head();
    std::copy_n(segments(*out), out->num_seg, out_segs);
    out->seg_begin = 0;
  }
  q_.pop();
  if (limit_ != 0 && q_.size() < limit_) {
    limit_event_ = true;
    limit_ = 0;  // one event per arming
  }
}

}  // namespace roce::rdma
