// The one rule that deals QPNs out to shards (a dataplane's workers, each with its own Engine):
// QPNs from `base` on go round-robin, shard s of n owning base + s + k * n. The engine hands
// out and looks up its QPNs with it, the dataplane's steering finds a frame's worker with it,
// so the two cannot disagree. QP1 (the GSI) belongs to shard 0, where the CM agent runs; QPNs
// below `base` other than QP1 belong to no shard.
#pragma once

#include <cstdint>
#include <optional>

#include "protocol/gsi.hpp"

namespace roce::rdma {

struct QpnShards {
  std::uint32_t base = 0x11;  // first QPN of shard 0 (0 and 1 are special)
  std::uint32_t shards = 1;   // number of shards (0 is taken as 1)

  // The shard that owns `qpn`, if any.
  constexpr std::optional<unsigned> owner(std::uint32_t qpn) const noexcept {
    if (qpn == proto::kGsiQpn) return 0u;
    if (qpn < base) return std::nullopt;
    return count() == 1 ? 0u : (qpn - base) % count();
  }
  // The QPN of `shard`'s `slot`-th QP.
  constexpr std::uint64_t qpn(unsigned shard, std::uint32_t slot) const noexcept {
    return std::uint64_t{base} + shard + std::uint64_t{slot} * count();
  }
  // Which of `shard`'s slots `qpn` is, if `shard` owns it as a slot (QP1 is no slot).
  constexpr std::optional<std::uint32_t> slot(unsigned shard, std::uint32_t qpn) const noexcept {
    const std::uint64_t first = std::uint64_t{base} + shard;
    if (qpn < first) return std::nullopt;
    // Once per received packet (Engine::find_qp): a QPN has 24 bits, so the division is a 32-bit
    // one, and one shard (one worker) needs none.
    const auto d = static_cast<std::uint32_t>(qpn - first);
    const std::uint32_t n = count();
    if (n == 1) return d;
    if (d % n != 0) return std::nullopt;
    return d / n;
  }
  constexpr std::uint32_t count() const noexcept { return shards ? shards : 1; }
};

}  // namespace roce::rdma
