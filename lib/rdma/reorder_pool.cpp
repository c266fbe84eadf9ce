#include "lib/rdma/reorder_pool.hpp"

#include <algorithm>
#include <new>

namespace roce::rdma {

ReorderPool::~ReorderPool() {
  for (std::byte* c : all_) ::operator delete(c, std::align_val_t{kAlign});
}

void ReorderPool::grow_to(std::size_t target) {
  target = std::min(target, max_chunks_);
  while (all_.size() < target) {
    auto* c = static_cast<std::byte*>(::operator new(kChunkBytes, std::align_val_t{kAlign}));
    all_.push_back(c);
    free_.push_back(c);
  }
}

void ReorderPool::join(std::uint32_t chunks) {
  joined_ += chunks;
  grow_to(static_cast<std::size_t>(joined_));
}

void ReorderPool::leave(std::uint32_t chunks) {
  joined_ -= std::min<std::uint64_t>(joined_, chunks);
  // Only free chunks go: one a buffer still holds comes back to the pool later, and stays.
  while (all_.size() > joined_ && !free_.empty()) {
    std::byte* c = free_.back();
    free_.pop_back();
    all_.erase(std::find(all_.begin(), all_.end(), c));
    ::operator delete(c, std::align_val_t{kAlign});
  }
}

}  // namespace roce::rdma
