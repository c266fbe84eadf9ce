// Service ID Resolution for UD (IBA 12.11; tables 119, 120): SIDR_REQ asks which QPN and
// Q_Key serve a Service ID, SIDR_REP answers with them or with a status.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

enum class SidrStatus : std::uint8_t {
  Success = 0,
  ServiceIdUnsupported = 1,  // nobody serves this Service ID
  Rejected = 2,              // the consumer refused (rdma_reject on a UD ID)
  NoQp = 3,
  Redirect = 4,              // ClassPortInfo in the additional information
  UnsupportedVersion = 5,
};

inline constexpr std::size_t kCmSidrReqPrivateBytes = 216;
inline constexpr std::size_t kCmSidrRepInfoBytes = 72;
inline constexpr std::size_t kCmSidrRepPrivateBytes = 136;

struct CmSidrReq {
  Be32 request_id;     // 0
  Be16 partition_key;  // 4
  Be16 reserved6;      // 6
  Be64 service_id;     // 8
  std::array<std::uint8_t, kCmSidrReqPrivateBytes> private_data;  // 16
};
static_assert(sizeof(CmSidrReq) == kMadDataBytes);

struct CmSidrRep {
  Be32 request_id;               // 0: echoes the SIDR_REQ's
  std::uint8_t status;           // 4
  std::uint8_t info_length;      // 5: bytes of additional information used
  Be16 reserved6;                // 6
  Be32 qpn_word;                 // 8: QPN(24) | reserved(8)
  Be64 service_id;               // 12
  Be32 qkey;                     // 20
  std::array<std::uint8_t, kCmSidrRepInfoBytes> additional_info;  // 24
  std::array<std::uint8_t, kCmSidrRepPrivateBytes> private_data;  // 96

  using Qpn = BitField<std::uint32_t, 8, 24>;

  constexpr std::uint32_t qpn() const { return read_field<Qpn>(qpn_word); }
  constexpr void set_qpn(std::uint32_t v) { write_field<Qpn>(qpn_word, v); }
  constexpr void set_status(SidrStatus s) { status = static_cast<std::uint8_t>(s); }
};
static_assert(sizeof(CmSidrRep) == kMadDataBytes);

std::optional<std::string> sidr_status_name(std::uint8_t code);
std::string to_string(SidrStatus s);

}  // namespace roce::proto
