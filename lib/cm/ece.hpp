// Enhanced Connection Establishment (Linux >= 5.9, rdma_set_local_ece / ibv_set_ece): a vendor
// ID and an options word carried in the CM REQ and REP, which rocev2-dp uses to agree on
// selective repeat (docs/loss.md, part 2) with another rocev2-dp endpoint only.
//
// Where they sit (Linux's ibta_vol1_c12.h and cm_format_req/cm_format_rep): the options word is
// the MAD header's attribute modifier; the vendor ID is REQ bytes 5..7, and in the REP its
// high, middle and low bytes are the reserved low bytes of the words at 12 (QPN), 16 (EECN) and
// 20 (starting PSN).
//
// Our vendor ID is above 0xFFFF: drivers put their 16-bit PCI vendor ID there (mlx5 0x15b3), so
// no RNIC reads our options as its own, and rxe (no ECE) and a peer that did not set one answer
// with zero. Options: bit 0 = selective repeat, bits 8..15 = the reorder window in PSNs / 8.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "protocol/bitfield.hpp"
#include "protocol/cm_connect.hpp"

namespace roce::cm {

struct Ece {
  std::uint32_t vendor_id = 0;  // 24 bits
  std::uint32_t options = 0;
  bool operator==(const Ece&) const = default;
};

inline constexpr std::uint32_t kRocev2DpVendorId = 0x524450;  // "RDP"
inline constexpr std::uint32_t kEceSelectiveRepeat = 1;

// What a side willing to hold `window` PSNs out of order offers (REQ) or answers (REP).
constexpr Ece selective_repeat_ece(std::uint32_t window) {
  if (window == 0) return {};
  return {kRocev2DpVendorId, kEceSelectiveRepeat | (std::min<std::uint32_t>(window / 8, 0xFF) << 8)};
}

// The window an ECE offers or accepts: 0 unless it is ours with selective repeat set.
constexpr std::uint32_t selective_repeat_window(const Ece& e) {
  if (e.vendor_id != kRocev2DpVendorId || !(e.options & kEceSelectiveRepeat)) return 0;
  const std::uint32_t w = ((e.options >> 8) & 0xFF) * 8;
  return w < 8 ? 0 : std::bit_floor(w);
}

// Passive side: the REP's ECE for a REQ offering `offered`, given our own window (0: we do
// not do it). Zero (no ECE) unless both want it.
constexpr Ece answer_selective_repeat(const Ece& offered, std::uint32_t ours) {
  const std::uint32_t theirs = selective_repeat_window(offered);
  return theirs && ours ? selective_repeat_ece(std::min(theirs, ours)) : Ece{};
}

// The window both agreed: our offer and the peer's answer (active), or the peer's offer and
// our answer (passive). 0 = go-back-N.
constexpr std::uint32_t agreed_selective_repeat(const Ece& offer, const Ece& answer) {
  return std::min(selective_repeat_window(offer), selective_repeat_window(answer));
}

// The REP's vendor ID bytes (proto::CmRep keeps them inside its reserved bytes).
using RepVendorByte = proto::BitField<std::uint32_t, 0, 8>;
inline std::uint32_t rep_vendor_id(const proto::CmRep& r) {
  return proto::read_field<RepVendorByte>(r.qpn_word) << 16 | proto::read_field<RepVendorByte>(r.eecn_word) << 8 |
         proto::read_field<RepVendorByte>(r.psn_word);
}
inline void set_rep_vendor_id(proto::CmRep& r, std::uint32_t v) {
  proto::write_field<RepVendorByte>(r.qpn_word, (v >> 16) & 0xFF);
  proto::write_field<RepVendorByte>(r.eecn_word, (v >> 8) & 0xFF);
  proto::write_field<RepVendorByte>(r.psn_word, v & 0xFF);
}

}  // namespace roce::cm
