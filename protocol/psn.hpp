// 24-bit packet sequence numbers. Comparison is a signed 24-bit difference: a PSN up to 2^23-1
// ahead counts as "after", anything else as "before" (the IBA window, rxe's psn_compare).
#pragma once

#include <cstdint>

namespace roce::proto {

inline constexpr std::uint32_t kPsnMask = 0xFFFFFF;
inline constexpr std::uint32_t kPsnModulus = 1u << 24;

constexpr std::uint32_t psn_add(std::uint32_t psn, std::int64_t delta) noexcept {
  return static_cast<std::uint32_t>((static_cast<std::int64_t>(psn) + delta) & kPsnMask);
}
constexpr std::uint32_t psn_next(std::uint32_t psn) noexcept { return (psn + 1) & kPsnMask; }

// Signed distance a - b in [-2^23, 2^23).
constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(((a - b) & kPsnMask) << 8) >> 8;
}
constexpr bool psn_before(std::uint32_t a, std::uint32_t b) noexcept { return psn_diff(a, b) < 0; }
constexpr bool psn_after(std::uint32_t a, std::uint32_t b) noexcept { return psn_diff(a, b) > 0; }
constexpr bool psn_at_or_after(std::uint32_t a, std::uint32_t b) noexcept { return psn_diff(a, b) >= 0; }

static_assert(psn_diff(0, 0xFFFFFF) == 1);
static_assert(psn_diff(0xFFFFFF, 0) == -1);
static_assert(psn_diff(0x800000, 0) == -0x800000);
static_assert(psn_diff(0x7FFFFF, 0) == 0x7FFFFF);
static_assert(psn_add(0xFFFFFE, 3) == 1);
static_assert(psn_add(1, -2) == 0xFFFFFF);

}  // namespace roce::proto
