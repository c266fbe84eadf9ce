// What ibv_alloc_mw gives back: a memory window's handle. The ibv_mw comes first so the
// pointer a BIND_MW work request carries (wr.bind_mw.mw) converts back; its rkey is the
// window's current key (MrTable keeps the window itself).
#pragma once

#include <infiniband/verbs.h>

#include "lib/rdma/memory.hpp"

namespace roce::rdma {

struct MemoryWindow {
  ibv_mw base{};
  PdHandle pd = 0;
};

// ibv_inc_rkey: the next key of the same window (its low 8 bits, the tag, go up by one).
constexpr std::uint32_t next_window_key(std::uint32_t key) {
  return (key & 0xFFFFFF00u) | ((key + 1) & 0xFFu);
}

}  // namespace roce::rdma
