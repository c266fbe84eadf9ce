// Editing a built RoCEv2 frame (Ethernet, IPv4, no VLAN) in place for tests that need a broken
// one: read or write a header at its offset, then make the IPv4 checksum or the ICRC right
// again so that the edit itself is what the receiver sees.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "protocol/checksum.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"

namespace roce::test::frame_edit {

inline constexpr std::size_t kIpOffset = sizeof(proto::EthernetHeader);
inline constexpr std::size_t kUdpOffset = kIpOffset + sizeof(proto::Ipv4Header);
inline constexpr std::size_t kBthOffset = kUdpOffset + sizeof(proto::UdpHeader);

template <typename Header>
Header read_header(const std::vector<std::byte>& f, std::size_t off) {
  Header h;
  std::memcpy(&h, f.data() + off, sizeof h);
  return h;
}

template <typename Header>
void write_header(std::vector<std::byte>& f, std::size_t off, const Header& h) {
  std::memcpy(f.data() + off, &h, sizeof h);
}

inline void fix_ipv4_checksum(std::vector<std::byte>& f) {
  auto ip = read_header<proto::Ipv4Header>(f, kIpOffset);
  ip.checksum.set(0);
  write_header(f, kIpOffset, ip);
  ip.checksum.set(proto::internet_checksum(std::span{f}.subspan(kIpOffset, sizeof(proto::Ipv4Header))));
  write_header(f, kIpOffset, ip);
}

// Recomputes the ICRC after a covered byte changed.
inline void reseal(std::vector<std::byte>& f) {
  const auto datagram = std::span{f}.subspan(kIpOffset, f.size() - kIpOffset - 4);
  proto::write_icrc(std::span{f}.last(4), proto::compute_icrc(proto::CrcBackend::Isal, proto::IpVersion::V4, datagram));
}

}  // namespace roce::test::frame_edit
