// RoCEv2 invariant CRC (IBA Annex A17, ../shared/spec/rocev2-wire.md section 6): CRC-32 over
// 8 bytes of 0xFF, the IP header with its variant fields set to ones, the UDP header with its
// checksum set to ones, the BTH with byte 4 (FECN/BECN/Resv6) set to ones, then everything up
// to the ICRC unchanged. The result is stored least-significant byte first.
#pragma once

#include <cstdint>

#include "protocol/be.hpp"
#include "protocol/crc32.hpp"

namespace roce::proto {

enum class IpVersion : std::uint8_t { V4 = 4, V6 = 6 };

inline constexpr std::size_t kIpv4HeaderBytes = 20;
inline constexpr std::size_t kIpv6HeaderBytes = 40;
constexpr std::size_t ip_header_bytes(IpVersion v) { return v == IpVersion::V4 ? kIpv4HeaderBytes : kIpv6HeaderBytes; }

// `datagram` runs from the first byte of the IP header (IPv4 without options, or IPv6 with
// UDP as next header) to the last pad byte, excluding the ICRC. It must hold at least the
// IP, UDP and BTH headers; the caller checks that.
std::uint32_t compute_icrc(CrcBackend backend, IpVersion v, ByteSpan datagram) noexcept;
// The CRC state after the masked headers and the next bytes up to `upto` bytes into the
// datagram (upto >= the IP, UDP and BTH headers): continue it with crc32() over the rest.
std::uint32_t icrc_prefix(CrcBackend backend, IpVersion v, ByteSpan datagram, std::size_t upto) noexcept;

// The ICRC value as the four bytes at the end of the packet read it.
std::uint32_t read_icrc(ByteSpan four_bytes) noexcept;
void write_icrc(MutableByteSpan four_bytes, std::uint32_t icrc) noexcept;

}  // namespace roce::proto
