// P_Key matching (IBA 10.9.3): the low 15 bits name the partition, the top bit says full (1)
// or limited (0) membership. Two keys match when they name the same partition and at least
// one side is a full member; a partition number of 0 is never valid.
#pragma once

#include <cstdint>

namespace roce::proto {

inline constexpr std::uint16_t kPkeyFullMember = 0x8000;
inline constexpr std::uint16_t kPkeyPartitionMask = 0x7FFF;

constexpr bool pkey_matches(std::uint16_t packet, std::uint16_t ours) {
  const std::uint16_t partition = packet & kPkeyPartitionMask;
  return partition != 0 && partition == (ours & kPkeyPartitionMask) && ((packet | ours) & kPkeyFullMember) != 0;
}

static_assert(pkey_matches(0xFFFF, 0xFFFF));
static_assert(pkey_matches(0x7FFF, 0xFFFF));   // limited member talking to a full member
static_assert(!pkey_matches(0x7FFF, 0x7FFF));  // two limited members may not talk
static_assert(!pkey_matches(0x1234, 0xFFFF));
static_assert(!pkey_matches(0x8000, 0x8000));  // partition 0 is invalid

}  // namespace roce::proto
