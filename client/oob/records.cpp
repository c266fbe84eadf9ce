#include "client/oob/records.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace roce::client {

namespace {

// Parses exactly `digits` hex digits at `s[pos]` followed by `sep` (or end of field).
bool hex_field(std::string_view s, std::size_t& pos, std::size_t digits, char sep, std::uint64_t& out) {
  if (pos + digits > s.size()) return false;
  const char* b = s.data() + pos;
  const auto [p, ec] = std::from_chars(b, b + digits, out, 16);
  if (ec != std::errc{} || p != b + digits) return false;
  pos += digits;
  if (sep) {
    if (pos >= s.size() || s[pos] != sep) return false;
    ++pos;
  }
  return true;
}

std::string_view as_text(std::span<const std::byte> r) { return {reinterpret_cast<const char*>(r.data()), r.size()}; }

}  // namespace

std::array<std::byte, kPingpongRecordBytes> format_pingpong(const PingpongDest& d) {
  char text[kPingpongRecordBytes + 1] = {};
  char gid[33] = {};
  for (int i = 0; i < 16; ++i) std::snprintf(gid + 2 * i, 3, "%02x", d.gid.raw[i]);
  std::snprintf(text, sizeof text, "%04x:%06x:%06x:%s", d.lid, d.qpn & 0xFFFFFF, d.psn & 0xFFFFFF, gid);
  std::array<std::byte, kPingpongRecordBytes> out{};
  std::memcpy(out.data(), text, kPingpongRecordBytes);  // the last byte is the NUL
  return out;
}

Result<PingpongDest> parse_pingpong(std::span<const std::byte> record) {
  if (record.size() != kPingpongRecordBytes)
    return make_error(EPROTO, "pingpong record must be 52 bytes, got " + std::to_string(record.size()));
  const std::string_view s = as_text(record);
  if (s.back() != '\0') return make_error(EPROTO, "pingpong record is not NUL-terminated");
  PingpongDest d;
  std::size_t pos = 0;
  std::uint64_t lid, qpn, psn;
  if (!hex_field(s, pos, 4, ':', lid) || !hex_field(s, pos, 6, ':', qpn) || !hex_field(s, pos, 6, ':', psn))
    return make_error(EPROTO, "pingpong record is not LID:QPN:PSN:GID: '" + std::string(s.substr(0, 51)) + "'");
  for (int i = 0; i < 16; ++i) {
    std::uint64_t b;
    if (!hex_field(s, pos, 2, 0, b)) return make_error(EPROTO, "pingpong record has a bad GID");
    d.gid.raw[i] = static_cast<std::uint8_t>(b);
  }
  d.lid = static_cast<std::uint16_t>(lid);
  d.qpn = static_cast<std::uint32_t>(qpn);
  d.psn = static_cast<std::uint32_t>(psn);
  return d;
}

std::string format_perftest(const PerftestDest& d) {
  char text[160];
  int n = std::snprintf(text, sizeof text, "%04x:%04x:%06x:%06x:%08x:%016llx:", d.lid, d.out_reads, d.qpn & 0xFFFFFF,
                        d.psn & 0xFFFFFF, d.rkey, static_cast<unsigned long long>(d.vaddr));
  if (d.has_gid) {
    for (int i = 0; i < 16; ++i) n += std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), "%02x:", d.gid.raw[i]);
    n += std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), "%08x:", d.srqn);
  } else {
    n += std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), "%08x", d.srqn);  // no trailing ':'
  }
  return std::string(text, static_cast<std::size_t>(n) + 1);  // with the NUL, as perftest sends it
}

Result<PerftestDest> parse_perftest(std::span<const std::byte> record) {
  if (record.size() != kPerftestRecordBytes && record.size() != kPerftestRecordNoGidBytes)
    return make_error(EPROTO, "perftest record must be 108 or 59 bytes, got " + std::to_string(record.size()));
  const std::string_view s = as_text(record);
  if (s.back() != '\0') return make_error(EPROTO, "perftest record is not NUL-terminated");
  PerftestDest d;
  std::size_t pos = 0;
  std::uint64_t lid, reads, qpn, psn, rkey, vaddr;
  if (!hex_field(s, pos, 4, ':', lid) || !hex_field(s, pos, 4, ':', reads) || !hex_field(s, pos, 6, ':', qpn) ||
      !hex_field(s, pos, 6, ':', psn) || !hex_field(s, pos, 8, ':', rkey) || !hex_field(s, pos, 16, ':', vaddr))
    return make_error(EPROTO, "perftest record is not LID:OUT_READS:QPN:PSN:RKEY:VADDR: '" +
                                  std::string(s.substr(0, 50)) + "'");
  d.lid = static_cast<std::uint16_t>(lid);
  d.out_reads = static_cast<std::uint16_t>(reads);
  d.qpn = static_cast<std::uint32_t>(qpn);
  d.psn = static_cast<std::uint32_t>(psn);
  d.rkey = static_cast<std::uint32_t>(rkey);
  d.vaddr = vaddr;
  d.has_gid = record.size() == kPerftestRecordBytes;
  if (d.has_gid) {
    for (int i = 0; i < 16; ++i) {
      std::uint64_t b;
      if (!hex_field(s, pos, 2, ':', b)) return make_error(EPROTO, "perftest record has a bad GID");
      d.gid.raw[i] = static_cast<std::uint8_t>(b);
    }
  }
  std::uint64_t srqn;
  if (!hex_field(s, pos, 8, d.has_gid ? ':' : '\0', srqn)) return make_error(EPROTO, "perftest record has a bad SRQN");
  d.srqn = static_cast<std::uint32_t>(srqn);
  return d;
}

std::string gid_to_string(const ibv_gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, g.raw, buf, sizeof buf);
  return buf;
}

}  // namespace roce::client
