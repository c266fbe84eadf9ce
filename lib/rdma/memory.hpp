// Protection domains and memory regions. A region registers caller memory under one key used
// both as lkey and rkey: the low 8 bits are a generation so a stale key from a deregistered
// region never matches the slot's next occupant.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/status.hpp"

namespace roce::rdma {

using PdHandle = std::uint32_t;

struct MemoryRegion {
  std::uint32_t key = 0;   // lkey == rkey
  PdHandle pd = 0;
  std::byte* addr = nullptr;
  std::uint64_t iova = 0;  // address the peer uses (the virtual address, as ibv_reg_mr)
  std::uint64_t length = 0;
  int access = 0;          // IBV_ACCESS_* flags
  // A memory window (memory_window.hpp) lives in the same key space: window_type is 1 or 2,
  // addr/iova/length/access are what its bind gave it, and every access goes through the
  // region it is bound to (parent_key), which must still be valid. A type 2 window serves only
  // the QP it was bound through (bound_qpn).
  std::uint8_t window_type = 0;  // 0: a memory region
  std::uint32_t parent_key = 0;
  std::uint32_t bound_qpn = 0;

  std::uint32_t lkey() const { return key; }
  std::uint32_t rkey() const { return key; }
};

enum class AccessResult : std::uint8_t { Ok, BadKey, WrongPd, NoPermission, OutOfBounds, Misaligned };

// Range test used wherever a peer-supplied address meets a registered range.
constexpr bool range_within(std::uint64_t base, std::uint64_t size, std::uint64_t va, std::uint64_t len) {
  return va >= base && len <= size && va - base <= size - len;
}

// The region the last local check found under its lkey for a PD (QueuePair::post_send keeps one
// per QP): an SGE under the same lkey is checked against it for access and bounds without the
// key's look-up. Good for the call that filled it; a later call first asks
// MrTable::still_holds, so a region deregistered, invalidated or registered again in between
// is looked up again. pd 0 (no PD has it) holds nothing.
struct LocalKeyCache {
  std::uint32_t lkey = 0;
  PdHandle pd = 0;
  int access = 0;
  std::byte* addr = nullptr;
  std::uint64_t length = 0;
  std::uint64_t registration = 0;  // the slot's count of registrations when the key was looked up
};

class MrTable {
 public:
  explicit MrTable(std::size_t capacity = 4096);

  // Protection domains are numbered here, not per engine: engines sharing this table must
  // never hand out the same PD.
  PdHandle alloc_pd() { return next_pd_.fetch_add(1, std::memory_order_relaxed) + 1; }
  bool pd_exists(PdHandle pd) const { return pd != 0 && pd <= next_pd_.load(std::memory_order_relaxed); }

  Result<const MemoryRegion*> register_region(PdHandle pd, void* addr, std::size_t length, int access);
  // The same with the address the peer uses chosen by the caller (ibv_reg_mr_iova2).
  Result<const MemoryRegion*> register_region(PdHandle pd, void* addr, std::size_t length, int access,
                                              std::uint64_t iova);
  Status deregister(std::uint32_t key);
  // Invalidation (SEND_WITH_INVALIDATE from the peer on QP `qpn`, or LOCAL_INV): the key stops
  // working, the slot stays taken until deregistration or deallocation. A type 1 window cannot
  // be invalidated; a type 2 window only through the QP it was bound to.
  Status invalidate(std::uint32_t key, PdHandle pd, std::uint32_t qpn = 0);

  // Memory windows (memory_window.cpp). alloc_window gives an unbound window its key (its low
  // 8 bits the tag, as for regions); bind_window binds it to [addr, addr + length) of the
  // region `mr_key` (addr in the region's iova space) under the key `new_key`, which must name
  // the same window; a type 2 window must not be bound (invalidate it first). Length 0 unbinds
  // a type 1 window.
  Result<std::uint32_t> alloc_window(PdHandle pd, int type);
  Status dealloc_window(std::uint32_t key);
  Status bind_window(std::uint32_t mw_key, std::uint32_t new_key, PdHandle qp_pd, std::uint32_t qpn,
                     std::uint32_t mr_key, std::uint64_t addr, std::uint64_t length, int access);

  // In the header: every R_Key check and write-destination prefetch of the receive path starts here.
  const MemoryRegion* find(std::uint32_t key) const noexcept {
    const std::size_t idx = key >> 8;
    if (idx == 0 || idx > slots_.size()) return nullptr;
    const Slot& s = slots_[idx - 1];
    return s.published_key.load(std::memory_order_acquire) == key ? &s.mr : nullptr;
  }

  // The word find() tests for `key`, which find() has found valid: RememberedRegion (below)
  // tests it again with one load.
  const std::atomic<std::uint32_t>& published_key(std::uint32_t key) const noexcept {
    return slots_[(key >> 8) - 1].published_key;
  }
  // How many registrations (regions and windows) the slot of `key` has had: a key's 8-bit
  // generation comes back after 256 of them, this count does not (RememberedRegion::renew).
  const std::atomic<std::uint64_t>& registrations(std::uint32_t key) const noexcept {
    return slots_[(key >> 8) - 1].registrations;
  }

  // Checks a remote access [va, va+len) and translates it. The bounds test cannot overflow:
  // a range whose end wraps past 2^64 is out of bounds, not a write somewhere else.
  AccessResult check_remote(std::uint32_t rkey, PdHandle pd, std::uint64_t va, std::uint64_t len, int required,
                            std::byte** out) const noexcept;
  // The same for a request that came in on QP `qpn` (a type 2 window serves only its own QP).
  AccessResult check_remote(std::uint32_t rkey, PdHandle pd, std::uint32_t qpn, std::uint64_t va, std::uint64_t len,
                            int required, std::byte** out) const noexcept;
  // The region or window an R_Key names, if valid for `pd`, `qpn` and `required` access (bounds
  // not checked): FLUSH of a whole region.
  const MemoryRegion* find_remote(std::uint32_t rkey, PdHandle pd, std::uint32_t qpn, int required) const noexcept;
  // Checks a local SGE [addr, addr+len) under an lkey.
  AccessResult check_local(std::uint32_t lkey, PdHandle pd, std::uint64_t addr, std::uint64_t len, int required,
                           std::byte** out) const noexcept {
    LocalKeyCache none;
    return check_local(none, lkey, pd, addr, len, required, out);
  }
  // The same, the key's region taken from `last` when it holds that lkey and PD (and put there
  // when it is looked up). Inline: post_send's every SGE.
  AccessResult check_local(LocalKeyCache& last, std::uint32_t lkey, PdHandle pd, std::uint64_t addr, std::uint64_t len,
                           int required, std::byte** out) const noexcept {
    if (lkey != last.lkey || pd != last.pd || pd == 0) {
      if (const AccessResult r = look_up_local(last, lkey, pd); r != AccessResult::Ok) return r;
    }
    if ((last.access & required) != required) return AccessResult::NoPermission;
    const auto base = reinterpret_cast<std::uintptr_t>(last.addr);
    if (!range_within(base, last.length, addr, len)) return AccessResult::OutOfBounds;
    *out = last.addr + (addr - base);
    return AccessResult::Ok;
  }

  // Whether `c`, filled by an earlier check_local, still holds what its lkey names: the key is
  // still published and its slot has had no registration since (RememberedRegion::renew's
  // test; a key's 8-bit generation comes back after 256 registrations, the count does not).
  // Inline: once per post_send, where the look-up it saves was a call of about 40 instructions.
  bool still_holds(const LocalKeyCache& c) const noexcept {
    if (c.pd == 0) return false;
    const Slot& s = slots_[(c.lkey >> 8) - 1];  // a key once found is in the table's range
    return s.published_key.load(std::memory_order_acquire) == c.lkey &&
           s.registrations.load(std::memory_order_relaxed) == c.registration;
  }

  std::size_t size() const { return in_use_; }
  std::size_t capacity() const { return slots_.size(); }
  // Registrations refused because the table was full (the MR limit).
  std::uint64_t refused_full() const { return refused_full_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    MemoryRegion mr;
    std::atomic<std::uint32_t> published_key{0};  // 0 = free or invalidated
    std::atomic<std::uint64_t> registrations{0};  // raised before each new occupant's key is published
    std::uint8_t generation = 0;
    bool taken = false;
  };
  AccessResult check(std::uint32_t key, PdHandle pd, std::uint32_t qpn, std::uint64_t va, std::uint64_t len,
                     int required, std::byte** out) const noexcept;
  AccessResult check_key(const MemoryRegion* mr, PdHandle pd, std::uint32_t qpn, int required) const noexcept;
  // check_local's look-up: the region under `lkey` for `pd` into `last`, or why not.
  AccessResult look_up_local(LocalKeyCache& last, std::uint32_t lkey, PdHandle pd) const noexcept;
  Slot* slot_of(std::uint32_t key);
  std::size_t take_slot();

  std::vector<Slot> slots_;
  std::size_t in_use_ = 0;
  std::size_t next_hint_ = 0;
  std::atomic<PdHandle> next_pd_{0};
  std::atomic<std::uint64_t> refused_full_{0};
};

// The region the last R_Key named, for a caller that meets the same key frame after frame (a
// responder's run of WRITEs, responder_run.cpp; the worker's destination prefetch,
// dataplane/write_prefetch.hpp): the key is looked up once, then tested again per use with one
// acquire load of the word MrTable::find tests (published_key), so a deregistration, an
// invalidation or a new registration in the slot (another generation) since is seen as find
// would see it and nothing is taken from the old region. What a region's key names (address,
// iova, length; domain and access, which the caller checked when it remembered the key) does
// not change while the key is published, and its memory is not released or registered again
// before every worker has finished its iteration (MrTable::deregister). Only regions are
// remembered: a window's range changes with each bind under the same key. What acts on the
// memory forgets it at least once per worker iteration (a responder at each run's start): after
// 256 registrations in one slot a key comes back naming other memory, and only deregister's
// wait keeps that from happening within an iteration. A prefetch, which only reads ahead, may
// keep it longer; so may what acts on it, if it asks renew() at least once per iteration, which
// also tells a registration since by the slot's count of registrations.
class RememberedRegion {
 public:
  // Whether `rkey` is the remembered key and still names its region.
  bool holds(std::uint32_t rkey) const noexcept {
    return rkey == rkey_ && published_->load(std::memory_order_acquire) == rkey;
  }
  // Where [va, va + len) is in the region (holds() said yes), or nullptr out of its bounds.
  std::byte* translate(std::uint64_t va, std::uint64_t len) const noexcept {
    return range_within(iova_, length_, va, len) ? addr_ + (va - iova_) : nullptr;
  }
  // Where byte `va` is (holds() said yes), or nullptr out of its bounds.
  std::byte* address_of(std::uint64_t va) const noexcept {
    const std::uint64_t at = va - iova_;  // wraps below iova
    return at < length_ ? addr_ + at : nullptr;
  }
  // `mr`, which MrTable::find gave for `rkey`, remembered if it is a region (a window is not,
  // and then what was remembered stays).
  void remember(const MrTable& mrs, std::uint32_t rkey, const MemoryRegion& mr) noexcept {
    if (mr.window_type != 0) return;
    rkey_ = rkey;
    published_ = &mrs.published_key(rkey);
    registrations_ = &mrs.registrations(rkey);
    registration_ = registrations_->load(std::memory_order_relaxed);  // after find's acquire load of the key
    addr_ = mr.addr;
    iova_ = mr.iova;
    length_ = mr.length;
  }
  void forget() noexcept { *this = RememberedRegion{}; }
  // Kept for another worker iteration if its key is still published and its slot had no
  // registration since it was remembered (then the key names the same region, however many
  // iterations ago that was); otherwise forgotten. The count is read after the key: a key
  // published again by a later registration makes that registration's count visible.
  void renew() noexcept {
    if (published_->load(std::memory_order_acquire) != rkey_ ||
        registrations_->load(std::memory_order_relaxed) != registration_)
      forget();
  }

 private:
  // Nothing remembered: key 0, which no region has (MrTable::find), and a length of 0.
  static inline const std::atomic<std::uint32_t> kNone{0};
  static inline const std::atomic<std::uint64_t> kNoRegistrations{0};
  std::uint32_t rkey_ = 0;
  const std::atomic<std::uint32_t>* published_ = &kNone;
  const std::atomic<std::uint64_t>* registrations_ = &kNoRegistrations;
  std::uint64_t registration_ = 0;
  std::byte* addr_ = nullptr;
  std::uint64_t iova_ = 0;
  std::uint64_t length_ = 0;
};

std::string to_string(AccessResult r);

}  // namespace roce::rdma
