#pragma once
// Copies a received payload into registered memory. Large copies use non-temporal stores: a
// ConnectX places payloads by DMA without reading the destination first, while an ordinary
// copy into memory that is not cached reads every destination line (a read for ownership) and
// fills the store buffer, so the next packet's first store waits for the whole copy to drain.

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace roce {

inline constexpr std::size_t kStreamingCopyMin = 2048;
inline constexpr std::size_t kLine = 64;

inline void placement_copy(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
#if defined(__AVX2__)
  if (n >= kStreamingCopyMin) {
    // Only whole cache lines are streamed: a line written partly by streaming stores and
    // partly by ordinary ones costs a read-modify-write in the memory controller.
    const std::size_t head = (kLine - (reinterpret_cast<std::uintptr_t>(dst) & (kLine - 1))) & (kLine - 1);
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    for (; n >= kLine; n -= kLine, dst += kLine, src += kLine) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), lo);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), hi);
    }
    std::memcpy(dst, src, n);
    // Streaming stores are weakly ordered: fence so that a completion written afterwards is
    // never seen before the data it reports.
    _mm_sfence();
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

}  // namespace roce
