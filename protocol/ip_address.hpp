// An endpoint's IP address of either family: what the engine addresses a peer by (its GID is
// lib/rdma/address.hpp's gid_from_ip) and what rdma_cm carries in a cma_hdr. One type for both,
// so no layer converts between forms.
#pragma once

#include <string>

#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"

namespace roce::proto {

struct IpAddress {
  IpVersion version = IpVersion::V4;
  Ipv4Addr v4{};
  Ipv6Addr v6{};

  static constexpr IpAddress ipv4(const Ipv4Addr& a) { return IpAddress{IpVersion::V4, a, {}}; }
  static constexpr IpAddress ipv6(const Ipv6Addr& a) { return IpAddress{IpVersion::V6, {}, a}; }
  // The family by overload, for code that holds either (a parsed cma_hdr, a sockaddr).
  static constexpr IpAddress of(const Ipv4Addr& a) { return ipv4(a); }
  static constexpr IpAddress of(const Ipv6Addr& a) { return ipv6(a); }
  // The unspecified address (0.0.0.0 or ::): a listener's "any".
  constexpr bool is_any() const { return version == IpVersion::V4 ? v4 == Ipv4Addr{} : v6 == Ipv6Addr{}; }
  // Only the family's own bytes count.
  friend constexpr bool operator==(const IpAddress& a, const IpAddress& b) {
    return a.version == b.version && (a.version == IpVersion::V4 ? a.v4 == b.v4 : a.v6 == b.v6);
  }
};

inline std::string to_string(const IpAddress& a) {
  return a.version == IpVersion::V4 ? ipv4_to_string(a.v4) : ipv6_to_string(a.v6);
}

}  // namespace roce::proto
