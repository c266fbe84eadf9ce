#include "protocol/icrc_batch.hpp"

#include "protocol/crc32_short.hpp"
#include "protocol/headers.hpp"

namespace roce::proto {

void compute_icrc_batch(CrcBackend backend, IpVersion v, const ByteSpan* datagrams, std::size_t n,
                        std::uint32_t* icrcs) noexcept {
  for (std::size_t i = 0; i < n; ++i) icrcs[i] = compute_icrc(backend, v, datagrams[i]);
}

void IcrcSealBatch::seal(const IcrcFlow& flow, CrcBackend backend, bool clmul) noexcept {
  // Every value, then every store: no call waits for a store of this loop (storing each one
  // at once measured the same, BM_SealRun after_writes; the frames written before is the gain).
  std::array<std::uint32_t, kCapacity> icrc;
  if (clmul && flow.linear() && backend == CrcBackend::Isal && crc32_short_has_clmul()) {
    // Datagrams the kernel takes whole (a 64 B WRITE's is 120 bytes), their headers' share from
    // the flow's seed; a longer one from the flow's state, its rest by ISA-L.
    std::array<std::uint32_t, kCapacity> seed, whole_len, slot;
    std::array<const std::byte*, kCapacity> whole;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      if (len_[i] >= kCrc32ShortMin && len_[i] <= kCrc32ShortMax) {
        seed[k] = flow.seed();
        whole[k] = at_[i];
        whole_len[k] = len_[i];
        slot[k++] = static_cast<std::uint32_t>(i);
      } else {
        const std::size_t fixed = flow.headers_bytes();
        icrc[i] = crc32_isal(flow.headers(at_[i]), at_[i] + fixed, len_[i] - fixed);
      }
    }
    crc32_short_lead_batch(seed.data(), whole.data(), whole_len.data(), k, flow.lead_mask(), seed.data());
    for (std::size_t j = 0; j < k; ++j) icrc[slot[j]] = seed[j];
  } else {
    for (std::size_t i = 0; i < n_; ++i) icrc[i] = flow.prefix(backend, ByteSpan{at_[i], len_[i]}, len_[i]);
  }
  for (std::size_t i = 0; i < n_; ++i) write_icrc(MutableByteSpan{at_[i] + len_[i], kIcrcBytes}, icrc[i]);
  n_ = 0;
}

}  // namespace roce::proto
