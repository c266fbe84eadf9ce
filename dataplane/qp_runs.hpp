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
  // Each key's group number, by first appearance, from a 64-slot open-addressed table (at most
  // 32 keys: never full); with the groups counted and the burst's runs (changes of key) counted,
  // runs above groups means some key came back after another: scattered.
  std::uint32_t slot_key[64];
  std::uint8_t slot_group[64];
  std::uint64_t used = 0;
  std::uint8_t group[32];
  std::uint8_t size[32] = {};
  unsigned groups = 0, runs = 0;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint32_t k = keys[i];
    if (k == kNoQpRun) return false;
    if (i != 0 && k == keys[i - 1]) {
      group[i] = group[i - 1];
    } else {
      ++runs;
      unsigned h = (k * 0x9E3779B1u) >> 26;
      while (((used >> h) & 1) != 0 && slot_key[h] != k) h = (h + 1) & 63;
      if (((used >> h) & 1) == 0) {
        used |= std::uint64_t{1} << h;
        slot_key[h] = k;
        slot_group[h] = static_cast<std::uint8_t>(groups++);
      }
      group[i] = slot_group[h];
    }
    ++size[group[i]];
  }
  if (runs == groups) return false;
  // A counting sort by group number: stable, so each key's frames keep their order.
  std::uint8_t at[32];
  for (unsigned g = 0, sum = 0; g < groups; ++g) {
    at[g] = static_cast<std::uint8_t>(sum);
    sum += size[g];
  }
  for (unsigned i = 0; i < n; ++i) order[at[group[i]]++] = static_cast<std::uint8_t>(i);
  return true;
}

}  // namespace roce::dp
