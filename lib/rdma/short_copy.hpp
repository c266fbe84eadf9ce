// A payload copy that stays inline for the short payloads of a message-rate workload (64 B
// WRITEs): memcpy's call through the PLT and its size dispatch cost about as much as the copy
// itself there (docs/perf-changes.md section 55). Up to 64 bytes: the first and the last 32, 16,
// 8, 4 or 2 bytes (two moves that overlap for lengths between the powers of two); longer
// payloads go to memcpy, which has the wide moves the x86-64-v2 baseline build lacks.
#pragma once

#include <cstddef>
#include <cstring>

namespace roce::rdma {

namespace short_copy_detail {
template <std::size_t N>
[[gnu::always_inline]] inline void move(std::byte* dst, const std::byte* src) noexcept {
  unsigned char v[N];  // a register: a fixed-size memcpy is an unaligned load and a store
  __builtin_memcpy(v, src, N);
  __builtin_memcpy(dst, v, N);
}
// The first N and the last N bytes of [0, n), N <= n <= 2N: every byte written, from the source.
template <std::size_t N>
[[gnu::always_inline]] inline void ends(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  unsigned char a[N], b[N];
  __builtin_memcpy(a, src, N);
  __builtin_memcpy(b, src + n - N, N);
  __builtin_memcpy(dst, a, N);
  __builtin_memcpy(dst + n - N, b, N);
}
}  // namespace short_copy_detail

inline constexpr std::size_t kShortCopyBytes = 64;

// memcpy(dst, src, n) for ranges that do not overlap; any alignment.
[[gnu::always_inline]] inline void copy_payload_bytes(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  using namespace short_copy_detail;
  if (n > kShortCopyBytes) {
    std::memcpy(dst, src, n);
  } else if (n > 32) {
    ends<32>(dst, src, n);
  } else if (n >= 16) {
    ends<16>(dst, src, n);
  } else if (n >= 8) {
    ends<8>(dst, src, n);
  } else if (n >= 4) {
    ends<4>(dst, src, n);
  } else if (n != 0) {
    dst[0] = src[0];
    if (n > 1) move<2>(dst + n - 2, src + n - 2);
  }
}

}  // namespace roce::rdma
