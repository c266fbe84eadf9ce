// Values as scenario files and the command line spell them: numbers (decimal or 0x hex),
// MAC and IP addresses, yes/no, microsecond times, hex byte strings. Each returns nullopt on
// anything it does not fully accept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/rdma/address.hpp"
#include "lib/time.hpp"

namespace roce::replay {

std::optional<std::uint64_t> parse_u64(std::string_view s);
std::optional<proto::MacAddr> parse_mac(std::string_view s);
std::optional<rdma::IpAddress> parse_ip(std::string_view s);
std::optional<bool> parse_bool(std::string_view s);
// "250" or "12.5" microseconds, to nanoseconds.
std::optional<Nanos> parse_micros(std::string_view s);
// "1700000000.000010": seconds since the epoch with up to 9 fractional digits, to nanoseconds.
std::optional<Nanos> parse_epoch(std::string_view s);
std::optional<std::vector<std::byte>> parse_hex(std::string_view s);

std::string hex_string(const std::byte* p, std::size_t n);
std::string format_epoch(Nanos t);   // inverse of parse_epoch, microsecond precision when exact
std::string format_micros(Nanos t);  // inverse of parse_micros
std::string format_hex(std::uint64_t v, int digits = 0);
std::string_view trim(std::string_view s);

}  // namespace roce::replay
