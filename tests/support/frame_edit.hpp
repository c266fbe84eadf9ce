// Editing a built IPv4 RoCEv2 frame the way a broken or hostile sender would, keeping every
// other check intact: the IPv4 checksum, the lengths and the ICRC are made right again so that
// the edit itself is what the receiver sees.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "protocol/checksum.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"
#include "protocol/opcode.hpp"

namespace roce::test::frame_edit {

inline constexpr std::size_t kEthBytes = sizeof(proto::EthernetHeader);
inline constexpr std::size_t kIpOffset = kEthBytes;
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
  ip.checksum.set(proto::internet_checksum(std::span{f}.subspan(kIpOffset, ip.header_bytes())));
  write_header(f, kIpOffset, ip);
}

// Recomputes the ICRC after a test changed a covered byte.
inline void reseal(std::vector<std::byte>& f) {
  const auto datagram = std::span{f}.subspan(kIpOffset, f.size() - kIpOffset - proto::kIcrcBytes);
  proto::write_icrc(std::span{f}.last(proto::kIcrcBytes),
                    proto::compute_icrc(proto::CrcBackend::Isal, proto::IpVersion::V4, datagram));
}

// Grows (delta > 0, with 0x5A bytes) or shrinks the bytes just before the ICRC, as a sender
// that got an opcode's header or payload length wrong would, and fixes the IP and UDP lengths.
inline std::vector<std::byte> with_tail(std::vector<std::byte> f, long delta) {
  const std::vector<std::byte> icrc(f.end() - proto::kIcrcBytes, f.end());
  f.resize(f.size() - proto::kIcrcBytes);
  if (delta < 0) f.resize(f.size() - static_cast<std::size_t>(-delta));
  else f.insert(f.end(), static_cast<std::size_t>(delta), std::byte{0x5A});
  f.insert(f.end(), icrc.begin(), icrc.end());
  auto ip = read_header<proto::Ipv4Header>(f, kIpOffset);
  ip.total_length.set(static_cast<std::uint16_t>(f.size() - kIpOffset));
  write_header(f, kIpOffset, ip);
  fix_ipv4_checksum(f);
  auto udp = read_header<proto::UdpHeader>(f, kUdpOffset);
  udp.length.set(static_cast<std::uint16_t>(f.size() - kUdpOffset));
  write_header(f, kUdpOffset, udp);
  reseal(f);
  return f;
}

// The same frame under another opcode: the headers after the BTH stay as they were built.
inline std::vector<std::byte> with_opcode(std::vector<std::byte> f, proto::Opcode op) {
  auto bth = read_header<proto::Bth>(f, kBthOffset);
  bth.opcode = proto::raw(op);
  write_header(f, kBthOffset, bth);
  reseal(f);
  return f;
}

// Flips one bit without fixing the ICRC: what a bad link does.
inline std::vector<std::byte> corrupted(std::vector<std::byte> f, std::size_t at) {
  f[at] ^= std::byte{0x40};
  return f;
}

}  // namespace roce::test::frame_edit
