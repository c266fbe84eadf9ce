// The responder's reorder buffer for selective repeat (docs/loss.md, part 2): requests that
// arrive ahead of the expected PSN, within the window, are copied whole into the slot of their
// PSN, with the Packet parsed from them, and taken out again, in PSN order, once the hole
// before them is filled. The responder's logic then sees every request in order, exactly once.
//
// Slots live in chunks of the engine's ReorderPool (reorder_pool.hpp), taken when a request
// first needs a slot in one (claim) and given back once nothing in it is held: a QP holds
// memory only while a hole is open, and only for the part of its window behind the hole. The
// per-PSN bookkeeping (PSN, length, where a placed payload went, opcode) stays per QP. Nothing
// is allocated per packet: an empty pool drops the request (the caller counts it).
//
// A WRITE MIDDLE whose place is known when it arrives (IRN's placement, responder_reorder.cpp)
// is written to memory at once and only its parsed headers are kept here: its slot holds the
// Packet (payload span cleared) and where its payload went, not the frame.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

#include "lib/rdma/reorder_pool.hpp"
#include "protocol/packet.hpp"
#include "protocol/psn.hpp"
#include "protocol/sack.hpp"

namespace roce::rdma {

// Held Packets are made in chunk memory and overwritten in place.
static_assert(std::is_trivially_copyable_v<proto::Packet> && std::is_trivially_destructible_v<proto::Packet>);
static_assert(alignof(proto::Packet) <= ReorderPool::kAlign);

class ReorderBuffer {
 public:
  ReorderBuffer() = default;
  ~ReorderBuffer() { stop(); }
  ReorderBuffer(const ReorderBuffer&) = delete;
  ReorderBuffer& operator=(const ReorderBuffer&) = delete;

  // The engine's pool the slots come from, set once before start (without one, start makes a
  // pool of one window for this buffer alone).
  void use_pool(ReorderPool* pool) { pool_ = pool; }

  // `window` PSNs after the expected one (at most proto::kSackSpan), frames up to `slot_bytes`;
  // `inflight_cap`: the packets a requester of the same tuning keeps in its network (its
  // in-flight caps), which a window larger than it leaves room beyond for holes. Takes no slot:
  // the pool grows by the window's chunks (control path), the buffer takes them as holes open.
  void start(std::uint32_t window, std::uint32_t slot_bytes, std::uint32_t inflight_cap = UINT32_MAX) {
    stop();
    window_ = std::bit_floor(std::min(window, proto::kSackSpan));  // a power of two: PSN mod window survives the 2^24 wrap
    ack_span_ = std::max<std::uint32_t>(1, std::min(window_, inflight_cap) / 2);
    if (window_ == 0) return;
    slot_bytes_ = slot_bytes;
    stride_ = reorder_slot::stride(slot_bytes_);
    // Slots to a chunk: a power of two (a chunk's slots are one run of bits of occupied_), at
    // most 64 (one word) and the window. 0: a frame larger than the pool's largest, never held.
    const std::size_t fit = ReorderPool::kChunkBytes / stride_;
    const std::uint32_t per = fit == 0 ? 0 : std::min<std::uint32_t>({static_cast<std::uint32_t>(std::bit_floor(fit)), 64u, window_});
    chunk_shift_ = per == 0 ? 0 : static_cast<std::uint32_t>(std::countr_zero(per));
    chunks_.assign(per == 0 ? 0 : window_ / per, nullptr);
    if (pool_ == nullptr || own_) {  // sized for this window
      own_ = std::make_unique<ReorderPool>(chunks_.size() * ReorderPool::kChunkBytes);
      pool_ = own_.get();
    }
    if (per != 0) pool_->join(static_cast<std::uint32_t>(chunks_.size()));
    joined_ = per != 0;
    psn_.assign(window_, 0);
    length_.assign(window_, 0);
    placed_.assign(window_, nullptr);
    opcode_.assign(window_, 0);
    occupied_ = {};
    held_ = 0;
  }
  // Drops whatever is held, gives its chunks back and leaves the pool (the QP entered ERR or
  // RESET, or is destroyed).
  void stop() {
    for (std::byte*& c : chunks_)
      if (c != nullptr) {
        pool_->give(c);
        c = nullptr;
      }
    if (joined_) pool_->leave(static_cast<std::uint32_t>(chunks_.size()));
    joined_ = false;
    chunks_.clear();
    window_ = 0;
    occupied_ = {};
    held_ = 0;
  }
  bool enabled() const { return window_ != 0; }
  std::uint32_t window() const { return window_; }
  // PSNs the responder may leave unacknowledged: half of what the requester can have in flight
  // (the window, or its in-flight cap when smaller), so that a second ACK is always coming.
  std::uint32_t ack_span() const { return ack_span_; }
  std::uint32_t held() const { return held_; }
  // Chunks of the pool this buffer holds now (for tests and the docs' memory figures).
  std::size_t chunks_held() const {
    return static_cast<std::size_t>(std::count_if(chunks_.begin(), chunks_.end(), [](const std::byte* c) { return c != nullptr; }));
  }

  // Whether `psn` (ahead of `epsn`) fits the window: 1 <= psn - epsn <= window.
  bool in_window(std::uint32_t psn, std::uint32_t epsn) const {
    const std::int32_t d = proto::psn_diff(psn, epsn);
    return d >= 1 && d <= static_cast<std::int32_t>(window_);
  }
  bool holds(std::uint32_t psn) const {
    const std::size_t s = slot(psn);
    return window_ != 0 && length_[s] != 0 && psn_[s] == psn;
  }
  // Whether a frame of `length` bytes fits a slot.
  bool fits(std::size_t length) const { return length != 0 && length <= slot_bytes_; }
  // Makes the slot of `psn` (in the window) usable: takes its chunk from the pool if this buffer
  // has not got it. false: the pool is empty (the request cannot be held).
  bool claim(std::uint32_t psn) {
    if (chunks_.empty()) return false;
    std::byte*& c = chunks_[slot(psn) >> chunk_shift_];
    if (c == nullptr) c = pool_->take();
    return c != nullptr;
  }
  // A claimed slot that was not filled after all (the request turned out corrupted, or too
  // large): its chunk goes back if nothing in it is held.
  void unclaim(std::uint32_t psn) { give_back_if_empty(slot(psn)); }
  // Where a frame for the claimed slot of `psn` is to be copied before put_whole.
  std::byte* frame_room(std::uint32_t psn) { return frame_at(slot(psn)); }
  // Keeps `pkt` for `psn`, whose frame (`length` bytes from `frame`, the buffer it was parsed
  // from) the caller copied to frame_room(psn): its payload now points into the slot, so its
  // turn runs it as parsed, without a second parse.
  void put_whole(std::uint32_t psn, const proto::Packet& pkt, const std::byte* frame, std::uint32_t length) {
    const std::size_t s = slot(psn);
    proto::Packet& p = keep(s, psn, pkt);
    p.payload = {frame_at(s) + (pkt.payload.data() - frame), pkt.payload.size()};
    length_[s] = length;
    placed_[s] = nullptr;
  }
  // Keeps the headers of `pkt` for `psn` (in the window, claimed, not held), whose payload was
  // written to `placed_at` already.
  void put_placed(std::uint32_t psn, const proto::Packet& pkt, std::byte* placed_at) {
    const std::size_t s = slot(psn);
    proto::Packet& p = keep(s, psn, pkt);
    p.payload = {};  // the frame it pointed into is gone
    length_[s] = 1;  // held
    placed_[s] = placed_at;
  }
  // The BTH opcode of the held `psn`.
  std::uint8_t opcode(std::uint32_t psn) const { return opcode_[slot(psn)]; }
  // Where the payload of the held `psn` was placed (nullptr: the frame is held whole).
  std::byte* placed_at(std::uint32_t psn) const { return placed_[slot(psn)]; }
  // The held `psn` as parsed (a placed one's payload span is empty); valid until release(psn).
  const proto::Packet& packet(std::uint32_t psn) const { return *packet_at(slot(psn)); }
  // The frame held for `psn`; valid until release(psn).
  std::span<const std::byte> frame(std::uint32_t psn) const {
    const std::size_t s = slot(psn);
    return {frame_at(s), length_[s]};
  }
  void release(std::uint32_t psn) {
    const std::size_t s = slot(psn);
    if (length_[s] == 0 || psn_[s] != psn) return;
    length_[s] = 0;
    occupied_[s / 64] &= ~(std::uint64_t{1} << (s % 64));
    --held_;
    give_back_if_empty(s);
  }
  // The SACK bitmap after `missing` (bit i: PSN missing + 1 + i arrived), with `epsn` the next
  // PSN expected: every PSN before it ran, the rest arrived if held. One pass over the held
  // slots, not one look-up per PSN of the span.
  proto::SackBitmap arrived_after(std::uint32_t missing, std::uint32_t epsn) const {
    proto::SackBitmap b;
    const std::int32_t ran = proto::psn_diff(epsn, missing) - 1;  // PSNs after `missing` already run
    for (std::size_t w = 0; w < proto::kSackWords && ran > 0; ++w) {
      const std::int32_t n = ran - static_cast<std::int32_t>(64 * w);
      b.words[w] = n >= 64 ? ~std::uint64_t{0} : n > 0 ? (std::uint64_t{1} << n) - 1 : 0;
    }
    for (std::size_t w = 0; w < occupied_.size(); ++w)
      for (std::uint64_t bits = occupied_[w]; bits != 0; bits &= bits - 1) {
        const std::size_t s = 64 * w + static_cast<std::size_t>(std::countr_zero(bits));
        const std::int32_t d = proto::psn_diff(psn_[s], missing) - 1;
        if (d >= 0) b.set(static_cast<std::uint32_t>(d));  // set() ignores what lies past the span
      }
    return b;
  }

 private:
  std::size_t slot(std::uint32_t psn) const { return window_ ? psn % window_ : 0; }
  std::byte* slot_at(std::size_t s) const {
    return chunks_[s >> chunk_shift_] + (s & ((std::size_t{1} << chunk_shift_) - 1)) * stride_;
  }
  proto::Packet* packet_at(std::size_t s) const { return std::launder(reinterpret_cast<proto::Packet*>(slot_at(s))); }
  std::byte* frame_at(std::size_t s) const { return slot_at(s) + reorder_slot::kFrameOffset; }
  // The bookkeeping of put_whole and put_placed: slot `s` (claimed) now holds `psn`, parsed as `pkt`.
  proto::Packet& keep(std::size_t s, std::uint32_t psn, const proto::Packet& pkt) {
    if (length_[s] != 0) --held_;  // a stale PSN the window has passed
    proto::Packet* p = ::new (slot_at(s)) proto::Packet(pkt);
    p->icrc_status = proto::IcrcStatus::Ok;  // only a packet known good is held
    opcode_[s] = pkt.bth.opcode;
    psn_[s] = psn;
    occupied_[s / 64] |= std::uint64_t{1} << (s % 64);
    ++held_;
    return *p;
  }
  // The chunk of slot `s` goes back to the pool when none of its slots is held.
  void give_back_if_empty(std::size_t s) {
    const std::size_t c = s >> chunk_shift_;
    if (c >= chunks_.size() || chunks_[c] == nullptr) return;
    const std::size_t per = std::size_t{1} << chunk_shift_;
    const std::size_t first = c * per;  // the chunk's slots: one run of bits in one word (per <= 64)
    const std::uint64_t mask = per == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << per) - 1) << (first % 64);
    if ((occupied_[first / 64] & mask) != 0) return;
    pool_->give(chunks_[c]);
    chunks_[c] = nullptr;
  }

  std::uint32_t window_ = 0;
  std::uint32_t ack_span_ = 1;
  std::uint32_t slot_bytes_ = 0;
  std::uint32_t chunk_shift_ = 0;  // log2 of the slots to a chunk
  std::size_t stride_ = 0;          // bytes of one slot in a chunk
  ReorderPool* pool_ = nullptr;
  std::unique_ptr<ReorderPool> own_;  // without the engine's pool
  bool joined_ = false;
  std::vector<std::byte*> chunks_;  // chunk i: slots i << chunk_shift_ .. ; nullptr while none is needed
  std::vector<std::uint32_t> psn_;
  std::vector<std::uint32_t> length_;
  std::vector<std::byte*> placed_;
  std::vector<std::uint8_t> opcode_;
  std::array<std::uint64_t, proto::kSackWords> occupied_{};  // bit s: slot s holds a packet (window <= kSackSpan)
  std::uint32_t held_ = 0;
};

}  // namespace roce::rdma
