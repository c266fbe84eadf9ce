#include "tests/support/ip_frame.hpp"

#include <cstring>

#include "protocol/checksum.hpp"

namespace roce::test {

using namespace roce::proto;

namespace {

template <typename Header>
Header read_at(std::span<const std::byte> frame, std::size_t offset) {
  Header h;
  std::memcpy(&h, frame.data() + offset, sizeof h);
  return h;
}

template <typename Header>
void write_at(std::span<std::byte> frame, std::size_t offset, const Header& h) {
  std::memcpy(frame.data() + offset, &h, sizeof h);
}

bool ecn_capable(Ecn e) { return e == Ecn::Ect0 || e == Ecn::Ect1; }

}  // namespace

std::optional<IpHeaderAt> find_ip_header(std::span<const std::byte> frame) {
  if (frame.size() < sizeof(EthernetHeader)) return std::nullopt;
  std::size_t at = sizeof(EthernetHeader);
  std::uint16_t type = read_at<EthernetHeader>(frame, 0).ether_type.get();
  for (int tags = 0; tags < 2 && (type == kEtherTypeVlan || type == kEtherTypeQinQ); ++tags) {
    if (frame.size() < at + sizeof(VlanTag)) return std::nullopt;
    type = read_at<VlanTag>(frame, at).ether_type.get();
    at += sizeof(VlanTag);
  }
  if (type == kEtherTypeIpv4 && frame.size() >= at + sizeof(Ipv4Header) &&
      read_at<Ipv4Header>(frame, at).version() == 4)
    return IpHeaderAt{IpVersion::V4, at};
  if (type == kEtherTypeIpv6 && frame.size() >= at + sizeof(Ipv6Header) &&
      read_at<Ipv6Header>(frame, at).version() == 6)
    return IpHeaderAt{IpVersion::V6, at};
  return std::nullopt;
}

std::optional<rdma::IpAddress> ip_destination(std::span<const std::byte> frame) {
  const auto ip = find_ip_header(frame);
  if (!ip) return std::nullopt;
  if (ip->version == IpVersion::V4) return rdma::IpAddress::ipv4(read_at<Ipv4Header>(frame, ip->offset).dst);
  return rdma::IpAddress::ipv6(read_at<Ipv6Header>(frame, ip->offset).dst);
}

Ecn ip_ecn(std::span<const std::byte> frame) {
  const auto ip = find_ip_header(frame);
  if (!ip) return Ecn::NotEct;
  if (ip->version == IpVersion::V4) return read_at<Ipv4Header>(frame, ip->offset).ecn();
  return read_at<Ipv6Header>(frame, ip->offset).ecn();
}

bool mark_ce(std::span<std::byte> frame) {
  const auto ip = find_ip_header(frame);
  if (!ip) return false;
  constexpr std::uint8_t kCe = static_cast<std::uint8_t>(Ecn::Ce);
  if (ip->version == IpVersion::V4) {
    Ipv4Header h = read_at<Ipv4Header>(frame, ip->offset);
    // The checksum covers the options too, when the header has them.
    const std::size_t len = h.header_bytes();
    if (!ecn_capable(h.ecn()) || len < sizeof(Ipv4Header) || frame.size() < ip->offset + len) return false;
    h.tos = static_cast<std::uint8_t>(h.tos | kCe);
    h.checksum.set(0);
    write_at(frame, ip->offset, h);
    h.checksum.set(internet_checksum(frame.subspan(ip->offset, len)));
    write_at(frame, ip->offset, h);
    return true;
  }
  Ipv6Header h = read_at<Ipv6Header>(frame, ip->offset);
  if (!ecn_capable(h.ecn())) return false;
  // Traffic class sits in bits 27..20 of the first word; ECN is its low two bits.
  h.ver_tc_flow.set(h.ver_tc_flow.get() | (std::uint32_t{kCe} << 20));
  write_at(frame, ip->offset, h);
  return true;
}

}  // namespace roce::test
