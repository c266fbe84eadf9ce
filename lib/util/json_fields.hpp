// Checks a command object against the fields it may carry: every member known, of its type and
// within its range, every required one present. The first problem is the error, worded for
// the person who typed the command ("connect_qp: \"remote_qpn\" 1099511627776 is beyond 24 bits
// (0 .. 16777215)").
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "lib/status.hpp"
#include "lib/util/json_reader.hpp"

namespace roce {

enum class JsonType : std::uint8_t { String, Uint, Bool };

struct JsonField {
  std::string_view name;
  JsonType type = JsonType::String;
  bool required = false;
  std::uint64_t min = 0;  // JsonType::Uint: the accepted range
  std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::string_view range_note = {};  // said with a range error, e.g. "24 bits"
};

// `context` names the command in every message; `selector` is a member the caller has already
// read (the "cmd" that chose these fields), accepted and not listed.
Status check_fields(const JsonValue& object, std::string_view context, std::span<const JsonField> fields,
                    std::string_view selector = {});

// "a string", "a number", "an object", ... for messages.
std::string json_type_phrase(const JsonValue& v);

}  // namespace roce
