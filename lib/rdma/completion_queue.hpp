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
  explicit CompletionQueue(std::uint32_t depth) : ring_(depth), depth_(depth) {}

  // The entry the next completion goes in, zeroed, for the caller to fill in place (a CQE is
  // then written once, not built on the stack and copied); nullptr on overrun (counted).
  // The ring wraps by a compare: `% size` was a 64-bit division per push and per poll, two on
  // every round trip of a WRITE (docs/perf-changes.md section 46).
  // An empty ring starts again at its first entry: a CQ polled empty between completions (queue
  // depth 1: every one) writes and reads the same line each time instead of walking its whole
  // ring (a 48-byte entry a completion: a new line, out of cache, every 4 of them; section 83).
  // No entry is in the ring then, so where the next one goes is the ring's own business.
  ibv_wc* emplace() noexcept {
    if (count_ == depth_) [[unlikely]] {
      ++overruns_;
      return nullptr;
    }
    if (count_ == 0) head_ = 0;
    std::uint32_t at = head_ + count_;
    if (at >= depth_) at -= depth_;
    ++count_;
    ibv_wc* wc = &ring_[at];
    *wc = ibv_wc{};
    return wc;
  }

  // Returns false on overrun.
  bool push(const ibv_wc& wc) noexcept {
    ibv_wc* slot = emplace();
    if (slot == nullptr) return false;
    *slot = wc;
    return true;
  }

  // Like ibv_poll_cq: number of completions written, or -1 once the CQ has overrun.
  int poll(int max, ibv_wc* out) noexcept {
    if (overruns_) return -1;
    int n = 0;
    while (n < max && count_ > 0) {
      out[n++] = ring_[head_];
      if (++head_ == depth_) head_ = 0;
      --count_;
    }
    return n;
  }

  std::uint32_t depth() const { return depth_; }
  std::uint32_t size() const { return count_; }
  std::uint64_t overruns() const { return overruns_; }

 private:
  std::vector<ibv_wc> ring_;
  std::uint32_t depth_;
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
  std::uint64_t overruns_ = 0;
};

}  // namespace roce::rdma
