// Path MTU: the IBA enumeration (1..5) and the payload bytes each stands for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace roce::proto {

enum class PathMtu : std::uint8_t { Mtu256 = 1, Mtu512 = 2, Mtu1024 = 3, Mtu2048 = 4, Mtu4096 = 5 };

constexpr std::uint32_t mtu_bytes(PathMtu m) noexcept { return 128u << static_cast<unsigned>(m); }

constexpr std::optional<PathMtu> mtu_from_enum(unsigned v) noexcept {
  if (v < 1 || v > 5) return std::nullopt;
  return static_cast<PathMtu>(v);
}

constexpr std::optional<PathMtu> mtu_from_bytes(std::uint32_t bytes) noexcept {
  for (unsigned v = 1; v <= 5; ++v)
    if (mtu_bytes(static_cast<PathMtu>(v)) == bytes) return static_cast<PathMtu>(v);
  return std::nullopt;
}

// Largest path MTU that fits an Ethernet MTU, keeping Linux's 96 bytes of headroom
// (GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4).
constexpr PathMtu mtu_for_ethernet(std::uint32_t eth_mtu) noexcept {
  for (unsigned v = 5; v > 1; --v)
    if (mtu_bytes(static_cast<PathMtu>(v)) + 96 <= eth_mtu) return static_cast<PathMtu>(v);
  return PathMtu::Mtu256;
}

static_assert(mtu_bytes(PathMtu::Mtu1024) == 1024 && mtu_bytes(PathMtu::Mtu4096) == 4096);
static_assert(mtu_for_ethernet(1500) == PathMtu::Mtu1024 && mtu_for_ethernet(4192) == PathMtu::Mtu4096);

std::string to_string(PathMtu m);

}  // namespace roce::proto
