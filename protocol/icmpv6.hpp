// ICMPv6 Neighbor Discovery (RFC 4861) as far as an IPv6 RoCEv2 endpoint needs it: Neighbor
// Solicitation and Advertisement with their link-layer address options, the solicited-node
// multicast group a solicitation is sent to (RFC 4291 2.7.1) and its Ethernet address (RFC 2464
// 7), and the ICMPv6 checksum over the IPv6 pseudo-header (RFC 4443 2.3, RFC 8200 8.1).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "protocol/be.hpp"
#include "protocol/headers.hpp"

namespace roce::proto {

inline constexpr std::uint8_t kIpProtoIcmpv6 = 58;
inline constexpr std::uint8_t kIcmpv6NeighborSolicitation = 135;
inline constexpr std::uint8_t kIcmpv6NeighborAdvertisement = 136;
// Neighbor Discovery messages are only valid with this hop limit: one from off-link would have
// been decremented by a router (RFC 4861 7.1).
inline constexpr std::uint8_t kNdHopLimit = 255;

struct Icmpv6Header {
  std::uint8_t type;
  std::uint8_t code;
  Be16 checksum;
};
static_assert(sizeof(Icmpv6Header) == 4);

// Neighbor Solicitation and Advertisement share their layout: the NA's flags sit in the first
// byte of what is reserved in the NS.
struct NeighborMessage {
  Icmpv6Header icmp;
  Be32 flags;  // NA: R | S | O in the top bits; NS: reserved
  Ipv6Addr target;

  static constexpr std::uint32_t kRouter = 0x80000000u;
  static constexpr std::uint32_t kSolicited = 0x40000000u;
  static constexpr std::uint32_t kOverride = 0x20000000u;
};
static_assert(sizeof(NeighborMessage) == 24);

enum class NdOptionType : std::uint8_t { SourceLinkLayer = 1, TargetLinkLayer = 2 };

// An option's length counts units of 8 bytes; an Ethernet link-layer address option is one.
struct LinkLayerOption {
  std::uint8_t type;
  std::uint8_t length_units;
  MacAddr mac;
};
static_assert(sizeof(LinkLayerOption) == 8);

inline constexpr std::size_t kNdFrameBytes =
    sizeof(EthernetHeader) + sizeof(Ipv6Header) + sizeof(NeighborMessage) + sizeof(LinkLayerOption);

constexpr bool is_multicast(const Ipv6Addr& a) { return a[0] == 0xFF; }
constexpr bool is_unspecified(const Ipv6Addr& a) {
  return std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; });
}

// ff02::1:ffXX:XXXX with the address's low 24 bits.
constexpr Ipv6Addr solicited_node_multicast(const Ipv6Addr& a) {
  return Ipv6Addr{0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF, a[13], a[14], a[15]};
}

// 33:33 and the group's low 32 bits.
constexpr MacAddr multicast_mac(const Ipv6Addr& group) { return MacAddr{0x33, 0x33, group[12], group[13], group[14], group[15]}; }

inline constexpr Ipv6Addr kAllNodes{0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};

// The checksum to store in (or, over a message with it in place, zero when intact) an ICMPv6
// message of `body` bytes between `src` and `dst`.
constexpr std::uint16_t icmpv6_checksum(const Ipv6Addr& src, const Ipv6Addr& dst, ByteSpan body) noexcept {
  std::uint32_t sum = 0;
  auto add_addr = [&sum](const Ipv6Addr& a) {
    for (std::size_t i = 0; i < a.size(); i += 2) sum += std::uint32_t{a[i]} << 8 | a[i + 1];
  };
  add_addr(src);
  add_addr(dst);
  const auto len = static_cast<std::uint32_t>(body.size());
  sum += len >> 16;
  sum += len & 0xFFFF;
  sum += kIpProtoIcmpv6;
  for (std::size_t i = 0; i + 1 < body.size(); i += 2)
    sum += std::uint32_t{std::to_integer<std::uint8_t>(body[i])} << 8 | std::to_integer<std::uint8_t>(body[i + 1]);
  if (body.size() % 2) sum += std::uint32_t{std::to_integer<std::uint8_t>(body.back())} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

static_assert(solicited_node_multicast(Ipv6Addr{0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34}) ==
              Ipv6Addr{0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF, 0, 0x12, 0x34});
static_assert(multicast_mac(kAllNodes) == MacAddr{0x33, 0x33, 0, 0, 0, 1});

}  // namespace roce::proto
