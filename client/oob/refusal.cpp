#include "client/oob/refusal.hpp"

#include <array>
#include <chrono>
#include <cstring>

namespace roce::client {

namespace {
constexpr std::size_t kMaxReason = 512;
constexpr int kRestOfLineMs = 1'000;  // for the whole rest of the line
}  // namespace

std::string format_refusal(std::string_view reason) {
  std::string line(kRefusedPrefix);
  for (char c : reason) line += (c == '\n' || c == '\r') ? ' ' : c;
  return line + "\n";
}

void send_refusal(OobChannel& tcp, std::string_view reason) {
  const std::string line = format_refusal(reason);
  (void)tcp.write_all(std::as_bytes(std::span{line}));
}

std::optional<std::string> read_refusal(std::span<const std::byte> head, OobChannel& tcp) {
  const std::size_t n = std::min(head.size(), kRefusedPrefix.size());
  if (n == 0 || std::memcmp(head.data(), kRefusedPrefix.data(), n) != 0) return std::nullopt;
  std::string line(reinterpret_cast<const char*>(head.data()), head.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRestOfLineMs);
  while (line.find('\n') == std::string::npos && line.size() < kRefusedPrefix.size() + kMaxReason) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    std::array<std::byte, 1> b{};
    if (left.count() <= 0 || !tcp.read_exact(b, static_cast<int>(left.count()))) break;
    line += static_cast<char>(b[0]);
  }
  if (line.size() < kRefusedPrefix.size()) return std::nullopt;  // a record that began "REF"
  line.erase(0, kRefusedPrefix.size());
  if (const auto nl = line.find('\n'); nl != std::string::npos) line.erase(nl);
  return line;
}

}  // namespace roce::client
