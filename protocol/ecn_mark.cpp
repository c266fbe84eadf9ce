#include "protocol/ecn_mark.hpp"

namespace roce::proto {


namespace {
constexpr std::uint8_t kEcnMask = 0x03;
constexpr std::uint8_t kCe = static_cast<std::uint8_t>(Ecn::Ce);
constexpr unsigned kMaxVlanTags = 2;
// The traffic class sits in bits 27..20 of the first IPv6 word; its ECN bits are 21..20.
constexpr std::uint32_t kIpv6CeBits = std::uint32_t{kCe} << 20;
}  // namespace

std::optional<EcnLocation> locate_ecn(ByteSpan frame) noexcept {
  if (frame.size() < sizeof(EthernetHeader)) return std::nullopt;
  std::size_t off = sizeof(EthernetHeader);
  std::uint16_t type = load_header<EthernetHeader>(frame, 0).ether_type.get();
  for (unsigned tags = 0; (type == kEtherTypeVlan || type == kEtherTypeQinQ) && tags < kMaxVlanTags; ++tags) {
    if (frame.size() < off + sizeof(VlanTag)) return std::nullopt;
    type = load_header<VlanTag>(frame, off).ether_type.get();
    off += sizeof(VlanTag);
  }
  if (type == kEtherTypeIpv4 && frame.size() >= off + sizeof(Ipv4Header) &&
      load_header<Ipv4Header>(frame, off).version() == 4)
    return EcnLocation{false, off};
  if (type == kEtherTypeIpv6 && frame.size() >= off + sizeof(Ipv6Header) &&
      load_header<Ipv6Header>(frame, off).version() == 6)
    return EcnLocation{true, off};
  return std::nullopt;
}

Ecn read_ecn(ByteSpan frame, const EcnLocation& at) noexcept {
  return at.ipv6 ? load_header<Ipv6Header>(frame, at.l3_offset).ecn() : load_header<Ipv4Header>(frame, at.l3_offset).ecn();
}

void set_ce(MutableByteSpan frame, const EcnLocation& at) noexcept {
  if (at.ipv6) {
    auto h = load_header<Ipv6Header>(frame, at.l3_offset);
    h.ver_tc_flow.set(h.ver_tc_flow.get() | kIpv6CeBits);
    store_header(frame, at.l3_offset, h);
    return;
  }
  auto h = load_header<Ipv4Header>(frame, at.l3_offset);
  // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m being the 16-bit word version_ihl:tos.
  const std::uint16_t old_word = static_cast<std::uint16_t>(h.version_ihl << 8 | h.tos);
  h.tos = static_cast<std::uint8_t>(h.tos | kEcnMask);
  const std::uint16_t new_word = static_cast<std::uint16_t>(h.version_ihl << 8 | h.tos);
  std::uint32_t sum = static_cast<std::uint16_t>(~h.checksum.get());
  sum += static_cast<std::uint16_t>(~old_word);
  sum += new_word;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  h.checksum.set(static_cast<std::uint16_t>(~sum));
  store_header(frame, at.l3_offset, h);
}

}  // namespace roce::proto
