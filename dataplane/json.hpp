// A minimal JSON writer for the dataplane's reports: objects, arrays, escaped strings,
// integers, reals and booleans, with commas and colons placed by the writer so a caller
// cannot produce malformed output. Same interface as the roce-inspect writer, so the two can
// become one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roce::dp {

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
  JsonWriter& value(double d);  // NaN and infinities have no JSON form: written as null
  JsonWriter& value(bool b);
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
  std::vector<bool> has_element_;  // per open object/array: holds an element already
  bool after_key_ = false;
};

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace roce::dp
