// The FLUSH extended transport header's fields (IBA annex A19; Linux rxe_hdr.h): bits 3..0 the
// placement type (bit 0 global visibility, bit 1 persistence), bits 5..4 the selectivity level
// (0 a range, 1 the whole memory region), bits 31..6 reserved.
#pragma once

#include <cstdint>

#include "protocol/headers.hpp"

namespace roce::proto {

inline constexpr std::uint32_t kFethPlacementMask = 0x0000000F;
inline constexpr std::uint32_t kFethSelectivityMask = 0x00000030;
inline constexpr unsigned kFethSelectivityShift = 4;

constexpr std::uint8_t feth_placement(const Feth& f) { return static_cast<std::uint8_t>(f.bits.get() & kFethPlacementMask); }
constexpr std::uint8_t feth_selectivity(const Feth& f) {
  return static_cast<std::uint8_t>((f.bits.get() & kFethSelectivityMask) >> kFethSelectivityShift);
}
constexpr std::uint32_t feth_reserved(const Feth& f) { return f.bits.get() & ~(kFethPlacementMask | kFethSelectivityMask); }
constexpr Feth make_feth(std::uint8_t placement, std::uint8_t selectivity) {
  return Feth{Be32::of((placement & kFethPlacementMask) | ((std::uint32_t{selectivity} << kFethSelectivityShift) & kFethSelectivityMask))};
}

}  // namespace roce::proto
