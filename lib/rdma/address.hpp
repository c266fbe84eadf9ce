// Addresses of a RoCEv2 endpoint: MAC plus IPv4 or IPv6, and the GID forms verbs uses for
// them (an IPv4 address travels as the IPv4-mapped GID ::ffff:a.b.c.d).
#pragma once

#include <infiniband/verbs.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"

namespace roce::rdma {

struct IpAddress {
  proto::IpVersion version = proto::IpVersion::V4;
  proto::Ipv4Addr v4{};
  proto::Ipv6Addr v6{};

  static IpAddress ipv4(proto::Ipv4Addr a) { return IpAddress{proto::IpVersion::V4, a, {}}; }
  static IpAddress ipv6(proto::Ipv6Addr a) { return IpAddress{proto::IpVersion::V6, {}, a}; }
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

struct LocalAddress {
  proto::MacAddr mac{};
  IpAddress ip{};
};

inline ibv_gid gid_from_ip(const IpAddress& ip) {
  ibv_gid g{};
  if (ip.version == proto::IpVersion::V6) {
    std::memcpy(g.raw, ip.v6.data(), 16);
  } else {
    g.raw[10] = 0xFF;
    g.raw[11] = 0xFF;
    std::memcpy(g.raw + 12, ip.v4.data(), 4);
  }
  return g;
}

inline IpAddress ip_from_gid(const ibv_gid& g) {
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (std::memcmp(g.raw, kMapped, 12) == 0) {
    proto::Ipv4Addr a;
    std::memcpy(a.data(), g.raw + 12, 4);
    return IpAddress::ipv4(a);
  }
  proto::Ipv6Addr a;
  std::memcpy(a.data(), g.raw, 16);
  return IpAddress::ipv6(a);
}

inline std::string to_string(const IpAddress& ip) {
  return ip.version == proto::IpVersion::V4 ? proto::ipv4_to_string(ip.v4) : proto::ipv6_to_string(ip.v6);
}

// Finds the MAC of a peer on the link (the dataplane answers from its ARP cache).
using MacResolver = std::function<std::optional<proto::MacAddr>(const IpAddress&)>;

}  // namespace roce::rdma
