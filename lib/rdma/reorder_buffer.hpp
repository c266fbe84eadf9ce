// The responder's reorder buffer for selective repeat (docs/loss.md, part 2): requests that
// arrive ahead of the expected PSN, within the window, are copied whole into the slot of their
// PSN and taken out again, in PSN order, once the hole before them is filled. The responder's
// logic then sees every request in order, exactly once. Slots are allocated when the QP enters
// RTR with selective repeat on; nothing is allocated per packet.
//
// A WRITE MIDDLE whose place is known when it arrives (IRN's placement, responder_reorder.cpp)
// is written to memory at once and only its parsed headers are kept here: its slot holds the
// Packet (payload span cleared) and where its payload went, not the frame.
#pragma once

#include <algorithm>
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
  // `window` PSNs after the expected one (at most proto::kSackSpan), frames up to `slot_bytes`.
  void start(std::uint32_t window, std::uint32_t slot_bytes) {
    window_ = std::bit_floor(std::min(window, proto::kSackSpan));  // a power of two: PSN mod window survives the 2^24 wrap
    slot_bytes_ = slot_bytes;
    bytes_.assign(std::size_t{window_} * slot_bytes_, std::byte{});
    psn_.assign(window_, 0);
    length_.assign(window_, 0);
    placed_.assign(window_, nullptr);
    opcode_.assign(window_, 0);
    packets_.assign(window_, proto::Packet{});
    held_ = 0;
  }
  bool enabled() const { return window_ != 0; }
  std::uint32_t window() const { return window_; }
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
  // Copies `frame` (BTH opcode `opcode`) for `psn` (in the window, not held, no longer than a
  // slot).
  bool put(std::uint32_t psn, std::span<const std::byte> frame, std::uint8_t opcode) {
    if (frame.empty() || frame.size() > slot_bytes_) return false;
    const std::size_t s = slot(psn);
    if (length_[s] != 0) --held_;  // a stale PSN the window has passed
    std::memcpy(bytes_.data() + s * slot_bytes_, frame.data(), frame.size());
    opcode_[s] = opcode;
    psn_[s] = psn;
    length_[s] = static_cast<std::uint32_t>(frame.size());
    placed_[s] = nullptr;
    ++held_;
    return true;
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
    ++held_;
  }
  // The BTH opcode of the held `psn`.
  std::uint8_t opcode(std::uint32_t psn) const { return opcode_[slot(psn)]; }
  // Where the payload of the held `psn` was placed (nullptr: the frame is held whole).
  std::byte* placed_at(std::uint32_t psn) const { return placed_[slot(psn)]; }
  const proto::Packet& placed_packet(std::uint32_t psn) const { return packets_[slot(psn)]; }
  // The frame held for `psn`; valid until release(psn).
  std::span<const std::byte> frame(std::uint32_t psn) const {
    const std::size_t s = slot(psn);
    return {bytes_.data() + s * slot_bytes_, length_[s]};
  }
  void release(std::uint32_t psn) {
    const std::size_t s = slot(psn);
    if (length_[s] == 0 || psn_[s] != psn) return;
    length_[s] = 0;
    --held_;
  }
  void clear() {
    std::fill(length_.begin(), length_.end(), 0u);
    held_ = 0;
  }

 private:
  std::size_t slot(std::uint32_t psn) const { return window_ ? psn % window_ : 0; }

  std::uint32_t window_ = 0;
  std::uint32_t slot_bytes_ = 0;
  std::vector<std::byte> bytes_;
  std::vector<std::uint32_t> psn_;
  std::vector<std::uint32_t> length_;
  std::vector<std::byte*> placed_;
  std::vector<std::uint8_t> opcode_;
  std::vector<proto::Packet> packets_;
  std::uint32_t held_ = 0;
};

}  // namespace roce::rdma
