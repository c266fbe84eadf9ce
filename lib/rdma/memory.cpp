#include "lib/rdma/memory.hpp"

#include "lib/rdma/verbs_ext.hpp"

namespace roce::rdma {
namespace {

constexpr int kRemoteNeedsLocalWrite = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_RELAXED_ORDERING |
                                 IBV_ACCESS_MW_BIND | kAccessFlushGlobal | kAccessFlushPersistent;

}  // namespace

MrTable::MrTable(std::size_t capacity) : slots_(capacity) {}

Result<const MemoryRegion*> MrTable::register_region(PdHandle pd, void* addr, std::size_t length, int access) {
  return register_region(pd, addr, length, access,
                         (access & IBV_ACCESS_ZERO_BASED) ? 0 : reinterpret_cast<std::uintptr_t>(addr));
}

Result<const MemoryRegion*> MrTable::register_region(PdHandle pd, void* addr, std::size_t length, int access,
                                                     std::uint64_t iova) {
  if (access & ~kSupportedAccess) return make_error(EINVAL, "unsupported access flags " + std::to_string(access));
  // Regions are ordinary host memory, never persistent memory: refused as rxe refuses it for
  // pages that are not pmem, so no FLUSH can claim persistence it does not have.
  if (access & kAccessFlushPersistent)
    return make_error(EINVAL, "IBV_ACCESS_FLUSH_PERSISTENT: this memory is not persistent memory");
  // Same rule as ibv_reg_mr: remote write or atomic access needs local write.
  if ((access & kRemoteNeedsLocalWrite) && !(access & IBV_ACCESS_LOCAL_WRITE))
    return make_error(EINVAL, "IBV_ACCESS_REMOTE_WRITE/ATOMIC require IBV_ACCESS_LOCAL_WRITE");
  if (addr == nullptr && length != 0) return make_error(EINVAL, "null address with non-zero length");
  const auto base = reinterpret_cast<std::uintptr_t>(addr);
  if (length > UINT64_MAX - base) return make_error(EINVAL, "region wraps the address space");
  if (length > UINT64_MAX - iova) return make_error(EINVAL, "iova range wraps the address space");
  if (in_use_ == slots_.size()) {
    refused_full_.fetch_add(1, std::memory_order_relaxed);
    return make_error(ENOMEM, "memory region table full (max_mrs " + std::to_string(slots_.size()) + ")");
  }
  const std::size_t i = take_slot();
  Slot& s = slots_[i];
  s.mr.key = static_cast<std::uint32_t>(i + 1) << 8 | s.generation;  // never 0
  s.mr.window_type = 0;
  s.mr.parent_key = 0;
  s.mr.bound_qpn = 0;
  s.mr.pd = pd;
  s.mr.addr = static_cast<std::byte*>(addr);
  s.mr.iova = iova;
  s.mr.length = length;
  s.mr.access = access;
  s.published_key.store(s.mr.key, std::memory_order_release);
  return &s.mr;
}

std::size_t MrTable::take_slot() {
  std::size_t i = next_hint_;
  while (slots_[i].taken) i = (i + 1) % slots_.size();
  next_hint_ = (i + 1) % slots_.size();
  slots_[i].taken = true;
  ++slots_[i].generation;
  slots_[i].registrations.fetch_add(1, std::memory_order_relaxed);  // published by the key's release store
  ++in_use_;
  return i;
}

MrTable::Slot* MrTable::slot_of(std::uint32_t key) {
  const std::size_t i = (key >> 8) - 1;
  if ((key >> 8) == 0 || i >= slots_.size() || !slots_[i].taken) return nullptr;
  return &slots_[i];
}

Status MrTable::deregister(std::uint32_t key) {
  const std::size_t i = (key >> 8) - 1;
  if ((key >> 8) == 0 || i >= slots_.size() || !slots_[i].taken || slots_[i].mr.key != key ||
      slots_[i].mr.window_type != 0)
    return make_error(EINVAL, "no memory region with key " + std::to_string(key));
  Slot& s = slots_[i];
  s.published_key.store(0, std::memory_order_release);
  s.taken = false;
  // s.mr stays as it was: a worker that found the key just before this store may still read it
  // (the caller waits for every worker before releasing the memory or registering again).
  --in_use_;
  return {};
}

Status MrTable::invalidate(std::uint32_t key, PdHandle pd, std::uint32_t qpn) {
  const std::size_t i = (key >> 8) - 1;
  if ((key >> 8) == 0 || i >= slots_.size() || slots_[i].published_key.load(std::memory_order_acquire) != key)
    return make_error(EINVAL, "no valid memory region or window with key " + std::to_string(key));
  const MemoryRegion& mr = slots_[i].mr;
  if (mr.pd != pd) return make_error(EACCES, "memory region belongs to another protection domain");
  if (mr.window_type == 1) return make_error(EINVAL, "a type 1 memory window cannot be invalidated");
  if (mr.window_type == 2 && qpn != 0 && mr.bound_qpn != qpn)
    return make_error(EACCES, "type 2 memory window " + std::to_string(key) + " is bound to QP " +
                                  std::to_string(mr.bound_qpn) + ", not " + std::to_string(qpn));
  slots_[i].published_key.store(0, std::memory_order_release);
  return {};
}

// check and check_key are this file's only, and once per remote access: inlined into check_remote
// (docs/perf-changes.md section 36).
[[gnu::always_inline]] inline AccessResult MrTable::check_key(const MemoryRegion* mr, PdHandle pd, std::uint32_t qpn,
                                                             int required) const noexcept {
  if (mr == nullptr) return AccessResult::BadKey;
  if (mr->pd != pd) return AccessResult::WrongPd;
  if ((mr->access & required) != required) return AccessResult::NoPermission;
  if (mr->window_type != 0) {
    // A window is only as good as its region: deregistered or invalidated, the window is too.
    if (find(mr->parent_key) == nullptr) return AccessResult::BadKey;
    if (mr->window_type == 2 && mr->bound_qpn != qpn) return AccessResult::WrongPd;
  }
  return AccessResult::Ok;
}

[[gnu::always_inline]] inline AccessResult MrTable::check(std::uint32_t key, PdHandle pd, std::uint32_t qpn,
                                                         std::uint64_t va, std::uint64_t len, int required,
                                                         std::byte** out) const noexcept {
  const MemoryRegion* mr = find(key);
  if (const AccessResult r = check_key(mr, pd, qpn, required); r != AccessResult::Ok) return r;
  if (!range_within(mr->iova, mr->length, va, len)) return AccessResult::OutOfBounds;
  *out = mr->addr + (va - mr->iova);
  return AccessResult::Ok;
}

AccessResult MrTable::check_remote(std::uint32_t rkey, PdHandle pd, std::uint64_t va, std::uint64_t len, int required,
                                   std::byte** out) const noexcept {
  return check(rkey, pd, 0, va, len, required, out);
}

AccessResult MrTable::check_remote(std::uint32_t rkey, PdHandle pd, std::uint32_t qpn, std::uint64_t va,
                                   std::uint64_t len, int required, std::byte** out) const noexcept {
  return check(rkey, pd, qpn, va, len, required, out);
}

const MemoryRegion* MrTable::find_remote(std::uint32_t rkey, PdHandle pd, std::uint32_t qpn, int required) const noexcept {
  const MemoryRegion* mr = find(rkey);
  return check_key(mr, pd, qpn, required) == AccessResult::Ok ? mr : nullptr;
}

AccessResult MrTable::look_up_local(LocalKeyCache& last, std::uint32_t lkey, PdHandle pd) const noexcept {
  // Local SGEs carry the process address, whatever iova the region advertises remotely.
  const MemoryRegion* mr = find(lkey);
  if (mr == nullptr || mr->window_type != 0) return AccessResult::BadKey;  // a window has no lkey
  if (mr->pd != pd) return AccessResult::WrongPd;
  // The count after find's acquire load of the key, as RememberedRegion::remember reads it.
  last = LocalKeyCache{lkey, pd, mr->access, mr->addr, mr->length, registrations(lkey).load(std::memory_order_relaxed)};
  return AccessResult::Ok;
}

std::string to_string(AccessResult r) {
  switch (r) {
    case AccessResult::Ok: return "ok";
    case AccessResult::BadKey: return "bad-key";
    case AccessResult::WrongPd: return "wrong-pd";
    case AccessResult::NoPermission: return "no-permission";
    case AccessResult::OutOfBounds: return "out-of-bounds";
    case AccessResult::Misaligned: return "misaligned";
  }
  return "unknown";
}

}  // namespace roce::rdma
