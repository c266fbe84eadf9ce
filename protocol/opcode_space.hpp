// Names for every value of the BTH opcode byte, for tools that show captures: the opcodes of
// our table by their table name, DC opcodes by Wireshark's names, and the rest by the range
// IBA assigns them (bits 7..5: RC, UC, RD, UD, CNP, XRC, reserved, manufacturer specific), so a
// frame with an opcode nobody defines reads "UC_RESERVED_0x2c" or "VENDOR_0xe3" rather than a
// bare number.
#pragma once

#include <cstdint>
#include <string>

namespace roce::proto {

enum class OpcodeKind : std::uint8_t {
  Known,     // in our opcode table (RC, UC, UD, CNP)
  Dc,        // Mellanox/NVIDIA DC in the RD range (dc_transport.hpp)
  Xrc,       // an XRC opcode IBA defines; its XRCETH is not decoded
  Reserved,  // no opcode of that transport has this value, or the whole range is reserved
  Vendor,    // 0xE0-0xFF: manufacturer specific
};

std::string to_string(OpcodeKind k);

struct OpcodeName {
  OpcodeKind kind = OpcodeKind::Reserved;
  std::string name;
};

// `se` matters only for DC opcode 0x55 (dc_transport.hpp).
OpcodeName describe_opcode(std::uint8_t op, bool se = false);

}  // namespace roce::proto
