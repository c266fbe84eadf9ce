// The engine's pool of reorder buffer memory for selective repeat (docs/loss.md, part 2,
// "Session 13"): chunks of a few slots, each slot room for one held request (its parsed Packet
// and its whole frame). A QP's reorder buffer takes a chunk when an out-of-order request first
// needs a slot in it and gives it back once nothing in it is held, so memory follows the holes
// that are open, not the QPs that are connected.
//
// Chunks are allocated only on the control path: the pool grows when a selective repeat QP
// enters RTR (join: by the chunks of its whole window, until the engine's limit) and gives free
// chunks back when one leaves. take() and give() never allocate: an empty pool makes take()
// return nullptr, and the reorder buffer then drops the request as go-back-N would (counted,
// reorder_pool_exhausted); the requester sends it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/packet.hpp"

namespace roce::rdma {

namespace reorder_slot {
inline constexpr std::size_t kAlign = 64;
constexpr std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
// Where a slot's frame starts: after the Packet as parsed.
inline constexpr std::size_t kFrameOffset = round_up(sizeof(proto::Packet));
// A slot: the Packet, then the frame (headers around one path MTU).
constexpr std::size_t stride(std::uint32_t frame_bytes) { return kFrameOffset + round_up(frame_bytes); }
}  // namespace reorder_slot

class ReorderPool {
 public:
  static constexpr std::size_t kAlign = reorder_slot::kAlign;
  // The largest frame a slot holds with kChunkSlots to a chunk: a 4096-byte path MTU and 128
  // bytes of headers (QueuePair::max_frame_bytes). Smaller MTUs fit more slots in a chunk.
  static constexpr std::uint32_t kLargestFrame = 4096 + 128;
  static constexpr std::size_t kChunkSlots = 8;
  static constexpr std::size_t kChunkBytes = kChunkSlots * reorder_slot::stride(kLargestFrame);

  // At most `max_bytes` of chunks (rounded down to whole chunks; 0 chunks: every hole drops).
  explicit ReorderPool(std::size_t max_bytes) : max_chunks_(max_bytes / kChunkBytes) { free_.reserve(max_chunks_); }
  ~ReorderPool();
  ReorderPool(const ReorderPool&) = delete;
  ReorderPool& operator=(const ReorderPool&) = delete;

  // Control path. A reorder buffer of `chunks` chunks starts (grows the pool toward the sum of
  // the windows joined, up to the limit) or stops (frees free chunks above that sum).
  void join(std::uint32_t chunks);
  void leave(std::uint32_t chunks);

  // Packet path: a free chunk (kChunkBytes, aligned to kAlign), or nullptr when none is left.
  std::byte* take() {
    if (free_.empty()) return nullptr;
    std::byte* c = free_.back();
    free_.pop_back();
    return c;
  }
  // A chunk take() gave (room for it is reserved: no allocation).
  void give(std::byte* chunk) { free_.push_back(chunk); }

  std::size_t chunks() const { return all_.size(); }
  std::size_t free_chunks() const { return free_.size(); }
  std::size_t max_chunks() const { return max_chunks_; }
  std::size_t bytes() const { return all_.size() * kChunkBytes; }

 private:
  void grow_to(std::size_t target);

  std::size_t max_chunks_ = 0;
  std::uint64_t joined_ = 0;        // chunks of every started reorder buffer's window
  std::vector<std::byte*> all_;
  std::vector<std::byte*> free_;  // capacity max_chunks_, so give() never allocates
};

}  // namespace roce::rdma
