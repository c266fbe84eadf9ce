// Payload length rules of the opcode table, shared by the parser (to reject) and the builder
// (to refuse to write what a receiver would reject).
#pragma once

#include <cstdint>

#include "protocol/opcode.hpp"

namespace roce::proto {

inline constexpr std::uint32_t kMaxPmtuBytes = 4096;

enum class PayloadVerdict : std::uint8_t { Ok, AbovePmtu, LengthInvalid, NotAllowed };

constexpr bool is_iba_mtu_bytes(std::uint32_t n) { return n == 256 || n == 512 || n == 1024 || n == 2048 || n == 4096; }

// pmtu = 0 means the path MTU is unknown: FIRST/MIDDLE must then be one of the IBA sizes.
// Without mtu_rules, the rules that depend on the path MTU (FIRST/MIDDLE exactly one, LAST at
// least one byte) are left to a receiver that knows it; only the largest MTU still applies.
constexpr PayloadVerdict check_payload_length(const OpcodeInfo& info, std::uint32_t len, std::uint32_t pmtu,
                                              bool mtu_rules = true) {
  const std::uint32_t limit = pmtu ? pmtu : kMaxPmtuBytes;
  switch (info.payload) {
    case PayloadRule::None: return len == 0 ? PayloadVerdict::Ok : PayloadVerdict::NotAllowed;
    case PayloadRule::Exactly8: return len == 8 ? PayloadVerdict::Ok : PayloadVerdict::LengthInvalid;
    case PayloadRule::ExactPmtu:
      if (len > limit) return PayloadVerdict::AbovePmtu;
      if (!mtu_rules) return PayloadVerdict::Ok;
      return (pmtu ? len == pmtu : is_iba_mtu_bytes(len)) ? PayloadVerdict::Ok : PayloadVerdict::LengthInvalid;
    case PayloadRule::OneToPmtu:
      if (len > limit) return PayloadVerdict::AbovePmtu;
      return len > 0 || !mtu_rules ? PayloadVerdict::Ok : PayloadVerdict::LengthInvalid;
    case PayloadRule::ZeroToPmtu: return len > limit ? PayloadVerdict::AbovePmtu : PayloadVerdict::Ok;
  }
  return PayloadVerdict::LengthInvalid;
}

constexpr std::uint8_t pad_for(std::uint32_t payload_len) { return static_cast<std::uint8_t>((4 - payload_len % 4) % 4); }

}  // namespace roce::proto
