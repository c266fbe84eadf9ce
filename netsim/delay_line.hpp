// A fixed-capacity FIFO of frames with the time each may leave. Entries are pushed with
// non-decreasing release times, so the head is always the next one due and no heap is needed.
// Storage is allocated once; a push into a full line fails and the caller counts the drop.
#pragma once

#include <cstddef>
#include <vector>

#include "lib/time.hpp"

namespace roce::netsim {

template <typename Handle>
class DelayLine {
 public:
  explicit DelayLine(std::size_t capacity) : slots_(capacity) {}

  bool push(Handle h, Nanos release) {
    if (count_ == slots_.size()) return false;
    slots_[(head_ + count_) % slots_.size()] = Slot{h, release};
    ++count_;
    return true;
  }
  // kNever when empty.
  Nanos next_release() const { return count_ ? slots_[head_].release : kNever; }
  Handle pop() {
    const Handle h = slots_[head_].handle;
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return h;
  }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  struct Slot {
    Handle handle{};
    Nanos release = 0;
  };
  std::vector<Slot> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace roce::netsim
