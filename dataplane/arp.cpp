#include "dataplane/arp.hpp"

#include <cstring>

namespace roce::dp {

using namespace roce::proto;

namespace {

constexpr std::uint16_t kHtypeEthernet = 1;
constexpr std::uint16_t kOperRequest = 1;
constexpr std::uint16_t kOperReply = 2;

std::uint32_t ip_key(const Ipv4Addr& ip) {
  std::uint32_t k;
  std::memcpy(&k, ip.data(), 4);
  return k;
}

void write_frame(const MacAddr& dst, const MacAddr& src, const ArpPacket& arp, std::span<std::byte> out) {
  EthernetHeader eth{dst, src, Be16::of(kEtherTypeArp)};
  std::memcpy(out.data(), &eth, sizeof eth);
  std::memcpy(out.data() + sizeof eth, &arp, sizeof arp);
}

}  // namespace

void ArpCache::learn(const Ipv4Addr& ip, const MacAddr& mac) noexcept {
  const std::uint32_t key = ip_key(ip);
  if (key != 0) table_.learn({0, key}, mac);
}

std::optional<MacAddr> ArpCache::lookup(const Ipv4Addr& ip) const noexcept {
  const std::uint32_t key = ip_key(ip);
  if (key == 0) return std::nullopt;
  return table_.lookup({0, key});
}

ArpAction handle_arp(std::span<const std::byte> frame, const MacAddr& my_mac, const Ipv4Addr& my_ip, ArpCache& cache,
                     std::span<std::byte> reply) noexcept {
  if (frame.size() < kArpFrameBytes) return ArpAction::NotArp;
  EthernetHeader eth;
  std::memcpy(&eth, frame.data(), sizeof eth);
  if (eth.ether_type.get() != kEtherTypeArp) return ArpAction::NotArp;
  ArpPacket arp;
  std::memcpy(&arp, frame.data() + sizeof eth, sizeof arp);
  if (arp.htype.get() != kHtypeEthernet || arp.ptype.get() != kEtherTypeIpv4 || arp.hlen != 6 || arp.plen != 4)
    return ArpAction::Ignored;
  const std::uint16_t oper = arp.oper.get();
  if (oper != kOperRequest && oper != kOperReply) return ArpAction::Ignored;
  cache.learn(arp.spa, arp.sha);
  if (oper == kOperRequest && arp.tpa == my_ip && reply.size() >= kArpFrameBytes) {
    ArpPacket r = arp;
    r.oper.set(kOperReply);
    r.tha = arp.sha;
    r.tpa = arp.spa;
    r.sha = my_mac;
    r.spa = my_ip;
    write_frame(arp.sha, my_mac, r, reply);
    return ArpAction::Reply;
  }
  return ArpAction::Learned;
}

void build_arp_request(const MacAddr& my_mac, const Ipv4Addr& my_ip, const Ipv4Addr& target,
                       std::span<std::byte> out) noexcept {
  ArpPacket a{};
  a.htype.set(kHtypeEthernet);
  a.ptype.set(kEtherTypeIpv4);
  a.hlen = 6;
  a.plen = 4;
  a.oper.set(kOperRequest);
  a.sha = my_mac;
  a.spa = my_ip;
  a.tha = MacAddr{};
  a.tpa = target;
  write_frame(MacAddr{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, my_mac, a, out);
}

}  // namespace roce::dp
