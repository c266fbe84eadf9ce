// Several frames' ICRCs computed together (issue 26, docs/perf-changes.md sections 41 and 45).
// A short frame's ICRC is one ISA-L call whose folds form a single dependency chain of some 70
// cycles. Sealed frame by frame, each chain starts only once that frame's headers and payload
// are stored, and its result is stored into the frame before the next frame is written; computed
// for a run of frames after all of them are written, with no store between the calls, the
// chains are independent and overlap in the out-of-order window (BM_IcrcTailBurst: 16 ns a
// frame chained against 6.5 ns independent; BM_SealRun for whole frames). The values are those
// of compute_icrc() (icrc.hpp) one at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "protocol/icrc_linear.hpp"

namespace roce::proto {

// icrcs[i] = compute_icrc(backend, v, datagrams[i]) for i < n, all computed before any is
// written. Each datagram as compute_icrc() takes it.
void compute_icrc_batch(CrcBackend backend, IpVersion v, const ByteSpan* datagrams, std::size_t n,
                        std::uint32_t* icrcs) noexcept;

// Frames of one flow written but not sealed yet, then sealed together: their ICRCs computed
// (IcrcFlow::prefix over each whole datagram), then stored, each after its datagram.
class IcrcSealBatch {
 public:
  static constexpr std::size_t kCapacity = 32;

  // `datagram` runs from the frame's IP header to its last pad byte (pad bytes in place); the
  // four bytes after it take the ICRC. The caller seals before the batch is full.
  void add(MutableByteSpan datagram) noexcept {
    at_[n_] = datagram.data();
    len_[n_] = static_cast<std::uint32_t>(datagram.size());
    ++n_;
  }
  bool full() const noexcept { return n_ == kCapacity; }
  std::size_t size() const noexcept { return n_; }
  // Seals every frame added since the last seal, as proto::seal(flow, ...) would one by one.
  void seal(const IcrcFlow& flow, CrcBackend backend) noexcept;

 private:
  std::array<std::byte*, kCapacity> at_{};
  std::array<std::uint32_t, kCapacity> len_{};
  std::size_t n_ = 0;
};

}  // namespace roce::proto
