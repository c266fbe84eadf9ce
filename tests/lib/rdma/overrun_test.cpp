// Overrun without ECN, counted: N RC QPs of one engine (roce-gen -q N) keep 256 KB WRITEs
// outstanding toward one receiver through a 1 Gbit/s switch port with a 64 KiB tail-drop queue
// (no marking, no DCQCN): the in-process form of `roce-gen emulate --rate 1 --queue 65536`. On virtual time, so the
// counts are exact and the same every run. Go-back-N resends what was in flight behind each
// drop, selective repeat the drop alone; the congestion window keeps the drops few.
#include <gtest/gtest.h>

#include <cstdio>

#include "lib/rdma/qp_context.hpp"
#include "tests/lib/rdma/dcqcn_loop.hpp"

namespace roce::test::overrun_test {
namespace {

DcqcnLoopConfig shallow_tail_drop(int qps) {
  DcqcnLoopConfig c;
  c.senders = qps;
  c.line_rate_bps = 10e9;
  c.receiver_rate_bps = 1e9;
  c.one_sender_host = true;
  c.dcqcn = false;
  c.max_inflight_bytes = rdma::TransportTuning{}.max_inflight_bytes;  // the default transport
  c.port.ecn_marking = false;
  c.window = rdma::WindowTuning{};  // the default: the congestion-only window
  c.port.capacity_bytes = 65536;
  c.port.capacity_packets = 4096;
  c.duration = 300 * kMilli;
  c.measure_from = 50 * kMilli;
  c.seed = 21;
  return c;
}

void print(const char* name, const DcqcnLoopResult& r) {
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("[%s] bottleneck goodput %.4f of the link, Jain %.3f, queue mean %.1f KB; sent %llu, resent %llu (%.2f %%), "
              "drops %llu, loss events %llu, window cuts %llu, WRITEs %llu (failed %llu, corrupt %llu)\n",
              name, r.goodput_utilisation, r.jain, r.mean_queue_bytes / 1e3, u(r.sent_packets), u(r.retransmitted),
              r.sent_packets ? 100.0 * static_cast<double>(r.retransmitted) / static_cast<double>(r.sent_packets) : 0.0,
              u(r.drops), u(r.loss_events), u(r.window_cuts), u(r.writes_completed), u(r.writes_failed),
              u(r.writes_corrupt));
  std::printf("[%s] goodput per QP (Gb/s):", name);
  for (double g : r.goodput_bps) std::printf(" %.3f", g / 1e9);
  std::printf("\n");
}

void expect_within_bounds(const DcqcnLoopResult& r, double min_goodput, double max_resent) {
  EXPECT_TRUE(r.drained);
  EXPECT_GT(r.writes_completed, 0u);
  EXPECT_EQ(r.writes_failed, 0u);
  EXPECT_EQ(r.writes_corrupt, 0u);
  EXPECT_GE(r.goodput_utilisation, min_goodput);
  EXPECT_LE(static_cast<double>(r.retransmitted), max_resent * static_cast<double>(r.sent_packets));
}

// Every case runs the default tuning: the congestion-only window (WindowTuning::
// go_back_n_congestion and selective_repeat, on by default) starts at 16 packets in slow start,
// so its first round trips are measured before the queue fills, and is cut only when the
// standing round trip (the smallest of the latest samples) shows a queue.
TEST(Overrun, FourQpsThroughAShallowTailDropQueue) {
  const DcqcnLoopResult r = run_dcqcn_loop(shallow_tail_drop(4), nullptr);
  print("overrun_4qp", r);
  expect_within_bounds(r, 0.9, 0.05);  // issue 21's target
  EXPECT_GT(r.jain, 0.9);
}

TEST(Overrun, SixteenQpsThroughAShallowTailDropQueue) {
  const DcqcnLoopResult r = run_dcqcn_loop(shallow_tail_drop(16), nullptr);
  print("overrun_16qp", r);
  // 16 QPs on one 64 KiB queue: a fair share is a quarter of a packet per round trip, so the
  // window is shared by the QPs on the path and a share below one packet is paced.
  expect_within_bounds(r, 0.9, 0.05);  // issue 21's target
  EXPECT_GT(r.jain, 0.9);
}

// Selective repeat (what roce-gen and roce-appliance agree on). Without its window it reaches
// the link but resends 75-85 % here (docs/loss.md).
TEST(Overrun, FourSelectiveRepeatQpsThroughAShallowTailDropQueue) {
  DcqcnLoopConfig c = shallow_tail_drop(4);
  c.selective_repeat = 128;
  const DcqcnLoopResult r = run_dcqcn_loop(c, nullptr);
  print("overrun_4qp_sr", r);
  expect_within_bounds(r, 0.9, 0.05);  // issue 21's target
  EXPECT_GT(r.jain, 0.9);
}

TEST(Overrun, SixteenSelectiveRepeatQpsThroughAShallowTailDropQueue) {
  DcqcnLoopConfig c = shallow_tail_drop(16);
  c.selective_repeat = 128;
  const DcqcnLoopResult r = run_dcqcn_loop(c, nullptr);
  print("overrun_16qp_sr", r);
  expect_within_bounds(r, 0.9, 0.05);  // issue 21's target
  EXPECT_GT(r.jain, 0.9);
}

// The full go-back-N window (WindowTuning::enabled, off by default: it also cuts on random loss,
// for fewer resends per loss at a cost in goodput on the software path) meets the target too.
TEST(Overrun, SixteenQpsWithTheFullGoBackNWindow) {
  DcqcnLoopConfig c = shallow_tail_drop(16);
  c.window.enabled = true;
  const DcqcnLoopResult r = run_dcqcn_loop(c, nullptr);
  print("overrun_16qp_full", r);
  expect_within_bounds(r, 0.9, 0.05);
  EXPECT_GT(r.jain, 0.9);
}

}  // namespace
}  // namespace roce::test::overrun_test

