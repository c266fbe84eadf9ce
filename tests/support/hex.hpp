// Hex strings <-> byte vectors for test vectors copied from captures and specs.
#pragma once

#include <cctype>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace roce::test {

inline std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> out;
  int hi = -1;
  for (char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '|' || c == ':') continue;
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else throw std::invalid_argument(std::string("bad hex digit: ") + c);
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<std::byte>(hi << 4 | v));
      hi = -1;
    }
  }
  if (hi >= 0) throw std::invalid_argument("odd number of hex digits");
  return out;
}

inline std::string to_hex(const std::byte* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = std::to_integer<unsigned>(p[i]);
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

template <typename C>
std::string to_hex(const C& c) {
  return to_hex(reinterpret_cast<const std::byte*>(c.data()), c.size());
}

}  // namespace roce::test
