#include "apps/gen/raw/raw_stream.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "protocol/builder.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::gen {

using namespace roce::proto;

std::uint32_t payload_length(const RawStreamSpec& s, std::uint8_t opcode) {
  switch (opcode_info(opcode).payload) {
    case PayloadRule::None: return 0;
    case PayloadRule::Exactly8: return 8;
    case PayloadRule::ExactPmtu: return s.pmtu;
    case PayloadRule::OneToPmtu:
    case PayloadRule::ZeroToPmtu: return s.payload_bytes;
  }
  return 0;
}

std::optional<std::string> check(const RawStreamSpec& s) {
  if (s.opcodes.empty()) return "no opcode to send";
  if (!is_iba_mtu_bytes(s.pmtu)) return "PMTU " + std::to_string(s.pmtu) + " is not 256, 512, 1024, 2048 or 4096";
  if (s.eth.vlan_count > 2) return "at most two VLAN tags";
  for (std::size_t i = 0; i < s.eth.vlan_count; ++i)
    if ((s.eth.vlan_tci[i] & 0x0FFF) == 0x0FFF) return "VLAN ID 4095 is reserved";
  if (s.dscp > 63) return "DSCP " + std::to_string(s.dscp) + " is above 63";
  if (s.dest_qp >= kPsnModulus) return "destination QP is 24 bits";
  if (s.psn_start && *s.psn_start >= kPsnModulus) return "PSN is 24 bits";
  if (s.psn_gap == 0 || s.psn_gap >= kPsnModulus / 2) return "PSN gap must be 1 .. 2^23-1";
  if (s.psn_mode != PsnMode::Increment && s.psn_mode != PsnMode::Wrap && (s.psn_gap_every.n || s.psn_dup_every.n))
    return "PSN gaps and duplicates need the increment or wrap PSN mode";
  for (std::uint8_t op : s.opcodes) {
    const OpcodeInfo& info = opcode_info(op);
    if (!info.valid) return "opcode " + opcode_name(op) + " is not in the opcode table";
    FrameSpec f;
    f.ip_version = s.ip_version;
    f.eth = s.eth;
    f.bth.opcode = op;
    f.pmtu = s.pmtu;
    const std::uint32_t len = payload_length(s, op);
    const FrameLayout l = layout_frame(f, len);
    if (l.error == BuildError::PayloadAbovePmtu)
      return std::string(info.name) + ": a payload of " + std::to_string(len) + " bytes is above the PMTU of " +
             std::to_string(s.pmtu) + " (a receiver drops it; raise the PMTU)";
    if (l.error == BuildError::PayloadLengthInvalid)
      return std::string(info.name) + " cannot carry " + std::to_string(len) + " payload bytes";
    if (!l.ok()) return std::string(info.name) + ": " + to_string(l.error);
  }
  return std::nullopt;
}

std::optional<std::string> check(const Rate& r) {
  if (r.kind == Rate::Kind::Unlimited) return std::nullopt;
  if (!(r.value > 0) || !std::isfinite(r.value)) return "rate must be positive";
  return std::nullopt;
}

std::string to_string(PsnMode m) {
  switch (m) {
    case PsnMode::Increment: return "increment";
    case PsnMode::Fixed: return "fixed";
    case PsnMode::Random: return "random";
    case PsnMode::Wrap: return "wrap";
  }
  return "unknown";
}

std::string to_string(PayloadPattern p) {
  switch (p) {
    case PayloadPattern::Zero: return "zero";
    case PayloadPattern::Increment: return "inc";
    case PayloadPattern::Random: return "random";
    case PayloadPattern::Byte: return "byte";
  }
  return "unknown";
}

std::string to_string(Rate::Kind k) {
  switch (k) {
    case Rate::Kind::Unlimited: return "unlimited";
    case Rate::Kind::Pps: return "pps";
    case Rate::Kind::Bps: return "bps";
  }
  return "unknown";
}

std::string to_string(const Rate& r) {
  char buf[48];
  switch (r.kind) {
    case Rate::Kind::Unlimited: return "unlimited";
    case Rate::Kind::Pps: std::snprintf(buf, sizeof buf, "%.10g pps", r.value); return buf;
    case Rate::Kind::Bps: std::snprintf(buf, sizeof buf, "%.10g Gb/s", r.value / 1e9); return buf;
  }
  return "unknown";
}

std::optional<PsnMode> psn_mode_from_string(std::string_view s) {
  for (PsnMode m : {PsnMode::Increment, PsnMode::Fixed, PsnMode::Random, PsnMode::Wrap})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

std::optional<Ecn> ecn_from_string(std::string_view s) {
  if (s == "none") return Ecn::NotEct;
  for (Ecn e : {Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce})
    if (s == to_string(e)) return e;
  return std::nullopt;
}

std::optional<std::uint8_t> opcode_from_string(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(s[0]))) {
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    unsigned v = 0;
    for (char c : hex ? s.substr(2) : s) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : hex && std::isxdigit(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                                          : -1;
      if (d < 0) return std::nullopt;
      v = v * (hex ? 16 : 10) + static_cast<unsigned>(d);
      if (v > 255) return std::nullopt;
    }
    if (!opcode_info(static_cast<std::uint8_t>(v)).valid) return std::nullopt;
    return static_cast<std::uint8_t>(v);
  }
  std::string name;
  for (char c : s) name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (unsigned op = 0; op < 256; ++op)
    if (kOpcodeTable[op].valid && name == kOpcodeTable[op].name) return static_cast<std::uint8_t>(op);
  return std::nullopt;
}

std::vector<std::uint8_t> all_opcodes() {
  std::vector<std::uint8_t> ops;
  for (unsigned op = 0; op < 256; ++op)
    if (kOpcodeTable[op].valid) ops.push_back(static_cast<std::uint8_t>(op));
  return ops;
}

}  // namespace roce::gen
