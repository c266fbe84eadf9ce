// LAP and APR (IBA 12.8; tables 115, 116): loading an alternate path for automatic path
// migration. Linux's CM ignores both on RoCE ports; they are decoded here so that they can be
// recognised, counted and shown, not acted on.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/gid.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

inline constexpr std::size_t kCmLapPrivateBytes = 168;

struct CmLap {
  Be32 local_comm_id;          // 0
  Be32 remote_comm_id;         // 4
  Be32 reserved8;              // 8
  Be32 qpn_word;               // 12: remote QPN/EECN(24) | remote CM response timeout(5) | reserved(3)
  Be32 reserved16;             // 16
  Be16 alt_local_lid;          // 20
  Be16 alt_remote_lid;         // 22
  Gid alt_local_gid;           // 24
  Gid alt_remote_gid;          // 40
  Be32 flow_label_word;        // 56: flow label(20) | reserved(4) | traffic class(8)
  std::uint8_t hop_limit;      // 60
  std::uint8_t rate_byte;      // 61: reserved(2) | packet rate(6)
  std::uint8_t sl_byte;        // 62: SL(4) | subnet local(1) | reserved(3)
  std::uint8_t ack_byte;       // 63: local ACK timeout(5) | reserved(3)
  std::array<std::uint8_t, kCmLapPrivateBytes> private_data;  // 64

  using RemoteQpn = BitField<std::uint32_t, 8, 24>;
  using RemoteCmResponseTimeout = BitField<std::uint32_t, 3, 5>;
  using FlowLabel = BitField<std::uint32_t, 12, 20>;
  using TrafficClass = BitField<std::uint32_t, 0, 8>;
  using PacketRate = BitField<std::uint8_t, 0, 6>;
  using Sl = BitField<std::uint8_t, 4, 4>;
  using SubnetLocal = BitField<std::uint8_t, 3, 1>;
  using LocalAckTimeout = BitField<std::uint8_t, 3, 5>;

  constexpr std::uint32_t remote_qpn() const { return read_field<RemoteQpn>(qpn_word); }
  constexpr void set_remote_qpn(std::uint32_t v) { write_field<RemoteQpn>(qpn_word, v); }
  constexpr std::uint8_t remote_cm_response_timeout() const {
    return static_cast<std::uint8_t>(read_field<RemoteCmResponseTimeout>(qpn_word));
  }
  constexpr void set_remote_cm_response_timeout(std::uint8_t v) { write_field<RemoteCmResponseTimeout>(qpn_word, v); }
  constexpr std::uint32_t flow_label() const { return read_field<FlowLabel>(flow_label_word); }
  constexpr void set_flow_label(std::uint32_t v) { write_field<FlowLabel>(flow_label_word, v); }
  constexpr std::uint8_t traffic_class() const { return static_cast<std::uint8_t>(read_field<TrafficClass>(flow_label_word)); }
  constexpr void set_traffic_class(std::uint8_t v) { write_field<TrafficClass>(flow_label_word, v); }
  constexpr std::uint8_t packet_rate() const { return read_field<PacketRate>(rate_byte); }
  constexpr void set_packet_rate(std::uint8_t v) { write_field<PacketRate>(rate_byte, v); }
  constexpr std::uint8_t sl() const { return read_field<Sl>(sl_byte); }
  constexpr void set_sl(std::uint8_t v) { write_field<Sl>(sl_byte, v); }
  constexpr bool subnet_local() const { return read_field<SubnetLocal>(sl_byte) != 0; }
  constexpr void set_subnet_local(bool v) { write_field<SubnetLocal>(sl_byte, v); }
  constexpr std::uint8_t local_ack_timeout() const { return read_field<LocalAckTimeout>(ack_byte); }
  constexpr void set_local_ack_timeout(std::uint8_t v) { write_field<LocalAckTimeout>(ack_byte, v); }
};
static_assert(sizeof(CmLap) == kMadDataBytes);

// APR status (IBA table 117; enum ib_cm_apr_status).
enum class AprStatus : std::uint8_t {
  Loaded = 0,
  InvalidCommId = 1,
  Unsupported = 2,
  Rejected = 3,
  Redirect = 4,
  IsCurrent = 5,
  InvalidQpnEecn = 6,
  InvalidLid = 7,
  InvalidGid = 8,
  InvalidFlowLabel = 9,
  InvalidTrafficClass = 10,
  InvalidHopLimit = 11,
  InvalidPacketRate = 12,
  InvalidSl = 13,
};

inline constexpr std::size_t kCmAprInfoBytes = 72;
inline constexpr std::size_t kCmAprPrivateBytes = 148;

struct CmApr {
  Be32 local_comm_id;          // 0
  Be32 remote_comm_id;         // 4
  std::uint8_t info_length;    // 8: bytes of additional information used
  std::uint8_t ap_status;      // 9
  Be16 reserved10;             // 10
  std::array<std::uint8_t, kCmAprInfoBytes> additional_info;   // 12
  std::array<std::uint8_t, kCmAprPrivateBytes> private_data;   // 84

  constexpr void set_status(AprStatus s) { ap_status = static_cast<std::uint8_t>(s); }
};
static_assert(sizeof(CmApr) == kMadDataBytes);

std::optional<std::string> apr_status_name(std::uint8_t code);
std::string to_string(AprStatus s);

}  // namespace roce::proto
