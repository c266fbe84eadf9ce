// Per-packet cost of the congestion-control pieces on the send and receive paths.
#include <benchmark/benchmark.h>

#include <algorithm>

#include "lib/cc/congestion_point.hpp"
#include "lib/cc/notification_point.hpp"
#include "lib/cc/pacer.hpp"
#include "lib/cc/reaction_point.hpp"

namespace roce::cc {
namespace {

constexpr std::uint32_t kPacket = 1106;  // link_bytes of a 1024 B WRITE MIDDLE

// The sender's per-packet work: ask the pacer, send, count the bytes, follow Rc.
void BM_SendPathPacerAndReactionPoint(benchmark::State& state) {
  ReactionPoint rp(paper_params(100e9));
  Pacer pacer(100e9, 1);
  rp.on_cnp(0);
  pacer.set_rate(0, rp.rc_bps());
  Nanos now = 0;
  for (auto _ : state) {
    now = std::max(now, pacer.earliest_departure(kPacket));
    pacer.on_sent(now, kPacket);
    rp.on_bytes_sent(now, kPacket);
    if (pacer.rate_bps() != rp.rc_bps()) pacer.set_rate(now, rp.rc_bps());
    benchmark::DoNotOptimize(now);
  }
  state.counters["sim_us"] = static_cast<double>(now) / 1000;
}
BENCHMARK(BM_SendPathPacerAndReactionPoint);

void BM_NotificationPointOnCe(benchmark::State& state) {
  NotificationPoint np({NpMode::Paper, from_us(50)});
  Nanos now = 0;
  std::uint64_t cnps = 0;
  for (auto _ : state) {
    now += 100;
    cnps += np.on_ce_packet(now);
    cnps += np.advance(now);
  }
  benchmark::DoNotOptimize(cnps);
}
BENCHMARK(BM_NotificationPointOnCe);

void BM_CongestionPointEnqueueDequeue(benchmark::State& state) {
  CpParams p;
  p.capacity_packets = 1024;
  CongestionPoint<std::uint32_t> cp(p);
  Nanos now = 0;
  for (std::uint32_t i = 0; i < 100; ++i) cp.enqueue(now, i, kPacket, proto::Ecn::Ect0);  // ~110 KB: RED active
  std::uint32_t i = 0;
  for (auto _ : state) {
    now = cp.next_dequeue_time();
    auto d = cp.dequeue(now);
    cp.enqueue(now, ++i, kPacket, proto::Ecn::Ect0);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_CongestionPointEnqueueDequeue);

}  // namespace
}  // namespace roce::cc

BENCHMARK_MAIN();
