#include "protocol/opcode_space.hpp"

#include <cstdio>

#include "protocol/dc_transport.hpp"
#include "protocol/opcode.hpp"
#include "protocol/sack.hpp"

namespace roce::proto {
namespace {

std::string with_hex(const char* prefix, std::uint8_t op) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s_0x%02x", prefix, op);
  return buf;
}

// XRC reuses the RC operation numbers (IBA 1.2.1 table 38) at 0xA0 + op, up to SEND_ONLY_WITH_INVALIDATE.
bool xrc_defined(std::uint8_t op) {
  const std::uint8_t rc = op & 0x1F;
  return rc <= 0x17 && rc != 0x15;
}

}  // namespace

std::string to_string(OpcodeKind k) {
  switch (k) {
    case OpcodeKind::Known: return "known";
    case OpcodeKind::Dc: return "dc";
    case OpcodeKind::Xrc: return "xrc";
    case OpcodeKind::Reserved: return "reserved";
    case OpcodeKind::Vendor: return "vendor";
  }
  return "unknown";
}

OpcodeName describe_opcode(std::uint8_t op, bool se) {
  const OpcodeInfo& info = opcode_info(op);
  if (info.valid) return {OpcodeKind::Known, info.name};
  switch (op >> 5) {
    case 0: return {OpcodeKind::Reserved, with_hex("RC_RESERVED", op)};
    case 1: return {OpcodeKind::Reserved, with_hex("UC_RESERVED", op)};
    case 2: {
      const DcOpcodeInfo dc = dc_opcode_info(op, se);
      if (dc.valid) return {OpcodeKind::Dc, dc.name};
      return {OpcodeKind::Reserved, with_hex("DC_RESERVED", op)};
    }
    case 3: return {OpcodeKind::Reserved, with_hex("UD_RESERVED", op)};
    case 4: return {OpcodeKind::Reserved, with_hex("CNP_RESERVED", op)};
    case 5: {
      if (!xrc_defined(op)) return {OpcodeKind::Reserved, with_hex("XRC_RESERVED", op)};
      // The RC table entry of the same operation gives the name: RC_SEND_FIRST -> XRC_SEND_FIRST.
      const OpcodeInfo& rc = opcode_info(static_cast<std::uint8_t>(op & 0x1F));
      const std::string rc_name = rc.valid ? rc.name : with_hex("RC", op & 0x1F);
      return {OpcodeKind::Xrc, "XRC_" + rc_name.substr(3)};
    }
    case 6: return {OpcodeKind::Reserved, with_hex("RESERVED", op)};
    default:
      // Ours, sent only to a peer that agreed to selective repeat (sack.hpp).
      if (op == kSackOpcode) return {OpcodeKind::Vendor, "ROCEV2DP_RC_SACK"};
      return {OpcodeKind::Vendor, with_hex("VENDOR", op)};
  }
}

}  // namespace roce::proto
