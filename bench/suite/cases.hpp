// The cases of the performance suite. Each returns Figures whose samples are one value per
// timed window (or per run); nothing is asserted about their size. A case returns false only
// when the transport misbehaved (errors, drops, wrong completions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <optional>
#include <vector>

#include "bench/suite/samples.hpp"
#include "lib/rdma/qp_context.hpp"

namespace roce::bench {

struct SuiteConfig {
  unsigned runs = 5;             // samples per figure
  double window = 0.2;           // seconds per sample (throughput cases)
  unsigned rtt_samples = 20000;  // round trips per RTT run
  std::size_t big_bytes = 0;     // destination buffers: larger than the LLC
  std::vector<std::uint32_t> sizes;  // message sizes of the goodput sweep
  bool smoke = false;
  // scaling: frames left in the loader's cache instead of evicted as a NIC's DMA leaves them.
  bool scaling_warm_feed = false;
  // scaling: a worker's queue loaded with mbufs taken from the pool on that worker's lcore after
  // its round (--scaling-refill lane: a NIC's RX refill), or (false, the default until measured on
  // an idle host) on the loader's.
  bool scaling_lane_refill = false;
  // scaling: the queues' ring slots a round was loaded into left in the loader's cache (warm, the
  // harness before docs/perf-changes.md section 80) instead of evicted with the frames (cold).
  bool scaling_warm_slots = false;
  // scaling: a lane frees its worker's ACKs through the feeder port's rx_burst (port, before
  // section 80), whose per-queue counters share one line for all queues, instead of straight
  // from the queue's ring (ring, the default).
  bool scaling_reclaim_port = false;
  // fanout: only these QP counts, each with an ACK asked for on every message (--fanout-qps
  // 1,16: one profile per count); empty: 1, 2, 4, 8, 16 with ACK requests, 1 and 16 without.
  std::vector<std::uint32_t> fanout_qps;
  // scaling, fanout, responder: the workers' RX bursts grouped by destination QP (--qp-runs on|off,
  // DataplaneOptions::group_qp_runs).
  bool qp_runs = true;
  rdma::TransportTuning tuning{};          // of every engine the suite creates
  // The loss case runs go-back-N with this tuning in place of selective repeat (a same-run
  // baseline for a go-back-N change: --loss-baseline).
  std::optional<rdma::TransportTuning> loss_baseline;
  // The loss case's verb (--loss-verb read: a READs b's memory, the data in READ responses).
  bool loss_read = false;
  // The loss case's lcores (--loss-lcores 2): 1 steps requester, emulator and responder on this
  // thread, so a round trip is a whole iteration of the one loop and everything sent in it is
  // in flight; 2 runs the responder side and the emulator on the next lcore (a real round trip).
  unsigned loss_lcores = 1;
  // The loss case's selective repeat reorder window on both ends (--sr-reorder-window, PSNs).
  std::uint32_t loss_sr_window = 128;
  // The loss case's link (--loss-link GBITS,DELAY_US): a bottleneck rate and one-way delay each
  // way, so that the bandwidth-delay product is the wire's; 0,0: the emulator passes frames on
  // as the loop polls it.
  double loss_rate_bps = 0;
  Nanos loss_delay = 0;
  // The loss case's loss rates (--loss-rates PCT,PCT..): the lossless reference always runs first.
  std::vector<double> loss_rates{0.001, 0.01, 0.05};
  // The goodput sweep runs only its 64 B WRITE message-rate shape (1 QP, 1 KiB MTU): case `rate`.
  bool rate_only = false;
  // The 64 B rate, responder and RTT windows each preceded by the protocol floor (paired
  // ratios); off (--paired-floor off) leaves only the transport's work in a profile.
  bool paired_floor = true;
};

// Baselines: same PMD, same frames, same machine, same run.
bool forward_baseline(const SuiteConfig& c, std::uint32_t payload, Results& out);
bool memcpy_bandwidth(const SuiteConfig& c, Results& out);
bool icrc_bandwidth(const SuiteConfig& c, Results& out);
bool memcpy_icrc_ceiling(const SuiteConfig& c, std::uint32_t payload, Results& out);
// One window of the ceiling into `big`; payload Gbit/s. `cursor`: where in `big` to start, and
// where this window stopped (short windows in turn still sweep a buffer larger than the LLC).
// `detail`, if given, gets the same bytes over this thread's CPU time (the time it was
// descheduled left out) and the best round of kRound frames (one the machine left alone).
struct CeilingDetail {
  double cpu_gbits = 0;
  double best_round_gbits = 0;
};
double ceiling_window(std::span<std::byte> big, std::uint32_t payload, double seconds, std::size_t* cursor = nullptr,
                      CeilingDetail* detail = nullptr);
// This thread's CPU time in seconds: on a shared machine a window's wall time includes the time
// the thread was descheduled, its CPU time does not.
double thread_cpu_seconds();
bool ring_pingpong(const SuiteConfig& c, Results& out);
// Build+seal and parse+verify of a 64 B WRITE_ONLY and of its ACK (ns per frame): the floor of
// the 64 B message rate and round trip. The transport cases measure it again right before each
// of their windows, so their ratios pair like with like on a machine whose load drifts. Each
// figure is the median timed chunk at the best of several stack placements (protocol_cost.cpp):
// neither the load nor the binary's and the process's memory layout move it.
struct ProtocolCost {
  double write_build = 0, write_parse = 0, ack_build = 0, ack_parse = 0;  // ns per frame
  double write_build_worst = 0;  // build+seal at the slowest placement
  bool valid = false;
  double write_mpps() const { return 1e3 / (write_build + write_parse); }
  double round_trip_us() const { return (write_build + write_parse + ack_build + ack_parse) / 1e3; }
};
// `icrc_linear`: the ICRC's header share from flow templates, as TransportTuning::icrc_linear.
ProtocolCost measure_protocol_cost(double seconds, bool icrc_linear);
bool protocol_cost(const SuiteConfig& c, Results& out);

// The transport.
bool responder_worker(const SuiteConfig& c, std::uint32_t payload, std::uint32_t message, Results& out);
bool goodput_sweep(const SuiteConfig& c, Results& out);
bool write_rtt(const SuiteConfig& c, Results& out);
bool loss_goodput(const SuiteConfig& c, Results& out);
bool cycles_per_packet(const SuiteConfig& c, Results& out);
// Issue 26 P5: one dataplane's 1 and 2 workers on their own lcores, receive-bound (scaling.cpp).
bool worker_scaling(const SuiteConfig& c, Results& out);
// Issue 26: the sender's work per 4 KiB WRITE packet, payload copied into the mbuf against
// referenced in place by an external-buffer mbuf (zero_copy.cpp).
bool zero_copy_transmit(const SuiteConfig& c, Results& out);
// One worker taking 64 B WRITEs from 1 to 16 QPs interleaved (scaling.cpp).
bool responder_fanout(const SuiteConfig& c, Results& out);

}  // namespace roce::bench
