// A completion queue: a fixed ring of ibv_wc sized at creation. A full ring is an overrun:
// the completion is kept out, counted, and the CQ reports the error on the next poll,
// as a hardware CQ raises IBV_EVENT_CQ_ERR.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace roce::rdma {

class CompletionQueue {
 public:
  explicit CompletionQueue(std::uint32_t depth) : ring_(depth) {}

  // Returns false on overrun.
  bool push(const ibv_wc& wc) noexcept {
    if (count_ == ring_.size()) {
      ++overruns_;
      return false;
    }
    ring_[(head_ + count_) % ring_.size()] = wc;
    ++count_;
    return true;
  }

  // Like ibv_poll_cq: number of completions written, or -1 once the CQ has overrun.
  int poll(int max, ibv_wc* out) noexcept {
    if (overruns_) return -1;
    int n = 0;
    while (n < max && count_ > 0) {
      out[n++] = ring_[head_];
      head_ = (head_ + 1) % ring_.size();
      --count_;
    }
    return n;
  }

  std::uint32_t depth() const { return static_cast<std::uint32_t>(ring_.size()); }
  std::uint32_t size() const { return count_; }
  std::uint64_t overruns() const { return overruns_; }

 private:
  std::vector<ibv_wc> ring_;
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
  std::uint64_t overruns_ = 0;
};

}  // namespace roce::rdma
