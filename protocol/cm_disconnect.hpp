// DREQ and DREP (IBA 12.6.10, 12.6.11; tables 112, 113).
#pragma once

#include <array>
#include <cstdint>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

inline constexpr std::size_t kCmDreqPrivateBytes = 220;
inline constexpr std::size_t kCmDrepPrivateBytes = 224;

struct CmDreq {
  Be32 local_comm_id;
  Be32 remote_comm_id;
  Be32 qpn_word;  // 8: remote QPN/EECN(24) | reserved(8): the receiver's own QPN
  std::array<std::uint8_t, kCmDreqPrivateBytes> private_data;  // 12

  using RemoteQpn = BitField<std::uint32_t, 8, 24>;

  constexpr std::uint32_t remote_qpn() const { return read_field<RemoteQpn>(qpn_word); }
  constexpr void set_remote_qpn(std::uint32_t v) { write_field<RemoteQpn>(qpn_word, v); }
};
static_assert(sizeof(CmDreq) == kMadDataBytes);

struct CmDrep {
  Be32 local_comm_id;
  Be32 remote_comm_id;
  std::array<std::uint8_t, kCmDrepPrivateBytes> private_data;
};
static_assert(sizeof(CmDrep) == kMadDataBytes);

}  // namespace roce::proto
