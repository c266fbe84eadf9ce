// A payload of at most 64 bytes copied without a call: libc's memcpy is about as many
// instructions for 64 bytes, but the call makes its caller save registers around it (the run's
// WRITE ONLY, responder_run.cpp: four saved and restored a frame; docs/perf-changes.md section 75).
#pragma once

#include <cstddef>
#include <cstring>

namespace roce::rdma {

inline constexpr std::size_t kShortCopyMax = 64;

namespace detail {
template <std::size_t N>
[[gnu::always_inline]] inline void copy_fixed(std::byte* dst, const std::byte* src) {
  std::memcpy(dst, src, N);  // a constant size: a few moves, no call
}
// [0, n) for 2N >= n >= N: the first N bytes and the last N (they overlap when n < 2N, and
// then write the same bytes twice).
template <std::size_t N>
[[gnu::always_inline]] inline void copy_two(std::byte* dst, const std::byte* src, std::size_t n) {
  copy_fixed<N>(dst, src);
  copy_fixed<N>(dst + n - N, src + n - N);
}
}  // namespace detail

// Copies n <= kShortCopyMax bytes; dst and src do not overlap (as memcpy's).
[[gnu::always_inline]] inline void copy_short(std::byte* dst, const std::byte* src, std::size_t n) {
  if (n >= 32) {
    detail::copy_two<32>(dst, src, n);
  } else if (n >= 16) {
    detail::copy_two<16>(dst, src, n);
  } else if (n >= 8) {
    detail::copy_two<8>(dst, src, n);
  } else if (n >= 4) {
    detail::copy_two<4>(dst, src, n);
  } else if (n != 0) {
    // 1 to 3 bytes: the first, the middle and the last cover them.
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

}  // namespace roce::rdma
