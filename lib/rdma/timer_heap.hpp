// Deadlines of many owners (QPs) in an indexed binary min-heap: arm, re-arm and cancel in
// O(log n), earliest deadline in O(1), exact to the nanosecond. Capacity is fixed at set-up.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/time.hpp"

namespace roce::rdma {

class TimerHeap {
 public:
  explicit TimerHeap(std::uint32_t owners = 0) : pos_(owners, kAbsent) { heap_.reserve(owners); }

  void resize(std::uint32_t owners) {
    pos_.assign(owners, kAbsent);
    heap_.clear();
    heap_.reserve(owners);
  }

  // Sets owner's deadline; kNever removes it. Inline, and small: the engine sets its QP's
  // deadline after every turn and refresh, and what is left of most calls is a test or two (an
  // owner without a deadline staying without one, an unchanged deadline); the heap's work is out
  // of line. One read of the owner's position (docs/perf-changes.md section 65).
  void set(std::uint32_t owner, Nanos deadline) {
    const std::uint32_t i = pos_[owner];
    if (i == kAbsent) {
      if (deadline != kNever) insert(owner, deadline);
      return;
    }
    if (deadline == kNever) {
      remove_at(owner, i);
      return;
    }
    if (deadline != heap_[i].deadline) move(i, deadline);  // the engine re-sets a QP's deadline after every turn; most stay
  }

  void remove(std::uint32_t owner) {
    const std::uint32_t i = pos_[owner];
    if (i != kAbsent) remove_at(owner, i);
  }

  bool empty() const { return heap_.empty(); }
  Nanos earliest() const { return heap_.empty() ? kNever : heap_[0].deadline; }
  std::uint32_t earliest_owner() const { return heap_[0].owner; }
  Nanos deadline_of(std::uint32_t owner) const { return pos_[owner] == kAbsent ? kNever : heap_[pos_[owner]].deadline; }

 private:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;
  struct Entry {
    Nanos deadline;
    std::uint32_t owner;
  };
  [[gnu::noinline]] void insert(std::uint32_t owner, Nanos deadline) {
    pos_[owner] = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back({deadline, owner});
    up(pos_[owner]);
  }
  [[gnu::noinline]] void move(std::uint32_t i, Nanos deadline) {
    const Nanos old = heap_[i].deadline;
    heap_[i].deadline = deadline;
    if (deadline < old) up(i); else down(i);
  }
  // Owner's entry at i out: the last entry takes its place and is moved up or down from there.
  // The last entry itself (a QP alone in the heap) only goes: its swap with itself was a no-op.
  // Inline for the last entry (a QP alone in the heap: every ACK at queue depth 1), which only
  // goes; the heap's work for any other out of line.
  void remove_at(std::uint32_t owner, std::uint32_t i) {
    if (i + 1 == heap_.size()) {
      heap_.pop_back();
      pos_[owner] = kAbsent;
    } else {
      remove_inner(owner, i);
    }
  }
  [[gnu::noinline]] void remove_inner(std::uint32_t owner, std::uint32_t i) {
    swap(i, static_cast<std::uint32_t>(heap_.size() - 1));
    heap_.pop_back();
    pos_[owner] = kAbsent;
    up(i);
    down(i);
  }
  void swap(std::uint32_t a, std::uint32_t b) {
    std::swap(heap_[a], heap_[b]);
    pos_[heap_[a].owner] = a;
    pos_[heap_[b].owner] = b;
  }
  void up(std::uint32_t i) {
    while (i > 0) {
      const std::uint32_t p = (i - 1) / 2;
      if (heap_[p].deadline <= heap_[i].deadline) break;
      swap(i, p);
      i = p;
    }
  }
  void down(std::uint32_t i) {
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t m = i;
      const std::uint32_t l = 2 * i + 1, r = l + 1;
      if (l < n && heap_[l].deadline < heap_[m].deadline) m = l;
      if (r < n && heap_[r].deadline < heap_[m].deadline) m = r;
      if (m == i) break;
      swap(i, m);
      i = m;
    }
  }

  std::vector<Entry> heap_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace roce::rdma
