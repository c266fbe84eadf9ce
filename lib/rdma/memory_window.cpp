// Memory windows: type 1 (bound with ibv_bind_mw, valid on every QP of the PD, never
// invalidated) and type 2 (bound by an IBV_WR_BIND_MW work request to one QP, invalidated by
// LOCAL_INV or the peer's SEND_WITH_INVALIDATE). They share the region table's key space so a
// responder resolves any R_Key with one lookup (MrTable::check).
#include <string>

#include "lib/rdma/memory.hpp"

namespace roce::rdma {
namespace {

constexpr int kWindowAccess = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                              IBV_ACCESS_ZERO_BASED;

std::string key_text(std::uint32_t key) { return std::to_string(key); }

}  // namespace

Result<std::uint32_t> MrTable::alloc_window(PdHandle pd, int type) {
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
    return make_error(EINVAL, "memory window type " + std::to_string(type) + " (IBV_MW_TYPE_1 or IBV_MW_TYPE_2)");
  if (!pd_exists(pd)) return make_error(EINVAL, "no protection domain " + std::to_string(pd));
  if (in_use_ == slots_.size()) {
    refused_full_.fetch_add(1, std::memory_order_relaxed);
    return make_error(ENOMEM, "memory region table full (max_mrs " + std::to_string(slots_.size()) +
                                  ", windows included)");
  }
  const std::size_t i = take_slot();
  Slot& s = slots_[i];
  s.mr = MemoryRegion{};
  s.mr.key = static_cast<std::uint32_t>(i + 1) << 8 | s.generation;
  s.mr.pd = pd;
  s.mr.window_type = static_cast<std::uint8_t>(type);
  // Unbound: the key exists but grants nothing until a bind publishes it.
  s.published_key.store(0, std::memory_order_release);
  return s.mr.key;
}

Status MrTable::dealloc_window(std::uint32_t key) {
  Slot* s = slot_of(key);
  if (s == nullptr || s->mr.window_type == 0 || (s->mr.key >> 8) != (key >> 8))
    return make_error(EINVAL, "no memory window with key " + key_text(key));
  s->published_key.store(0, std::memory_order_release);
  s->taken = false;
  --in_use_;
  return {};
}

Status MrTable::bind_window(std::uint32_t mw_key, std::uint32_t new_key, PdHandle qp_pd, std::uint32_t qpn,
                            std::uint32_t mr_key, std::uint64_t addr, std::uint64_t length, int access) {
  Slot* s = slot_of(mw_key);
  if (s == nullptr || s->mr.window_type == 0 || (s->mr.key >> 8) != (mw_key >> 8))
    return make_error(EINVAL, "no memory window with key " + key_text(mw_key));
  MemoryRegion& w = s->mr;
  if ((new_key >> 8) != (mw_key >> 8))
    return make_error(EINVAL, "new key " + key_text(new_key) + " does not name window " + key_text(mw_key));
  if (w.pd != qp_pd) return make_error(EINVAL, "the window and the QP are in different protection domains");
  const bool bound = s->published_key.load(std::memory_order_acquire) != 0;
  if (w.window_type == 2 && bound)
    return make_error(EINVAL, "type 2 window " + key_text(w.key) + " is bound: invalidate it before binding again");
  if (access & ~kWindowAccess) return make_error(EINVAL, "unsupported window access flags " + std::to_string(access));
  if (w.window_type == 1 && (access & IBV_ACCESS_ZERO_BASED))
    return make_error(EINVAL, "a type 1 window cannot be zero-based");
  if (length == 0 && w.window_type == 1) {  // unbind
    s->published_key.store(0, std::memory_order_release);
    w.key = new_key;
    return {};
  }
  const MemoryRegion* mr = find(mr_key);
  if (mr == nullptr || mr->window_type != 0) return make_error(EINVAL, "no valid memory region with key " + key_text(mr_key));
  if (mr->pd != w.pd) return make_error(EINVAL, "the region is in another protection domain than the window");
  if (!(mr->access & IBV_ACCESS_MW_BIND)) return make_error(EACCES, "the region was registered without IBV_ACCESS_MW_BIND");
  // As for a region: remote write or atomic through the window needs local write on the region.
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
    return make_error(EACCES, "remote write/atomic access needs IBV_ACCESS_LOCAL_WRITE on the region");
  if (!range_within(mr->iova, mr->length, addr, length))
    return make_error(EINVAL, "window range lies outside the region");
  // Unpublish while the fields change: a worker that races sees no key, not a torn window.
  s->published_key.store(0, std::memory_order_release);
  w.key = new_key;
  w.addr = mr->addr + (addr - mr->iova);
  w.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : addr;
  w.length = length;
  w.access = access;
  w.parent_key = mr->key;
  w.bound_qpn = w.window_type == 2 ? qpn : 0;
  s->published_key.store(new_key, std::memory_order_release);
  return {};
}

}  // namespace roce::rdma
