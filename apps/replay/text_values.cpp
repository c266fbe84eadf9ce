#include "apps/replay/text_values.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstdio>

namespace roce::replay {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  s = trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<proto::MacAddr> parse_mac(std::string_view s) {
  s = trim(s);
  proto::MacAddr m{};
  if (s.size() != 17) return std::nullopt;
  for (std::size_t i = 0; i < 6; ++i) {
    if (i > 0 && s[i * 3 - 1] != ':') return std::nullopt;
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(s.data() + i * 3, s.data() + i * 3 + 2, v, 16);
    if (ec != std::errc() || p != s.data() + i * 3 + 2) return std::nullopt;
    m[i] = static_cast<std::uint8_t>(v);
  }
  return m;
}

std::optional<rdma::IpAddress> parse_ip(std::string_view s) {
  const std::string str(trim(s));
  proto::Ipv4Addr v4;
  if (inet_pton(AF_INET, str.c_str(), v4.data()) == 1) return rdma::IpAddress::ipv4(v4);
  proto::Ipv6Addr v6;
  if (inet_pton(AF_INET6, str.c_str(), v6.data()) == 1) return rdma::IpAddress::ipv6(v6);
  return std::nullopt;
}

std::optional<bool> parse_bool(std::string_view s) {
  s = trim(s);
  if (s == "yes" || s == "true" || s == "on" || s == "1") return true;
  if (s == "no" || s == "false" || s == "off" || s == "0") return false;
  return std::nullopt;
}

namespace {

// Whole part and up to `max_frac` fractional digits, scaled by 10^max_frac.
std::optional<std::int64_t> parse_fixed(std::string_view s, int max_frac) {
  s = trim(s);
  const auto dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || frac.size() > static_cast<std::size_t>(max_frac) ||
      (dot != std::string_view::npos && frac.empty()))
    return std::nullopt;
  std::int64_t w = 0;
  auto r = std::from_chars(whole.data(), whole.data() + whole.size(), w);
  if (r.ec != std::errc() || r.ptr != whole.data() + whole.size() || w < 0) return std::nullopt;
  std::int64_t f = 0;
  if (!frac.empty()) {
    r = std::from_chars(frac.data(), frac.data() + frac.size(), f);
    if (r.ec != std::errc() || r.ptr != frac.data() + frac.size() || f < 0) return std::nullopt;
  }
  std::int64_t scale = 1;
  for (int i = 0; i < max_frac; ++i) scale *= 10;
  for (std::size_t i = frac.size(); i < static_cast<std::size_t>(max_frac); ++i) f *= 10;
  if (w > (INT64_MAX - f) / scale) return std::nullopt;
  return w * scale + f;
}

}  // namespace

std::optional<Nanos> parse_micros(std::string_view s) { return parse_fixed(s, 3); }
std::optional<Nanos> parse_epoch(std::string_view s) { return parse_fixed(s, 9); }

std::optional<std::vector<std::byte>> parse_hex(std::string_view s) {
  s = trim(s);
  if (s.size() % 2) return std::nullopt;
  std::vector<std::byte> out(s.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(s.data() + 2 * i, s.data() + 2 * i + 2, v, 16);
    if (ec != std::errc() || p != s.data() + 2 * i + 2) return std::nullopt;
    out[i] = static_cast<std::byte>(v);
  }
  return out;
}

std::string hex_string(const std::byte* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = std::to_integer<unsigned>(p[i]);
    s[2 * i] = kDigits[b >> 4];
    s[2 * i + 1] = kDigits[b & 15];
  }
  return s;
}

std::string format_epoch(Nanos t) {
  char buf[48];
  if (t % 1000 == 0)
    std::snprintf(buf, sizeof buf, "%lld.%06lld", static_cast<long long>(t / kSecond),
                  static_cast<long long>(t % kSecond / 1000));
  else
    std::snprintf(buf, sizeof buf, "%lld.%09lld", static_cast<long long>(t / kSecond), static_cast<long long>(t % kSecond));
  return buf;
}

std::string format_micros(Nanos t) {
  char buf[40];
  if (t % 1000 == 0)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(t / 1000));
  else
    std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(t / 1000), static_cast<long long>(t % 1000));
  return buf;
}

std::string format_hex(std::uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace roce::replay
