#include "bench/suite/big_buffer.hpp"

#include <cstring>

namespace roce::bench {

std::vector<std::byte> make_big_buffer(std::size_t bytes, std::uint64_t seed) {
  std::vector<std::byte> buf(bytes);
  std::uint64_t word = seed;
  for (std::size_t at = 0; at + sizeof word <= bytes; at += sizeof word) {
    std::memcpy(buf.data() + at, &word, sizeof word);
    word = word * 6364136223846793005u + 1442695040888963407u;
  }
  return buf;
}

void touch_pages(std::span<std::byte> buf, std::uint64_t seed) {
  constexpr std::size_t kPage = 4096;
  for (std::size_t at = 0; at + sizeof seed <= buf.size(); at += kPage) {
    const std::uint64_t word = seed ^ at;
    std::memcpy(buf.data() + at, &word, sizeof word);
  }
}

}  // namespace roce::bench
