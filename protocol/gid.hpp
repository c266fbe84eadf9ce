// GIDs on RoCEv2 are the port's IP addresses: an IPv6 address as is, an IPv4 address as the
// IPv4-mapped IPv6 address ::ffff:a.b.c.d (IBA A17.4; what rdma_cm puts in REQ paths).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/headers.hpp"

namespace roce::proto {

using Gid = std::array<std::uint8_t, 16>;

inline constexpr std::array<std::uint8_t, 12> kIpv4MappedPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

constexpr Gid gid_from_ipv4(const Ipv4Addr& a) {
  Gid g{};
  std::copy(kIpv4MappedPrefix.begin(), kIpv4MappedPrefix.end(), g.begin());
  std::copy(a.begin(), a.end(), g.begin() + 12);
  return g;
}

constexpr bool is_ipv4_mapped(const Gid& g) { return std::equal(kIpv4MappedPrefix.begin(), kIpv4MappedPrefix.end(), g.begin()); }

constexpr std::optional<Ipv4Addr> ipv4_of(const Gid& g) {
  if (!is_ipv4_mapped(g)) return std::nullopt;
  Ipv4Addr a{};
  std::copy(g.begin() + 12, g.end(), a.begin());
  return a;
}

static_assert(ipv4_of(gid_from_ipv4({172, 17, 242, 47})) == Ipv4Addr{172, 17, 242, 47});
static_assert(!ipv4_of(Gid{0xfe, 0x80}));

// "172.17.242.47" for an IPv4-mapped GID, the IPv6 form otherwise.
std::string gid_to_string(const Gid& g);

}  // namespace roce::proto
