// Several frames' ICRCs computed together (issue 26, docs/perf-changes.md sections 41 and 49).
// Sealed frame by frame, a short frame's ICRC call (ISA-L, one dependency chain) reads the bytes
// just written into that frame and the next frame's writes wait behind it. Called once a whole
// run is written, the calls read bytes stored well before and overlap one another: BM_SealRun
// (bench/protocol_bench.cpp), 16 64 B WRITEs, 31-34 ns a frame one by one against 27-30 ns
// together. Storing each ICRC before the next call (its "after_writes") is as fast, so what
// counts is that the frames are written first. The values are compute_icrc()'s (icrc.hpp).
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
  // With `clmul`, a linear flow, the ISA-L backend and a CPU with the kernel, a datagram of up
  // to kCrc32ShortMax bytes goes whole to crc32_short_lead_batch (crc32_short.hpp: a carry-less
  // kernel; the headers' per-flow bytes masked off, their share in IcrcFlow::seed), a longer one
  // takes IcrcFlow::headers and ISA-L for the rest; otherwise each frame's by IcrcFlow::prefix.
  // The same values every way.
  void seal(const IcrcFlow& flow, CrcBackend backend, bool clmul = true) noexcept;

 private:
  std::array<std::byte*, kCapacity> at_{};
  std::array<std::uint32_t, kCapacity> len_{};
  std::size_t n_ = 0;
};

}  // namespace roce::proto
