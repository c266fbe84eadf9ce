// Mellanox/NVIDIA Dynamically Connected (DC) transport as it appears on RoCEv2: it reuses the
// RD opcode range 0x40-0x5f (RD itself is not used over RoCE). Layout as Wireshark's InfiniBand
// dissector decodes it (tshark 4.0, packet-infiniband.c): the BTH is followed by 8 more bytes
// (the DCT ETH; Wireshark counts them in its BTH and shows no fields), then the extension
// headers of the RD opcode (RDETH, DETH, RETH...), except that DC Acknowledge carries only the
// AETH, and opcode 0x55 with SE clear carries a 16-byte DC Connect ETH. The names are
// Wireshark's ("DC RDMA Write Only" is DC_RDMA_WRITE_ONLY here).
//
// This is for tools that read captures: the engine does not speak DC and parse_frame() keeps
// rejecting these opcodes (ParseError::UnknownOpcode); parse_dc() continues from there.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "protocol/parser.hpp"

namespace roce::proto {

constexpr bool is_dc_opcode(std::uint8_t op) { return (op >> 5) == 0x2; }

inline constexpr std::size_t kDctEthBytes = 8;
inline constexpr std::size_t kDcConnectEthBytes = 16;

struct DcOpcodeInfo {
  bool valid = false;           // an opcode Wireshark names; 0x56-0x5f are not
  const char* name = "DC_RESERVED";
  Operation operation = Operation::Send;
  std::uint16_t headers = 0;    // ExtHeader bits, in the usual wire order
  bool connect_eth = false;     // the 16-byte DC Connect ETH follows the DCT ETH
  bool has_payload = false;     // false: nothing may sit between the headers and the ICRC
  bool is_request = true;
  constexpr bool has(ExtHeader h) const { return headers & header_bit(h); }
};

// `se` is the BTH SE bit: it tells a DC connect packet (0x55, SE clear) from the others.
DcOpcodeInfo dc_opcode_info(std::uint8_t op, bool se);

struct DcHeaders {
  std::uint64_t dct_eth = 0;                          // the 8 bytes after the BTH, big-endian
  bool has_connect_eth = false;
  std::array<std::uint8_t, kDcConnectEthBytes> connect_eth{};
  DcOpcodeInfo info{};
};

// Call with the packet parse_frame()/parse_ip() left when it returned UnknownOpcode for a DC
// opcode (BTH, offsets and IP fields are set). Fills p.ext with the headers the opcode
// carries, the payload, the ICRC and its status, and `dc`. Returns None, Truncated,
// LengthMismatch, PadCntInconsistent, PayloadLengthInvalid or UnknownOpcode (0x56-0x5f).
ParseError parse_dc(ByteSpan buf, const ParseOptions& opts, Packet& p, DcHeaders& dc) noexcept;

}  // namespace roce::proto
