// A minimal JSON writer: objects, arrays, strings (escaped per RFC 8259), integers, booleans.
// Commas and key/value separators are placed by the writer, so callers cannot produce
// malformed output by forgetting one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roce {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(std::uint64_t n);
  JsonWriter& value(std::int64_t n);
  JsonWriter& value(std::uint32_t n) { return value(std::uint64_t{n}); }
  JsonWriter& value(int n) { return value(std::int64_t{n}); }
  JsonWriter& value(bool b);
  JsonWriter& value(double d);  // shortest form that reads back exactly; NaN/inf become null
  JsonWriter& null();

  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  const std::string& str() const { return out_; }

 private:
  void before_value();

  std::string out_;
  // One entry per open object/array: whether it already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace roce
