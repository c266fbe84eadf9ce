#include "dataplane/neighbor_table.hpp"

#include <cstring>

namespace roce::dp {

namespace {

// An entry's MAC word: the 48 bits and kUsed, so that a port with the all-zero MAC (net_ring's
// are) is still a neighbour, and 0 marks an empty entry.
constexpr std::uint64_t kUsed = std::uint64_t{1} << 63;

std::uint64_t mac_word(const proto::MacAddr& m) {
  std::uint64_t w = 0;
  std::memcpy(&w, m.data(), 6);
  return w | kUsed;
}

}  // namespace

void NeighborTable::learn(Key key, const proto::MacAddr& mac) noexcept {
  const std::uint64_t m = mac_word(mac);
  Entry* slot = nullptr;
  for (Entry& e : entries_)
    if (e.mac.load(std::memory_order_relaxed) != 0 && e.hi.load(std::memory_order_relaxed) == key.hi &&
        e.lo.load(std::memory_order_relaxed) == key.lo)
      slot = &e;
  if (slot == nullptr) {
    for (Entry& e : entries_)
      if (e.mac.load(std::memory_order_relaxed) == 0) {
        slot = &e;
        break;
      }
  }
  if (slot == nullptr) slot = &entries_[next_victim_.fetch_add(1, std::memory_order_relaxed) % kEntries];
  const std::uint32_t s = slot->seq.load(std::memory_order_relaxed);
  slot->seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot->hi.store(key.hi, std::memory_order_relaxed);
  slot->lo.store(key.lo, std::memory_order_relaxed);
  slot->mac.store(m, std::memory_order_relaxed);
  slot->seq.store(s + 2, std::memory_order_release);
}

std::optional<proto::MacAddr> NeighborTable::lookup(Key key) const noexcept {
  for (const Entry& e : entries_) {
    for (;;) {
      const std::uint32_t s1 = e.seq.load(std::memory_order_acquire);
      if (s1 & 1) continue;
      const std::uint64_t hi = e.hi.load(std::memory_order_relaxed);
      const std::uint64_t lo = e.lo.load(std::memory_order_relaxed);
      const std::uint64_t m = e.mac.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (e.seq.load(std::memory_order_relaxed) != s1) continue;
      if (m != 0 && hi == key.hi && lo == key.lo) {
        proto::MacAddr mac;
        std::memcpy(mac.data(), &m, 6);
        return mac;
      }
      break;
    }
  }
  return std::nullopt;
}

}  // namespace roce::dp
