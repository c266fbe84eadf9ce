#include "protocol/icrc_batch.hpp"

#include "protocol/headers.hpp"

namespace roce::proto {

void compute_icrc_batch(CrcBackend backend, IpVersion v, const ByteSpan* datagrams, std::size_t n,
                        std::uint32_t* icrcs) noexcept {
  for (std::size_t i = 0; i < n; ++i) icrcs[i] = compute_icrc(backend, v, datagrams[i]);
}

void IcrcSealBatch::seal(const IcrcFlow& flow, CrcBackend backend) noexcept {
  // Every value, then every store: no call waits for a store of this loop (storing each one
  // at once measured the same, BM_SealRun after_writes; the frames written before is the gain).
  std::array<std::uint32_t, kCapacity> icrc;
  for (std::size_t i = 0; i < n_; ++i) icrc[i] = flow.prefix(backend, ByteSpan{at_[i], len_[i]}, len_[i]);
  for (std::size_t i = 0; i < n_; ++i) write_icrc(MutableByteSpan{at_[i] + len_[i], kIcrcBytes}, icrc[i]);
  n_ = 0;
}

}  // namespace roce::proto
