// A shared receive queue (ibv_create_srq): one queue of receives that many QPs of a PD take
// from, in posting order, whichever QP a message arrives on. A QP takes a receive when a
// message starts and holds it (a copy, with its scatter list) until the message ends, so
// another QP's message cannot take it half-filled. When none is posted the QP answers as with
// an empty receive queue (RNR NAK on RC). With a limit armed (ibv_modify_srq IBV_SRQ_LIMIT), the
// receive that leaves fewer than `limit` posted raises IBV_EVENT_SRQ_LIMIT_REACHED once and
// disarms the limit, as rxe does.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

#include "lib/rdma/memory.hpp"
#include "lib/rdma/work_request.hpp"
#include "lib/status.hpp"

namespace roce::rdma {

class SharedReceiveQueue {
 public:
  SharedReceiveQueue(PdHandle pd, const ibv_srq_attr& attr, MrTable* mrs);

  PdHandle pd() const { return pd_; }
  std::uint32_t max_sge() const { return max_sge_; }
  // ibv_post_srq_recv: same return conventions. Each scatter entry's lkey is checked now; a
  // receive that failed completes with IBV_WC_LOC_PROT_ERR when a message takes it.
  int post_recv(const ibv_recv_wr* wr, ibv_recv_wr** bad);
  // ibv_modify_srq: IBV_SRQ_LIMIT arms (or with 0 disarms) the limit; IBV_SRQ_MAX_WR (resizing)
  // is refused, as on mlx4.
  Status modify(const ibv_srq_attr& attr, int mask);
  void query(ibv_srq_attr* attr) const;

  bool empty() const { return q_.empty(); }
  std::uint64_t posted() const { return q_.size(); }
  const RecvWqe& head() const { return q_.at(q_.head()); }
  const LocalSegment* segments(const RecvWqe& r) const { return segs_.data() + r.seg_begin; }
  // Removes the head; with `out`, copies it there and its scatter list to `out_segs`
  // (max_sge() entries), re-based to 0.
  void take(RecvWqe* out, LocalSegment* out_segs);
  // The limit event raised since the last call (the engine turns it into an async event).
  bool take_limit_event() {
    const bool e = limit_event_;
    limit_event_ = false;
    return e;
  }

  std::uint32_t attached_qps = 0;  // kept by the engine: an SRQ in use cannot be destroyed

 private:
  PdHandle pd_;
  MrTable* mrs_;
  std::uint32_t max_sge_;
  std::uint32_t limit_;
  bool limit_event_ = false;
  WorkQueue<RecvWqe> q_;
  std::vector<LocalSegment> segs_;
};

}  // namespace roce::rdma
