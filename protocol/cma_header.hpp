// rdma_cm's conventions on top of the IB CM (Linux drivers/infiniband/core/cma.c, librdmacm):
// the Service ID that names a port space and port, and the 36-byte cma_hdr that starts the
// private data of a REQ or SIDR_REQ with the IP addresses and the active side's port.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc.hpp"
#include "protocol/ip_address.hpp"

namespace roce::proto {

// enum rdma_ucm_port_space.
enum class RdmaPortSpace : std::uint16_t { Ipoib = 0x0002, Tcp = 0x0106, Udp = 0x0111, Ib = 0x013F };

// rdma_get_service_id(): port space and port in the low 32 bits.
constexpr std::uint64_t rdma_service_id(RdmaPortSpace ps, std::uint16_t port) {
  return std::uint64_t{static_cast<std::uint16_t>(ps)} << 16 | port;
}

using ServiceIdPortSpace = BitField<std::uint64_t, 16, 16>;
using ServiceIdPort = BitField<std::uint64_t, 0, 16>;
using ServiceIdHigh = BitField<std::uint64_t, 32, 32>;

struct RdmaService {
  RdmaPortSpace port_space;
  std::uint16_t port;
  friend constexpr bool operator==(const RdmaService&, const RdmaService&) = default;
};

// The port space and port of an rdma_cm Service ID; nullopt for any other Service ID.
constexpr std::optional<RdmaService> rdma_service_of(std::uint64_t service_id) {
  if (ServiceIdHigh::get(service_id) != 0) return std::nullopt;
  const auto ps = static_cast<std::uint16_t>(ServiceIdPortSpace::get(service_id));
  switch (static_cast<RdmaPortSpace>(ps)) {
    case RdmaPortSpace::Ipoib:
    case RdmaPortSpace::Tcp:
    case RdmaPortSpace::Udp:
    case RdmaPortSpace::Ib:
      return RdmaService{static_cast<RdmaPortSpace>(ps), static_cast<std::uint16_t>(ServiceIdPort::get(service_id))};
  }
  return std::nullopt;
}

static_assert(rdma_service_id(RdmaPortSpace::Tcp, 18515) == 0x0000000001064853);
static_assert(rdma_service_id(RdmaPortSpace::Tcp, 172) == 0x00000000010600AC);
static_assert(rdma_service_of(0x0000000001110000 | 7174) == RdmaService{RdmaPortSpace::Udp, 7174});
static_assert(!rdma_service_of(0x0000000101060001));
static_assert(!rdma_service_of(0x0000000001070001));

inline constexpr std::uint8_t kCmaVersion = 0x00;
inline constexpr std::size_t kCmaHeaderBytes = 36;

// struct cma_hdr. An IPv4 address sits in the last 4 bytes of its 16 (12 zero bytes before
// it, not the ::ffff: mapping).
struct CmaHeader {
  std::uint8_t cma_version;
  std::uint8_t ip_version_byte;  // IP version(4) | reserved(4)
  Be16 port;                     // the active side's source port
  std::array<std::uint8_t, 16> src_addr;
  std::array<std::uint8_t, 16> dst_addr;

  using IpVersionField = BitField<std::uint8_t, 4, 4>;

  constexpr std::uint8_t ip_version() const { return read_field<IpVersionField>(ip_version_byte); }
  constexpr void set_ip_version(std::uint8_t v) { write_field<IpVersionField>(ip_version_byte, v); }
};
static_assert(sizeof(CmaHeader) == kCmaHeaderBytes);

struct CmaAddressing {
  IpAddress src;        // the active side
  IpAddress dst;        // the address the active side connected to
  std::uint16_t src_port = 0;
};

enum class CmaHeaderError : std::uint8_t {
  None,
  TooShort,          // fewer than 36 bytes of private data
  BadVersion,        // cma_version is not 0 (cma.c refuses the REQ)
  BadIpVersion,      // neither 4 nor 6
};

// Reads the cma_hdr at the start of REQ / SIDR_REQ private data.
CmaHeaderError parse_cma_header(std::span<const std::uint8_t> private_data, CmaAddressing& out) noexcept;
// Writes it (src and dst must be of one family); returns false when out is too short.
bool write_cma_header(const CmaAddressing& a, std::span<std::uint8_t> out) noexcept;

std::string to_string(RdmaPortSpace ps);
std::string to_string(CmaHeaderError e);

}  // namespace roce::proto
