#include "protocol/cma_header.hpp"

#include <algorithm>
#include <cstring>

namespace roce::proto {

namespace {

IpAddress address_from(IpVersion v, const std::array<std::uint8_t, 16>& bytes) {
  if (v == IpVersion::V6) return IpAddress::of(bytes);
  Ipv4Addr a{};
  std::copy(bytes.begin() + 12, bytes.end(), a.begin());
  return IpAddress::of(a);
}

std::array<std::uint8_t, 16> bytes_of(const IpAddress& a) {
  std::array<std::uint8_t, 16> out{};
  if (a.version == IpVersion::V6) return a.v6;
  std::copy(a.v4.begin(), a.v4.end(), out.begin() + 12);
  return out;
}

}  // namespace

CmaHeaderError parse_cma_header(std::span<const std::uint8_t> private_data, CmaAddressing& out) noexcept {
  if (private_data.size() < kCmaHeaderBytes) return CmaHeaderError::TooShort;
  CmaHeader h;
  std::memcpy(&h, private_data.data(), sizeof h);
  if (h.cma_version != kCmaVersion) return CmaHeaderError::BadVersion;
  IpVersion v;
  switch (h.ip_version()) {
    case 4: v = IpVersion::V4; break;
    case 6: v = IpVersion::V6; break;
    default: return CmaHeaderError::BadIpVersion;
  }
  out.src = address_from(v, h.src_addr);
  out.dst = address_from(v, h.dst_addr);
  out.src_port = h.port.get();
  return CmaHeaderError::None;
}

bool write_cma_header(const CmaAddressing& a, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kCmaHeaderBytes) return false;
  CmaHeader h{};
  h.cma_version = kCmaVersion;
  h.set_ip_version(static_cast<std::uint8_t>(a.src.version));
  h.port.set(a.src_port);
  h.src_addr = bytes_of(a.src);
  h.dst_addr = bytes_of(a.dst);
  std::memcpy(out.data(), &h, sizeof h);
  return true;
}

}  // namespace roce::proto
