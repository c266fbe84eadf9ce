// Completions and a stream of RDMA WRITEs on a SimNetwork.
//
// A stream of RDMA WRITEs from one endpoint to another on a SimNetwork, as the loss tests run it:
// `outstanding` WRITEs of `message` bytes kept posted until `writes` have completed (or one
// failed), each into its own slot of the destination, and every completed WRITE's bytes compared
// with its source. The source offsets move by a prime so consecutive WRITEs carry different bytes.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test {

// The completions `ep` reports until there are at least `n`, or 10 s of virtual time passed.
inline std::vector<ibv_wc> wait_completions(SimNetwork& net, Endpoint& ep, std::size_t n) {
  std::vector<ibv_wc> got;
  net.run_until(
      [&] {
        auto more = drain(ep);
        got.insert(got.end(), more.begin(), more.end());
        return got.size() >= n;
      },
      net.now() + 10 * kSecond);
  return got;
}

struct WriteStream {
  std::uint64_t completed = 0, failed = 0, corrupt = 0;
};

inline WriteStream stream_writes(SimNetwork& net, Endpoint& a, Endpoint& b, std::uint32_t message, int outstanding,
                                 std::uint64_t writes, std::uint64_t seed, Nanos limit) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> src(2 * std::size_t{message}), dst(std::size_t{message} * static_cast<std::size_t>(outstanding));
  for (auto& x : src) x = static_cast<std::byte>(rng());
  const rdma::MemoryRegion* smr = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  const rdma::MemoryRegion* dmr = reg(*b.engine, b.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  const auto src_offset = [message](std::uint64_t w) { return static_cast<std::size_t>((w * 40'961) % message); };
  const auto slot_of = [outstanding](std::uint64_t w) { return static_cast<std::size_t>(w % static_cast<std::uint64_t>(outstanding)); };
  std::uint64_t posted = 0;
  const auto post_one = [&] {
    const std::uint64_t w = posted++;
    ibv_sge g = sge(src.data() + src_offset(w), message, smr);
    EXPECT_EQ(post(a, IBV_WR_RDMA_WRITE, w, &g, 1, reinterpret_cast<std::uint64_t>(dst.data() + slot_of(w) * message),
                   dmr->rkey()), 0);
  };
  for (int i = 0; i < outstanding; ++i) post_one();
  WriteStream r;
  net.run_until(
      [&] {
        for (const ibv_wc& wc : drain(a)) {
          ++r.completed;
          if (wc.status != IBV_WC_SUCCESS) {
            ++r.failed;
            continue;
          }
          if (std::memcmp(dst.data() + slot_of(wc.wr_id) * message, src.data() + src_offset(wc.wr_id), message) != 0) ++r.corrupt;
          if (posted < writes) post_one();
        }
        return r.completed == writes || r.failed > 0;
      },
      limit);
  return r;
}

}  // namespace roce::test
