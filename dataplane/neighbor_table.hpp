// The link-layer address table behind ARP and neighbour discovery: a small fixed set of
// (address, MAC) entries written by the lcore that handles ARP/NDP and read by any thread.
// Entries are published with a sequence counter, so a reader sees the old or the new MAC, never
// a torn one, and takes no lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "protocol/headers.hpp"

namespace roce::dp {

class NeighborTable {
 public:
  static constexpr std::size_t kEntries = 64;

  // An IPv4 or IPv6 address as two words (IPv4 in `lo`, `hi` 0).
  struct Key {
    std::uint64_t hi = 0, lo = 0;
  };

  // Learns or updates `key`'s MAC; when full, overwrites entries in turn.
  void learn(Key key, const proto::MacAddr& mac) noexcept;
  std::optional<proto::MacAddr> lookup(Key key) const noexcept;

 private:
  struct Entry {
    std::atomic<std::uint32_t> seq{0};  // odd while being written
    std::atomic<std::uint64_t> hi{0}, lo{0};
    std::atomic<std::uint64_t> mac{0};  // the MAC's 48 bits | a used bit; 0 = empty
  };
  std::array<Entry, kEntries> entries_{};
  std::atomic<std::uint32_t> next_victim_{0};
};

}  // namespace roce::dp
