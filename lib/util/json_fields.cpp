#include "lib/util/json_fields.hpp"

#include <cmath>

namespace roce {

namespace {

// The largest integer a double holds exactly: JSON numbers beyond it are not trusted as counts.
constexpr double kExactIntegers = 9007199254740992.0;

std::string field_list(std::span<const JsonField> fields) {
  if (fields.empty()) return "no fields";
  std::string s;
  for (const JsonField& f : fields) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

std::string number_text(double d) {
  if (std::floor(d) == d && std::fabs(d) < 1e18) return std::to_string(static_cast<long long>(d));
  return std::to_string(d);
}

Status check_one(const JsonValue& v, std::string_view context, const JsonField& f) {
  const std::string where = std::string(context) + ": \"" + std::string(f.name) + "\"";
  switch (f.type) {
    case JsonType::String:
      if (!v.string()) return make_error(EINVAL, where + " must be a string, not " + json_type_phrase(v));
      return {};
    case JsonType::Bool:
      if (!v.boolean()) return make_error(EINVAL, where + " must be true or false, not " + json_type_phrase(v));
      return {};
    case JsonType::Uint: {
      const auto d = v.number();
      const std::string range = std::to_string(f.min) + " .. " + std::to_string(f.max);
      if (!d) return make_error(EINVAL, where + " must be a whole number " + range + ", not " + json_type_phrase(v));
      if (std::floor(*d) != *d || *d < 0 || *d > kExactIntegers)
        return make_error(EINVAL, where + " must be a whole number " + range + ", not " + number_text(*d));
      const auto u = static_cast<std::uint64_t>(*d);
      if (u < f.min || u > f.max) {
        const std::string note = f.range_note.empty() ? "" : " (" + std::string(f.range_note) + ")";
        return make_error(ERANGE, where + " " + std::to_string(u) + " is outside " + range + note);
      }
      return {};
    }
  }
  return {};
}

}  // namespace

std::string json_type_phrase(const JsonValue& v) {
  if (v.is_null()) return "null";
  if (v.string()) return "a string";
  if (v.number()) return "a number";
  if (v.boolean()) return "a boolean";
  if (v.array()) return "an array";
  return "an object";
}

Status check_fields(const JsonValue& object, std::string_view context, std::span<const JsonField> fields,
                    std::string_view selector) {
  const JsonValue::Object* o = object.object();
  if (!o) return make_error(EINVAL, std::string(context) + ": a command is a JSON object");
  for (const auto& [name, value] : *o) {
    if (!selector.empty() && name == selector) continue;
    const JsonField* spec = nullptr;
    for (const JsonField& f : fields)
      if (f.name == name) spec = &f;
    if (!spec)
      return make_error(EINVAL, std::string(context) + ": unknown field \"" + name + "\" (" + std::string(context) +
                                    " takes " + field_list(fields) + ")");
    if (Status s = check_one(value, context, *spec); !s) return s;
  }
  for (const JsonField& f : fields)
    if (f.required && !object.get(f.name))
      return make_error(EINVAL, std::string(context) + ": \"" + std::string(f.name) + "\" is missing (" +
                                    std::string(context) + " takes " + field_list(fields) + ")");
  return {};
}

}  // namespace roce
