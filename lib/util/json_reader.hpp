// A small JSON parser for control-socket commands: objects, arrays, strings (with escapes,
// \u included), numbers, true/false/null. Depth- and size-limited, so a hostile line is an
// error message, never a crash; an object that repeats a key is an error too.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/status.hpp"

namespace roce {

class JsonValue {
 public:
  using Object = std::map<std::string, JsonValue>;
  using Array = std::vector<JsonValue>;

  JsonValue() = default;
  explicit JsonValue(std::nullptr_t) {}
  explicit JsonValue(bool b) : v_(b) {}
  explicit JsonValue(double d) : v_(d) {}
  explicit JsonValue(std::string s) : v_(std::move(s)) {}
  explicit JsonValue(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
  explicit JsonValue(Object o) : v_(std::make_shared<Object>(std::move(o))) {}

  bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  const std::string* string() const { return std::get_if<std::string>(&v_); }
  std::optional<double> number() const;
  std::optional<bool> boolean() const;
  const Object* object() const;
  const Array* array() const;
  // Member of an object, or nullptr.
  const JsonValue* get(std::string_view key) const;
  // Convenience for command arguments.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::uint64_t> get_uint(std::string_view key) const;  // non-negative integers only

 private:
  std::variant<std::monostate, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v_;
};

Result<JsonValue> parse_json(std::string_view text);

}  // namespace roce
