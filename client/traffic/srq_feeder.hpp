// Keeps one shared receive queue stocked for every QP that takes from it (ibv_srq_pingpong's
// server side: one SRQ for all its QPs). The queue is filled to `depth`, and the limit
// (ibv_modify_srq IBV_SRQ_LIMIT) is armed at a low-water mark; refilling waits for the limit
// event, which fires once per arming when a message leaves fewer than the mark posted, so the
// receives go up in batches rather than one per message. The event is re-armed after each refill.
// Runs on the worker that owns the SRQ and its QPs (no locking: one thread).
#pragma once

#include <cstdint>

#include "client/traffic/drivers.hpp"

namespace roce::client {

class SrqFeeder {
 public:
  // `low_water` 0: a quarter of `depth` (at least 1).
  SrqFeeder(rdma::SharedReceiveQueue* srq, LocalBuffer landing, std::uint32_t depth, std::uint32_t low_water = 0);

  // Fills the queue and arms the limit (before any QP on it leaves INIT).
  Status start(rdma::Engine& e);
  // Refills and re-arms when the limit event came. A refused post or re-arm (the queue holds
  // `depth`, so a bug) is kept: error().
  void poll(rdma::Engine& e);
  const Status& error() const { return error_; }

  rdma::SharedReceiveQueue* srq() const { return srq_; }
  std::uint32_t low_water() const { return low_water_; }
  std::uint64_t limit_events() const { return limit_events_; }
  std::uint64_t posted_total() const { return posted_total_; }

 private:
  Status refill_and_arm(rdma::Engine& e);

  rdma::SharedReceiveQueue* srq_;
  LocalBuffer landing_;
  std::uint32_t depth_;
  std::uint32_t low_water_;
  std::uint64_t limit_events_ = 0;
  std::uint64_t posted_total_ = 0;
  Status error_;
};

}  // namespace roce::client
