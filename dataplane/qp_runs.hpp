// A received burst's frames put in runs of one destination QP before the engine sees them. The
// engine takes a run of one QP's frames on its straight path: the QP looked up, checked and
// refreshed once per run, its in-sequence WRITEs by Responder::take_run_write, their ACKs
// coalesced into one (docs/perf-changes.md sections 35, 42, 50). A queue that RSS or a flow rule
// fills from many QPs interleaves them frame by frame, and then every frame is a run of its own:
// at 16 QPs a 64 B worker took half the frames per second it took from one QP (the fanout case).
// Grouping keeps every QP's frames in their order (PSN order is all the transport needs; verbs
// orders nothing across QPs), and the groups in the order of their first frames.
// Plain integers, no DPDK: unit-tested on its own (tests/dataplane/qp_runs_test.cpp).
#pragma once

#include <cstdint>

namespace roce::dp {

// A key no grouping moves: the burst is left as it came when any frame has it (QP1's MADs, which
// a data QP's first frames may depend on, and anything that is not RoCEv2).
inline constexpr std::uint32_t kNoQpRun = 0xFFFFFFFFu;

// Writes to order[0..n) the indices of `keys` (n <= 32) grouped by key: each key's indices in
// their order, the groups in the order of each key's first index. Returns false, writing nothing,
// when there is nothing to group (every frame already follows the last of its key's frames before
// it, or one key is kNoQpRun): the burst stays as it is.
inline bool group_qp_runs(const std::uint32_t* keys, unsigned n, std::uint8_t* order) noexcept {
  if (n < 3 || n > 32) return false;
  // Scattered: some key comes back after another key came between. Found by a pass that asks,
  // at each change of key, whether the new key was already seen (a compare per earlier change).
  bool scattered = false;
  std::uint32_t starts[32];
  unsigned runs = 0;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint32_t k = keys[i];
    if (k == kNoQpRun) return false;
    if (i != 0 && k == keys[i - 1]) continue;
    for (unsigned r = 0; r < runs && !scattered; ++r) scattered = starts[r] == k;
    starts[runs++] = k;
  }
  if (!scattered) return false;
  std::uint32_t left = n == 32 ? 0xFFFFFFFFu : (1u << n) - 1;  // indices not yet placed
  unsigned out = 0;
  while (left != 0) {
    const unsigned first = static_cast<unsigned>(__builtin_ctz(left));
    const std::uint32_t k = keys[first];
    for (std::uint32_t m = left; m != 0; m &= m - 1) {
      const unsigned i = static_cast<unsigned>(__builtin_ctz(m));
      if (keys[i] == k) {
        order[out++] = static_cast<std::uint8_t>(i);
        left &= ~(1u << i);
      }
    }
  }
  return true;
}

}  // namespace roce::dp
