// What roce-gen's NVMe-oF initiator writes and how it sums up latencies, shared by the
// in-process benchmark (nvme_bench.cpp) and the initiator against a remote target
// (nvme_remote.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "apps/gen/nvme_bench.hpp"
#include "lib/time.hpp"

namespace roce::client {

// The pattern a block carries after its `tag`-th write (tag 0: never written, zeros).
inline void fill_block(std::span<std::byte> b, std::uint64_t lba, std::uint64_t tag) {
  if (tag == 0) {
    std::memset(b.data(), 0, b.size());
    return;
  }
  std::uint64_t x = lba * 0x9E3779B97F4A7C15ull ^ tag * 0xC2B2AE3D27D4EB4Full;
  for (std::size_t i = 0; i + 8 <= b.size(); i += 8) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    std::memcpy(b.data() + i, &x, 8);
  }
}

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, avg = 0;
};
inline Percentiles percentiles(std::vector<Nanos>& v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return static_cast<double>(v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))]) / 1e3; };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.p999 = at(0.999);
  p.max = static_cast<double>(v.back()) / 1e3;
  double sum = 0;
  for (Nanos n : v) sum += static_cast<double>(n);
  p.avg = sum / static_cast<double>(v.size()) / 1e3;
  return p;
}

inline const char* workload_name(NvmeWorkload w) {
  switch (w) {
    case NvmeWorkload::Read: return "read";
    case NvmeWorkload::Write: return "write";
    case NvmeWorkload::RandRw: return "randrw";
  }
  return "?";
}

}  // namespace roce::client
