#include "protocol/icrc_batch.hpp"

#include "protocol/headers.hpp"

namespace roce::proto {

void compute_icrc_batch(CrcBackend backend, IpVersion v, const ByteSpan* datagrams, std::size_t n,
                        std::uint32_t* icrcs) noexcept {
  for (std::size_t i = 0; i < n; ++i) icrcs[i] = compute_icrc(backend, v, datagrams[i]);
}

void IcrcSealBatch::seal(const IcrcFlow& flow, CrcBackend backend) noexcept {
  // All values first, into registers and a stack array no later call reads: a store into a
  // frame between two calls would only be read by the wire, but the frames' bytes would then
  // be written while the next call loads its own, and the calls would sit in program order
  // with the stores (the chained case of BM_IcrcTailBurst).
  std::array<std::uint32_t, kCapacity> icrc;
  for (std::size_t i = 0; i < n_; ++i) icrc[i] = flow.prefix(backend, ByteSpan{at_[i], len_[i]}, len_[i]);
  for (std::size_t i = 0; i < n_; ++i) write_icrc(MutableByteSpan{at_[i] + len_[i], kIcrcBytes}, icrc[i]);
  n_ = 0;
}

}  // namespace roce::proto
