#include "protocol/icrc.hpp"

#include <array>
#include <cstring>

#include "protocol/crc32_short.hpp"
#include "protocol/headers.hpp"

namespace roce::proto {
namespace {

constexpr std::size_t kFfPrefix = 8;
constexpr std::size_t kMaskedBytesV6 = kFfPrefix + kIpv6HeaderBytes + sizeof(UdpHeader) + sizeof(Bth);
constexpr std::size_t kOneCallRest = 256;  // bytes after the BTH that are copied for a single CRC call

// One CRC call over the masked copy: ISA-L's by crc32_short.hpp's kernel where the CPU has it
// and the copy is short enough (crc32_short falls back to ISA-L otherwise); other backends as
// they are.
std::uint32_t crc_of_copy(CrcBackend backend, const std::byte* data, std::size_t len) noexcept {
  return backend == CrcBackend::Isal ? crc32_short(0, data, len) : crc32(backend, 0, data, len);
}

}  // namespace

namespace {

using MaskedHeaders = std::array<std::byte, kMaskedBytesV6 + kOneCallRest>;

// Writes the 0xFF prefix and the IP, UDP and BTH headers with their variant fields set to ones
// into `masked`, so the packet itself is never written; returns the length of those headers.
std::size_t mask_headers(IpVersion v, ByteSpan datagram, MaskedHeaders& masked) noexcept {
  const std::size_t ip_len = ip_header_bytes(v);
  const std::size_t fixed = ip_len + sizeof(UdpHeader) + sizeof(Bth);
  std::memset(masked.data(), 0xFF, kFfPrefix);
  std::memcpy(masked.data() + kFfPrefix, datagram.data(), fixed);
  std::byte* ip = masked.data() + kFfPrefix;
  const auto ones = std::byte{0xFF};
  if (v == IpVersion::V4) {
    ip[offsetof(Ipv4Header, tos)] = ones;
    ip[offsetof(Ipv4Header, ttl)] = ones;
    ip[offsetof(Ipv4Header, checksum)] = ones;
    ip[offsetof(Ipv4Header, checksum) + 1] = ones;
  } else {
    ip[0] |= std::byte{0x0F};  // low nibble of byte 0 is the top of the traffic class
    ip[1] = ones;
    ip[2] = ones;
    ip[3] = ones;
    ip[offsetof(Ipv6Header, hop_limit)] = ones;
  }
  std::byte* udp = ip + ip_len;
  udp[offsetof(UdpHeader, checksum)] = ones;
  udp[offsetof(UdpHeader, checksum) + 1] = ones;
  std::byte* bth = udp + sizeof(UdpHeader);
  bth[offsetof(Bth, resv8a)] = ones;
  return fixed;
}

}  // namespace

std::uint32_t compute_icrc(CrcBackend backend, IpVersion v, ByteSpan datagram) noexcept {
  MaskedHeaders masked;
  const std::size_t fixed = mask_headers(v, datagram, masked);
  const std::size_t rest = datagram.size() - fixed;
  if (rest <= kOneCallRest) {
    // Small packet: each CRC call costs a setup and a final reduction worth tens of bytes, so
    // the rest of the packet joins the masked headers and the CRC runs once.
    std::memcpy(masked.data() + kFfPrefix + fixed, datagram.data() + fixed, rest);
    return crc_of_copy(backend, masked.data(), kFfPrefix + fixed + rest);
  }
  const std::uint32_t crc = crc32(backend, 0, masked.data(), kFfPrefix + fixed);
  return crc32(backend, crc, datagram.data() + fixed, rest);
}

std::uint32_t icrc_prefix(CrcBackend backend, IpVersion v, ByteSpan datagram, std::size_t upto) noexcept {
  MaskedHeaders masked;
  const std::size_t fixed = mask_headers(v, datagram, masked);
  const std::size_t rest = upto - fixed;
  if (rest <= kOneCallRest) {  // extension headers: one CRC call with the masked ones
    std::memcpy(masked.data() + kFfPrefix + fixed, datagram.data() + fixed, rest);
    // A whole short datagram by the kernel, a longer one's prefix by ISA-L (icrc_linear.cpp's
    // whole_by_kernel says why).
    const std::size_t len = kFfPrefix + fixed + rest;
    return upto == datagram.size() ? crc_of_copy(backend, masked.data(), len) : crc32(backend, 0, masked.data(), len);
  }
  const std::uint32_t crc = crc32(backend, 0, masked.data(), kFfPrefix + fixed);
  return crc32(backend, crc, datagram.data() + fixed, rest);
}

std::uint32_t read_icrc(ByteSpan four_bytes) noexcept {
  Le32 v;
  std::memcpy(&v, four_bytes.data(), sizeof v);
  return v.get();
}

void write_icrc(MutableByteSpan four_bytes, std::uint32_t icrc) noexcept {
  Le32 v;
  v.set(icrc);
  std::memcpy(four_bytes.data(), &v, sizeof v);
}

}  // namespace roce::proto
