#include "client/traffic/srq_feeder.hpp"

#include <algorithm>
#include <string>

namespace roce::client {

SrqFeeder::SrqFeeder(rdma::SharedReceiveQueue* srq, LocalBuffer landing, std::uint32_t depth, std::uint32_t low_water)
    : srq_(srq), landing_(landing), depth_(depth), low_water_(low_water ? low_water : std::max<std::uint32_t>(depth / 4, 1)) {}

Status SrqFeeder::start(rdma::Engine& e) {
  if (low_water_ > depth_) return make_error(EINVAL, "SRQ low-water mark " + std::to_string(low_water_) + " above its depth");
  return refill_and_arm(e);
}

void SrqFeeder::poll(rdma::Engine& e) {
  if (!srq_->take_limit_event()) return;
  ++limit_events_;
  if (Status s = refill_and_arm(e); !s && error_) error_ = s;
}

Status SrqFeeder::refill_and_arm(rdma::Engine& e) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(landing_.ptr), static_cast<std::uint32_t>(landing_.length), landing_.lkey};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  while (srq_->posted() < depth_) {
    ibv_recv_wr* bad = nullptr;
    if (const int rc = e.post_srq_recv(srq_, &wr, &bad); rc != 0)
      return make_error(rc, "ibv_post_srq_recv refused a receive with " + std::to_string(srq_->posted()) + " posted");
    ++posted_total_;
  }
  // Armed only now that the queue is full: the next event means it fell below the mark again.
  ibv_srq_attr attr{};
  attr.srq_limit = low_water_;
  return e.modify_srq(srq_, attr, IBV_SRQ_LIMIT);
}

}  // namespace roce::client
