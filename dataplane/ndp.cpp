#include "dataplane/ndp.hpp"

#include <cstddef>
#include <cstring>

namespace roce::dp {

using namespace roce::proto;

namespace {

NeighborTable::Key key_of(const Ipv6Addr& ip) {
  NeighborTable::Key k;
  std::memcpy(&k.hi, ip.data(), 8);
  std::memcpy(&k.lo, ip.data() + 8, 8);
  return k;
}

void write_frame(const MacAddr& eth_dst, const MacAddr& eth_src, const Ipv6Addr& ip_src, const Ipv6Addr& ip_dst,
                 const NeighborMessage& msg, NdOptionType option, const MacAddr& option_mac, std::span<std::byte> out) {
  constexpr std::size_t kBody = sizeof(NeighborMessage) + sizeof(LinkLayerOption);
  EthernetHeader eth{eth_dst, eth_src, Be16::of(kEtherTypeIpv6)};
  Ipv6Header ip{};
  ip.ver_tc_flow.set(6u << 28);
  ip.payload_length.set(kBody);
  ip.next_header = kIpProtoIcmpv6;
  ip.hop_limit = kNdHopLimit;
  ip.src = ip_src;
  ip.dst = ip_dst;
  const LinkLayerOption opt{static_cast<std::uint8_t>(option), 1, option_mac};
  std::byte* p = out.data();
  std::memcpy(p, &eth, sizeof eth);
  std::memcpy(p + sizeof eth, &ip, sizeof ip);
  std::byte* body = p + sizeof eth + sizeof ip;
  std::memcpy(body, &msg, sizeof msg);
  std::memcpy(body + sizeof msg, &opt, sizeof opt);
  const std::uint16_t sum = icmpv6_checksum(ip_src, ip_dst, ByteSpan{body, kBody});
  Be16 be;
  be.set(sum);
  std::memcpy(body + offsetof(Icmpv6Header, checksum), &be, sizeof be);
}

// The link-layer address option of `wanted` type, if any; false when the options are malformed
// (a zero length, or one running past the message).
bool find_link_layer(ByteSpan options, NdOptionType wanted, std::optional<MacAddr>& found) {
  std::size_t at = 0;
  while (at < options.size()) {
    if (options.size() - at < 2) return false;
    const auto type = std::to_integer<std::uint8_t>(options[at]);
    const std::size_t len = std::size_t{std::to_integer<std::uint8_t>(options[at + 1])} * 8;
    if (len == 0 || len > options.size() - at) return false;
    if (type == static_cast<std::uint8_t>(wanted) && len == sizeof(LinkLayerOption)) {
      LinkLayerOption o;
      std::memcpy(&o, options.data() + at, sizeof o);
      found = o.mac;
    }
    at += len;
  }
  return true;
}

}  // namespace

void NeighborCache::learn(const Ipv6Addr& ip, const MacAddr& mac) noexcept {
  if (is_unspecified(ip) || is_multicast(ip)) return;
  table_.learn(key_of(ip), mac);
}

std::optional<MacAddr> NeighborCache::lookup(const Ipv6Addr& ip) const noexcept { return table_.lookup(key_of(ip)); }

NdpAction handle_ndp(std::span<const std::byte> frame, const MacAddr& my_mac, const Ipv6Addr& my_ip,
                     NeighborCache& cache, std::span<std::byte> reply) noexcept {
  constexpr std::size_t kHeaders = sizeof(EthernetHeader) + sizeof(Ipv6Header);
  if (frame.size() < kHeaders + sizeof(Icmpv6Header)) return NdpAction::NotNdp;
  EthernetHeader eth;
  std::memcpy(&eth, frame.data(), sizeof eth);
  Ipv6Header ip;
  std::memcpy(&ip, frame.data() + sizeof eth, sizeof ip);
  if (eth.ether_type.get() != kEtherTypeIpv6 || ip.version() != 6 || ip.next_header != kIpProtoIcmpv6)
    return NdpAction::NotNdp;
  const auto type = std::to_integer<std::uint8_t>(frame[kHeaders]);
  if (type != kIcmpv6NeighborSolicitation && type != kIcmpv6NeighborAdvertisement) return NdpAction::NotNdp;

  // RFC 4861 7.1.1 / 7.1.2: what a node must check before it believes a message.
  const std::size_t length = ip.payload_length.get();
  if (length > frame.size() - kHeaders || length < sizeof(NeighborMessage)) return NdpAction::Invalid;
  const ByteSpan body{frame.data() + kHeaders, length};
  if (ip.hop_limit != kNdHopLimit || icmpv6_checksum(ip.src, ip.dst, body) != 0) return NdpAction::Invalid;
  NeighborMessage msg;
  std::memcpy(&msg, body.data(), sizeof msg);
  // A multicast source is no sender at all (RFC 4291 2.7): nothing to learn or answer.
  if (msg.icmp.code != 0 || is_multicast(msg.target) || is_multicast(ip.src)) return NdpAction::Invalid;
  const ByteSpan options = body.subspan(sizeof msg);

  if (type == kIcmpv6NeighborAdvertisement) {
    if (is_multicast(ip.dst) && (msg.flags.get() & NeighborMessage::kSolicited)) return NdpAction::Invalid;
    std::optional<MacAddr> tll;
    if (!find_link_layer(options, NdOptionType::TargetLinkLayer, tll)) return NdpAction::Invalid;
    if (!tll) return NdpAction::Ignored;
    cache.learn(msg.target, *tll);
    return NdpAction::Learned;
  }

  std::optional<MacAddr> sll;
  if (!find_link_layer(options, NdOptionType::SourceLinkLayer, sll)) return NdpAction::Invalid;
  const bool dad = is_unspecified(ip.src);
  if (dad && (ip.dst != solicited_node_multicast(msg.target) || sll)) return NdpAction::Invalid;
  if (sll && !dad) cache.learn(ip.src, *sll);
  if (is_unspecified(my_ip) || msg.target != my_ip || reply.size() < kNdFrameBytes) return sll ? NdpAction::Learned : NdpAction::Ignored;

  // A duplicate address probe is answered to all nodes, unsolicited (RFC 4861 7.2.4).
  NeighborMessage na{};
  na.icmp.type = kIcmpv6NeighborAdvertisement;
  na.flags.set(dad ? NeighborMessage::kOverride : NeighborMessage::kSolicited | NeighborMessage::kOverride);
  na.target = my_ip;
  const Ipv6Addr to = dad ? kAllNodes : ip.src;
  const MacAddr to_mac = dad ? multicast_mac(kAllNodes) : sll.value_or(eth.src);
  write_frame(to_mac, my_mac, my_ip, to, na, NdOptionType::TargetLinkLayer, my_mac, reply);
  return NdpAction::Reply;
}

void build_neighbor_solicitation(const MacAddr& my_mac, const Ipv6Addr& my_ip, const Ipv6Addr& target,
                                 std::span<std::byte> out) noexcept {
  NeighborMessage ns{};
  ns.icmp.type = kIcmpv6NeighborSolicitation;
  ns.target = target;
  const Ipv6Addr group = solicited_node_multicast(target);
  write_frame(multicast_mac(group), my_mac, my_ip, group, ns, NdOptionType::SourceLinkLayer, my_mac, out);
}

}  // namespace roce::dp
