// The responder's reorder buffer for selective repeat (docs/loss.md, part 2): requests that
// arrive ahead of the expected PSN, within the window, are copied whole into the slot of their
// PSN, with the Packet parsed from them, and taken out again, in PSN order, once the hole
// before them is filled. The responder's
// logic then sees every request in order, exactly once. Slots are allocated when the QP enters
// RTR with selective repeat on; nothing is allocated per packet.
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
#include <span>
#include <vector>

#include "protocol/packet.hpp"
#include "protocol/psn.hpp"
#include "protocol/sack.hpp"

namespace roce::rdma {

class ReorderBuffer {
 public:
  // `window` PSNs after the expected one (at most proto::kSackSpan), frames up to `slot_bytes`;
  // `inflight_cap`: the packets a requester of the same tuning keeps in its network (its
  // in-flight caps), which a window larger than it leaves room beyond for holes.
  void start(std::uint32_t window, std::uint32_t slot_bytes, std::uint32_t inflight_cap = UINT32_MAX) {
    window_ = std::bit_floor(std::min(window, proto::kSackSpan));  // a power of two: PSN mod window survives the 2^24 wrap
    ack_span_ = std::max<std::uint32_t>(1, std::min(window_, inflight_cap) / 2);
    slot_bytes_ = slot_bytes;
    bytes_.assign(std::size_t{window_} * slot_bytes_, std::byte{});
    psn_.assign(window_, 0);
    length_.assign(window_, 0);
    placed_.assign(window_, nullptr);
    opcode_.assign(window_, 0);
    packets_.assign(window_, proto::Packet{});
    occupied_ = {};
    held_ = 0;
  }
  bool enabled() const { return window_ != 0; }
  std::uint32_t window() const { return window_; }
  // PSNs the responder may leave unacknowledged: half of what the requester can have in flight
  // (the window, or its in-flight cap when smaller), so that a second ACK is always coming.
  std::uint32_t ack_span() const { return ack_span_; }
  std::uint32_t held() const { return held_; }

  // Whether `psn` (ahead of `epsn`) fits the window: 1 <= psn - epsn <= window.
  bool in_window(std::uint32_t psn, std::uint32_t epsn) const {
    const std::int32_t d = proto::psn_diff(psn, epsn);
    return d >= 1 && d <= static_cast<std::int32_t>(window_);
  }
  bool holds(std::uint32_t psn) const {
    const std::size_t s = slot(psn);
    return window_ != 0 && length_[s] != 0 && psn_[s] == psn;
  }
  // Where a frame of `length` bytes for `psn` (in the window, not held) is to be copied before
  // put_whole; nullptr when it is longer than a slot.
  std::byte* slot_for(std::uint32_t psn, std::size_t length) {
    if (length == 0 || length > slot_bytes_) return nullptr;
    return bytes_.data() + slot(psn) * slot_bytes_;
  }
  // Keeps `pkt` for `psn`, whose frame (`length` bytes from `frame`, the buffer it was parsed
  // from) the caller copied to slot_for(psn): its payload now points into the slot, so its turn
  // runs it as parsed, without a second parse.
  void put_whole(std::uint32_t psn, const proto::Packet& pkt, const std::byte* frame, std::uint32_t length) {
    const std::size_t s = slot(psn);
    std::byte* copy = bytes_.data() + s * slot_bytes_;
    if (length_[s] != 0) --held_;  // a stale PSN the window has passed
    packets_[s] = pkt;
    packets_[s].payload = {copy + (pkt.payload.data() - frame), pkt.payload.size()};
    packets_[s].icrc_status = proto::IcrcStatus::Ok;  // only a packet known good is held
    opcode_[s] = pkt.bth.opcode;
    psn_[s] = psn;
    length_[s] = length;
    placed_[s] = nullptr;
    mark(s);
    ++held_;
  }
  // Keeps the headers of `pkt` for `psn` (in the window, not held), whose payload was written
  // to `placed_at` already.
  void put_placed(std::uint32_t psn, const proto::Packet& pkt, std::byte* placed_at) {
    const std::size_t s = slot(psn);
    if (length_[s] != 0) --held_;
    packets_[s] = pkt;
    packets_[s].payload = {};  // the frame it pointed into is gone
    packets_[s].icrc_status = proto::IcrcStatus::Ok;  // only a packet known good is held
    opcode_[s] = pkt.bth.opcode;
    psn_[s] = psn;
    length_[s] = 1;  // held
    placed_[s] = placed_at;
    mark(s);
    ++held_;
  }
  // The BTH opcode of the held `psn`.
  std::uint8_t opcode(std::uint32_t psn) const { return opcode_[slot(psn)]; }
  // Where the payload of the held `psn` was placed (nullptr: the frame is held whole).
  std::byte* placed_at(std::uint32_t psn) const { return placed_[slot(psn)]; }
  // The held `psn` as parsed (a placed one's payload span is empty).
  const proto::Packet& packet(std::uint32_t psn) const { return packets_[slot(psn)]; }
  // The frame held for `psn`; valid until release(psn).
  std::span<const std::byte> frame(std::uint32_t psn) const {
    const std::size_t s = slot(psn);
    return {bytes_.data() + s * slot_bytes_, length_[s]};
  }
  void release(std::uint32_t psn) {
    const std::size_t s = slot(psn);
    if (length_[s] == 0 || psn_[s] != psn) return;
    length_[s] = 0;
    occupied_[s / 64] &= ~(std::uint64_t{1} << (s % 64));
    --held_;
  }
  void clear() {
    std::fill(length_.begin(), length_.end(), 0u);
    occupied_ = {};
    held_ = 0;
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
  void mark(std::size_t s) { occupied_[s / 64] |= std::uint64_t{1} << (s % 64); }

  std::uint32_t window_ = 0;
  std::uint32_t ack_span_ = 1;
  std::uint32_t slot_bytes_ = 0;
  std::vector<std::byte> bytes_;
  std::vector<std::uint32_t> psn_;
  std::vector<std::uint32_t> length_;
  std::vector<std::byte*> placed_;
  std::vector<std::uint8_t> opcode_;
  std::vector<proto::Packet> packets_;
  std::array<std::uint64_t, proto::kSackWords> occupied_{};  // bit s: slot s holds a packet (window <= kSackSpan)
  std::uint32_t held_ = 0;
};

}  // namespace roce::rdma
