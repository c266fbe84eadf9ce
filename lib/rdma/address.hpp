// Addresses of a RoCEv2 endpoint: MAC plus IPv4 or IPv6, and the GID forms verbs uses for
// them (an IPv4 address travels as the IPv4-mapped GID ::ffff:a.b.c.d).
#pragma once

#include <infiniband/verbs.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "protocol/headers.hpp"
#include "protocol/ip_address.hpp"

namespace roce::rdma {

// The wire's address type (protocol/ip_address.hpp): the engine and rdma_cm share it.
using IpAddress = proto::IpAddress;
using proto::to_string;

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

// Finds the MAC of a peer on the link (the dataplane answers from its ARP cache).
using MacResolver = std::function<std::optional<proto::MacAddr>(const IpAddress&)>;

}  // namespace roce::rdma
