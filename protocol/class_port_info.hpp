// ClassPortInfo (IBA 13.4.8.1, table 126; struct ib_class_port_info): what a management
// class agent tells a Get(ClassPortInfo) about itself. 72 bytes at the start of the MAD data.
#pragma once

#include <array>
#include <cstdint>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/gid.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

// CM class capability bits of CapabilityMask: the bit numbers OFED's ib_types.h gives
// (IB_CM_RELIABLE_CONN_CAPABLE 9 ... IB_CM_SIDR_CAPABLE 13).
inline constexpr std::uint16_t kCmCapReliableConnection = 1u << 9;
inline constexpr std::uint16_t kCmCapReliableDatagram = 1u << 10;
inline constexpr std::uint16_t kCmCapRdDatagram = 1u << 11;
inline constexpr std::uint16_t kCmCapUnreliableConnection = 1u << 12;
inline constexpr std::uint16_t kCmCapSidr = 1u << 13;

struct ClassPortInfo {
  std::uint8_t base_version;     // 0
  std::uint8_t class_version;    // 1
  Be16 capability_mask;          // 2
  Be32 cap2_word;                // 4: CapabilityMask2(27) | RespTimeValue(5)
  Gid redirect_gid;              // 8
  Be32 redirect_flow_word;       // 24: TC(8) | SL(4) | flow label(20)
  Be16 redirect_lid;             // 28
  Be16 redirect_pkey;            // 30
  Be32 redirect_qp_word;         // 32: reserved(8) | QP(24)
  Be32 redirect_qkey;            // 36
  Gid trap_gid;                  // 40
  Be32 trap_flow_word;           // 56: TC(8) | SL(4) | flow label(20)
  Be16 trap_lid;                 // 60
  Be16 trap_pkey;                // 62
  Be32 trap_qp_word;             // 64: hop limit(8) | QP(24)
  Be32 trap_qkey;                // 68

  using CapabilityMask2 = BitField<std::uint32_t, 5, 27>;
  using RespTimeValue = BitField<std::uint32_t, 0, 5>;
  using TrafficClass = BitField<std::uint32_t, 24, 8>;
  using Sl = BitField<std::uint32_t, 20, 4>;
  using FlowLabel = BitField<std::uint32_t, 0, 20>;
  using Qp = BitField<std::uint32_t, 0, 24>;
  using HopLimit = BitField<std::uint32_t, 24, 8>;

  constexpr std::uint32_t capability_mask2() const { return read_field<CapabilityMask2>(cap2_word); }
  constexpr void set_capability_mask2(std::uint32_t v) { write_field<CapabilityMask2>(cap2_word, v); }
  constexpr std::uint8_t resp_time_value() const { return static_cast<std::uint8_t>(read_field<RespTimeValue>(cap2_word)); }
  constexpr void set_resp_time_value(std::uint8_t v) { write_field<RespTimeValue>(cap2_word, v); }
  constexpr std::uint8_t redirect_traffic_class() const { return static_cast<std::uint8_t>(read_field<TrafficClass>(redirect_flow_word)); }
  constexpr std::uint8_t redirect_sl() const { return static_cast<std::uint8_t>(read_field<Sl>(redirect_flow_word)); }
  constexpr std::uint32_t redirect_flow_label() const { return read_field<FlowLabel>(redirect_flow_word); }
  constexpr std::uint32_t redirect_qp() const { return read_field<Qp>(redirect_qp_word); }
  constexpr void set_redirect_qp(std::uint32_t v) { write_field<Qp>(redirect_qp_word, v); }
  constexpr std::uint8_t trap_traffic_class() const { return static_cast<std::uint8_t>(read_field<TrafficClass>(trap_flow_word)); }
  constexpr std::uint8_t trap_sl() const { return static_cast<std::uint8_t>(read_field<Sl>(trap_flow_word)); }
  constexpr std::uint32_t trap_flow_label() const { return read_field<FlowLabel>(trap_flow_word); }
  constexpr std::uint32_t trap_qp() const { return read_field<Qp>(trap_qp_word); }
  constexpr void set_trap_qp(std::uint32_t v) { write_field<Qp>(trap_qp_word, v); }
  constexpr std::uint8_t trap_hop_limit() const { return static_cast<std::uint8_t>(read_field<HopLimit>(trap_qp_word)); }
};
static_assert(sizeof(ClassPortInfo) == 72);

// The CM payload of a ClassPortInfo MAD: the attribute, then reserved bytes to 232.
struct CmClassPortInfo {
  ClassPortInfo info;
  std::array<std::uint8_t, kMadDataBytes - sizeof(ClassPortInfo)> reserved;
};
static_assert(sizeof(CmClassPortInfo) == kMadDataBytes);

}  // namespace roce::proto
