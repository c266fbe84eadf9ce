#include "bench/suite/big_buffer.hpp"

#include <cstring>

namespace roce::bench {
namespace {

constexpr std::size_t kPage = 4096;

std::vector<std::byte> filled(std::size_t bytes, std::uint64_t seed) {
  std::vector<std::byte> buf(bytes);
  std::uint64_t word = seed;
  for (std::size_t at = 0; at + sizeof word <= bytes; at += sizeof word) {
    std::memcpy(buf.data() + at, &word, sizeof word);
    word = word * 6364136223846793005u + 1442695040888963407u;
  }
  return buf;
}

void touch_pages(std::span<std::byte> buf, std::uint64_t seed) {
  for (std::size_t at = 0; at + sizeof seed <= buf.size(); at += kPage) {
    const std::uint64_t word = seed ^ at;
    std::memcpy(buf.data() + at, &word, sizeof word);
  }
}

}  // namespace

BigBuffers& big_buffers(std::size_t bytes) {
  static BigBuffers bufs{filled(bytes, 1), filled(bytes, 2)};
  touch_pages(bufs.a, 1);
  touch_pages(bufs.b, 2);
  return bufs;
}

}  // namespace roce::bench
