#include "lib/util/json_reader.hpp"

#include <charconv>
#include <cmath>

namespace roce {

namespace {

constexpr int kMaxDepth = 32;
constexpr std::size_t kMaxText = 1 << 20;

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Result<JsonValue> document() {
    auto v = value(0);
    if (!v) return v;
    skip_ws();
    if (pos_ != t_.size()) return fail("unexpected text after the value");
    return v;
  }

 private:
  Error fail(const std::string& what) const { return make_error(EINVAL, "bad JSON at offset " + std::to_string(pos_) + ": " + what); }
  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  bool literal(std::string_view w) {
    if (t_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  Result<JsonValue> value(int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    skip_ws();
    if (pos_ >= t_.size()) return fail("unexpected end");
    const char c = t_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      auto s = string();
      if (!s) return s.error();
      return JsonValue(std::move(*s));
    }
    if (literal("true")) return JsonValue(true);
    if (literal("false")) return JsonValue(false);
    if (literal("null")) return JsonValue(nullptr);
    return number();
  }

  Result<JsonValue> number() {
    const std::size_t start = pos_;
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    while (pos_ < t_.size() && ((t_[pos_] >= '0' && t_[pos_] <= '9') || t_[pos_] == '.' || t_[pos_] == 'e' ||
                                t_[pos_] == 'E' || t_[pos_] == '+' || t_[pos_] == '-'))
      ++pos_;
    double d = 0;
    const auto r = std::from_chars(t_.data() + start, t_.data() + pos_, d);
    if (pos_ == start || r.ec != std::errc{} || r.ptr != t_.data() + pos_ || !std::isfinite(d)) return fail("not a value");
    return JsonValue(d);
  }

  Result<std::string> string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < t_.size()) {
      const char c = t_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= t_.size()) break;
      const char e = t_[pos_++];
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
          if (pos_ + 4 > t_.size()) return fail("short \\u escape");
          unsigned cp = 0;
          const auto r = std::from_chars(t_.data() + pos_, t_.data() + pos_ + 4, cp, 16);
          if (r.ec != std::errc{} || r.ptr != t_.data() + pos_ + 4) return fail("bad \\u escape");
          pos_ += 4;
          // UTF-8 of the code unit (surrogates are passed through as they come).
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default: return fail("unknown escape");
      }
    }
    return fail("unterminated string");
  }

  Result<JsonValue> array(int depth) {
    ++pos_;
    JsonValue::Array a;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == ']') {
      ++pos_;
      return JsonValue(std::move(a));
    }
    for (;;) {
      auto v = value(depth + 1);
      if (!v) return v;
      a.push_back(std::move(*v));
      skip_ws();
      if (pos_ < t_.size() && t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < t_.size() && t_[pos_] == ']') {
        ++pos_;
        return JsonValue(std::move(a));
      }
      return fail("expected , or ]");
    }
  }

  Result<JsonValue> object(int depth) {
    ++pos_;
    JsonValue::Object o;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == '}') {
      ++pos_;
      return JsonValue(std::move(o));
    }
    for (;;) {
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != '"') return fail("expected a key");
      const std::size_t key_at = pos_;
      auto k = string();
      if (!k) return k.error();
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != ':') return fail("expected :");
      ++pos_;
      auto v = value(depth + 1);
      if (!v) return v;
      // RFC 8259 leaves a repeated name's meaning open; parsers differ on which one wins, so a
      // command that repeats one ({"cmd":"counters","cmd":"stop"}) is refused, not guessed at.
      const auto [it, added] = o.try_emplace(std::move(*k), std::move(*v));
      if (!added) {
        pos_ = key_at;
        return fail("duplicate key \"" + it->first + "\"");
      }
      skip_ws();
      if (pos_ < t_.size() && t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < t_.size() && t_[pos_] == '}') {
        ++pos_;
        return JsonValue(std::move(o));
      }
      return fail("expected , or }");
    }
  }

  std::string_view t_;
  std::size_t pos_ = 0;
};

}  // namespace

std::optional<double> JsonValue::number() const {
  if (const double* d = std::get_if<double>(&v_)) return *d;
  return std::nullopt;
}

std::optional<bool> JsonValue::boolean() const {
  if (const bool* b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

const JsonValue::Object* JsonValue::object() const {
  const auto* p = std::get_if<std::shared_ptr<Object>>(&v_);
  return p ? p->get() : nullptr;
}

const JsonValue::Array* JsonValue::array() const {
  const auto* p = std::get_if<std::shared_ptr<Array>>(&v_);
  return p ? p->get() : nullptr;
}

const JsonValue* JsonValue::get(std::string_view key) const {
  const Object* o = object();
  if (!o) return nullptr;
  const auto it = o->find(std::string(key));
  return it == o->end() ? nullptr : &it->second;
}

std::optional<std::string> JsonValue::get_string(std::string_view key) const {
  const JsonValue* v = get(key);
  if (!v || !v->string()) return std::nullopt;
  return *v->string();
}

std::optional<std::uint64_t> JsonValue::get_uint(std::string_view key) const {
  const JsonValue* v = get(key);
  if (!v) return std::nullopt;
  const auto d = v->number();
  if (!d || *d < 0 || *d > 9007199254740992.0 || std::floor(*d) != *d) return std::nullopt;
  return static_cast<std::uint64_t>(*d);
}

Result<JsonValue> parse_json(std::string_view text) {
  if (text.size() > kMaxText) return make_error(E2BIG, "JSON text above " + std::to_string(kMaxText) + " bytes");
  return Parser(text).document();
}

}  // namespace roce
