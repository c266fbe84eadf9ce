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
    // A compare instead of a modulo (a 64-bit division) per frame, here and in pop(): on the
    // one-thread rig the emulator's work is part of every round trip (docs/loss.md, "Session 22 (loop22)").
    std::size_t at = head_ + count_;
    if (at >= slots_.size()) at -= slots_.size();
    slots_[at] = Slot{h, release};
    ++count_;
    return true;
  }
  // kNever when empty.
  Nanos next_release() const { return count_ ? slots_[head_].release : kNever; }
  Handle pop() {
    const Handle h = slots_[head_].handle;
    if (++head_ == slots_.size()) head_ = 0;
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
