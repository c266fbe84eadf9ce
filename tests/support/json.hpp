// A small strict JSON parser for tests that check the tools' JSON output. Written separately
// from lib/util/json_writer so a writer bug cannot hide behind a matching reader bug.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace roce::test {

struct Json {
  using Object = std::map<std::string, Json>;
  using Array = std::vector<Json>;
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v;

  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_number() const { return std::holds_alternative<double>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }

  const Object& object() const { return *std::get<std::shared_ptr<Object>>(v); }
  const Array& array() const { return *std::get<std::shared_ptr<Array>>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  double num() const { return std::get<double>(v); }
  std::uint64_t u64() const { return static_cast<std::uint64_t>(std::get<double>(v)); }
  bool boolean() const { return std::get<bool>(v); }
  bool has(const std::string& k) const { return is_object() && object().count(k); }
  const Json& operator[](const std::string& k) const {
    const auto it = object().find(k);
    if (it == object().end()) throw std::out_of_range("no key " + k);
    return it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  // The whole input must be one JSON value (surrounding whitespace allowed).
  Json parse_document() {
    Json j = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  bool literal(std::string_view lit) {
    if (s_.substr(i_, lit.size()) != lit) return false;
    i_ += lit.size();
    return true;
  }

  Json value() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{string()};
    if (literal("true")) return Json{true};
    if (literal("false")) return Json{false};
    if (literal("null")) return Json{nullptr};
    return number();
  }

  Json object() {
    expect('{');
    auto obj = std::make_shared<Json::Object>();
    if (peek() == '}') {
      ++i_;
      return Json{obj};
    }
    for (;;) {
      if (peek() != '"') fail("expected a key");
      std::string k = string();
      expect(':');
      if (!obj->emplace(k, value()).second) fail("duplicate key " + k);
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return Json{obj};
    }
  }

  Json array() {
    expect('[');
    auto arr = std::make_shared<Json::Array>();
    if (peek() == ']') {
      ++i_;
      return Json{arr};
    }
    for (;;) {
      arr->push_back(value());
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return Json{arr};
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("dangling escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          const unsigned cp = static_cast<unsigned>(std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16));
          i_ += 4;
          if (cp >= 0x80) fail("tests only expect \\u escapes of ASCII control characters");
          out += static_cast<char>(cp);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }

  Json number() {
    const std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') fail("expected a value");
    while (i_ < s_.size() && ((s_[i_] >= '0' && s_[i_] <= '9') || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E' ||
                              s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    return Json{std::stod(std::string(s_.substr(start, i_ - start)))};
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

inline Json parse_json(std::string_view s) { return JsonParser(s).parse_document(); }

}  // namespace roce::test
