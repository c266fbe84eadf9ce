// The named fields of a frame: one table that the display filter (-Y), field output
// (-T fields -e NAME), JSON output and --help all read, so a field has one name, one type and
// one format everywhere. Names are short (qpn, psn, reth.rkey); tshark's names for the same
// fields (infiniband.bth.destqp, frame.number, ...) are accepted as aliases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/inspect/frame_view.hpp"

namespace roce::inspect {

// How a field is typed in JSON (and compared in filters):
//   Uint   a JSON number (at most 32 bits, so every JSON parser keeps it exact)
//   Hex64  a 64-bit value: a JSON string "0x" + 16 hex digits (doubles would round it)
//   Real   a JSON number with a fraction (times in seconds)
//   Bool   true/false, present whenever the header that holds it is
//   Flag   true, present only when set (tshark's analysis flags work the same way)
//   Text   a JSON string
//   Ip     a JSON string (IPv4 dotted, IPv6 or GID colon-hex)
enum class FieldType : std::uint8_t { Uint, Hex64, Real, Bool, Flag, Text, Ip };
std::string to_string(FieldType t);

// Text form of a Uint field (fields output and the table): the base tshark uses for it.
enum class Base : std::uint8_t { Dec, Hex2, Hex4, Hex6, Hex8 };

struct Value {
  enum class Kind : std::uint8_t { Absent, Number, Real, Text, Ip };
  Kind kind = Kind::Absent;
  std::uint64_t u = 0;  // Number (Uint, Hex64, Bool, Flag)
  double d = 0;         // Real
  std::string s;        // Text
  IpView ip;            // Ip
  bool present() const { return kind != Kind::Absent; }
  static Value none() { return {}; }
  static Value num(std::uint64_t v) {
    Value x;
    x.kind = Kind::Number;
    x.u = v;
    return x;
  }
  static Value real(double v) {
    Value x;
    x.kind = Kind::Real;
    x.d = v;
    return x;
  }
  static Value text(std::string v) {
    Value x;
    x.kind = Kind::Text;
    x.s = std::move(v);
    return x;
  }
  static Value address(const IpView& v) {
    Value x;
    x.kind = Kind::Ip;
    x.ip = v;
    return x;
  }
};

// What the fields need besides the frame itself.
struct FieldContext {
  const std::vector<std::string>* files = nullptr;
};

struct FieldDef {
  const char* name;
  FieldType type;
  Base base;
  const char* help;
  Value (*get)(const FrameView&, const FieldContext&);
};

const std::vector<FieldDef>& all_fields();
// By name or tshark alias; nullptr when unknown.
const FieldDef* find_field(std::string_view name);
// For error messages: the closest names (same prefix), at most a few.
std::string suggest_fields(std::string_view name);
// The aliases that lead to `f`.
std::vector<std::string> aliases_of(const FieldDef& f);

// The value as text (fields output): numbers in the field's base, flags and bools 1/0,
// Hex64 as 0x + 16 digits, times with 9 decimals; "" when absent.
std::string format_value(const FieldDef& f, const Value& v);

// Opcode names accepted in filters (RC_SEND_FIRST, DC_ACKNOWLEDGE, ...).
std::optional<std::uint8_t> opcode_from_name(std::string_view name);

}  // namespace roce::inspect
