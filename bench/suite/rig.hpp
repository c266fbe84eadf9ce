// Two dataplanes (requester side A, responder side B), one worker each, joined by net_ring
// ports, directly or through the link emulator, stepped alternately on the calling thread:
// one lcore carries both sides' packet work. Or, between start_b() and stop_b(), side B and the
// emulator loop on a second lcore while the calling thread steps side A alone: then the round
// trip is a real one, not a whole iteration of the one loop. QPs are created in sets of N
// connected pairs.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "netsim/link_emulator.hpp"

namespace roce::bench {

using dp::Dataplane;
using netsim::LinkEmulator;

struct RigOptions {
  std::string tag;           // unique part of the DPDK object names
  double loss = -1;          // >= 0: put the link emulator between the sides, with this loss each way
  std::uint64_t seed = 1;
  std::uint32_t mbufs = 8191;
  rdma::TransportTuning tuning{};  // both engines
  // With the emulator: each way's bottleneck rate (0: none) and one-way delay, a path whose
  // round trip is the wire's, not the polling loop's.
  double rate_bps = 0;
  Nanos delay = 0;
};

// Rigs made after this call give their two sides one mbuf pool (on, the default: as ports of one
// NIC share a pool, each side receives its peer's frames in mbufs of its own pool and reuses them
// for its next frame, Worker::recycle) or a pool each (off: every received mbuf is the peer's
// and goes back to its pool). Before any rig is made (perf_suite's --shared-pool).
void rig_share_pool(bool on);

// Rigs made after this call that step the link emulator on one thread poll it one direction at
// a time where that is exact (on, the default: LinkEmulator::poll(Direction)) or both
// directions twice a step (off: sessions up to 21). Before any rig is made (perf_suite's
// --emulator-polls).
void rig_per_direction_polls(bool on);
// Rigs made after this call time the parts of each one-thread step (Rig::parts(); perf_suite's
// --loss-step-parts): five TSC reads a step more, so off by default.
void rig_time_parts(bool on);

// Side B's loop on its own lcore (start_b .. stop_b), summed over every start: iterations in
// which its worker received or sent a frame (busy) or did not (idle), the TSC cycles of each,
// and the thread's CPU time. Whether B is the bottleneck of the two-lcore rig, and what a
// frame costs it, counted rather than read from a wall clock the machine's load stretches.
struct LoopCount {
  std::uint64_t busy = 0, idle = 0;
  std::uint64_t busy_cycles = 0, idle_cycles = 0;
  std::uint64_t preempted = 0;  // iterations longer than kPreempted: the thread lost its core (left out of the cycles)
  static constexpr std::uint64_t kPreempted = 200'000;  // TSC cycles: no iteration's work takes that long
  void add(bool busy_step, std::uint64_t dt) {
    if (dt > kPreempted) {
      ++preempted;
    } else if (busy_step) {
      ++busy;
      busy_cycles += dt;
    } else {
      ++idle;
      idle_cycles += dt;
    }
  }
  std::uint64_t rx = 0, tx = 0;
  Nanos cpu = 0;
};

struct QpPair {
  rdma::QueuePair* a = nullptr;  // requester
  rdma::QueuePair* b = nullptr;  // responder
};

struct QpSetOptions {
  unsigned count = 1;
  ibv_mtu mtu = IBV_MTU_4096;
  std::uint32_t depth = 512;   // send and receive queue entries
  std::uint8_t timeout = 14;   // local ACK timeout: 4.096 us * 2^timeout (perftest's default)
  std::uint32_t selective_repeat = 0;  // reorder window on both ends (QueuePair::set_selective_repeat), 0 = go-back-N
};

class Rig {
 public:
  static std::unique_ptr<Rig> create(const RigOptions& o);
  ~Rig();

  Dataplane& a() { return *a_; }
  Dataplane& b() { return *b_; }
  rdma::Engine& ea() { return a_->worker(0).engine(); }
  rdma::Engine& eb() { return b_->worker(0).engine(); }
  rdma::CompletionQueue* cqa() const { return cqa_; }
  rdma::CompletionQueue* cqb() const { return cqb_; }
  rdma::PdHandle pda() const { return pda_; }
  rdma::PdHandle pdb() const { return pdb_; }
  LinkEmulator* emulator() { return emu_.get(); }

  // N freshly connected QP pairs (old ones stay; they are idle).
  std::vector<QpPair> connect(const QpSetOptions& o);
  // One iteration of each loop (and of the emulator); of side A's alone while B runs on its lcore.
  void step();
  // Side B and the emulator loop on `lcore` until stop_b(). False (with a message) when the
  // lcore cannot be launched. Between the two, only side A may be touched from this thread.
  bool start_b(unsigned lcore);
  void stop_b();
  bool b_remote() const { return b_lcore_ >= 0; }
  // Side B's loop, counted while it ran on its lcore (read after stop_b()).
  const LoopCount& b_loop() const { return b_loop_; }
  Nanos now() const { return a_->now(); }
  // Steps until both sides have nothing in flight for a while (between cases).
  void settle();
  // The TSC cycles of each part of step() on one thread, summed over the steps made while
  // rig_time_parts(true) was in force (steps of over LoopCount::kPreempted left out): where an
  // iteration's time goes, the link emulator's share apart (docs/loss.md, "Session 22 (loop22)").
  struct StepParts {
    std::uint64_t a = 0, link = 0, b = 0, steps = 0;
  };
  const StepParts& parts() const { return parts_; }

 private:
  Rig() = default;
  rte_mempool* pool_ = nullptr;  // both sides' (rig_share_pool), freed after them; else null
  std::unique_ptr<Dataplane> a_, b_;
  std::unique_ptr<LinkEmulator> emu_;
  rdma::CompletionQueue* cqa_ = nullptr;
  rdma::CompletionQueue* cqb_ = nullptr;
  rdma::PdHandle pda_ = 0, pdb_ = 0;
  std::uint32_t next_psn_ = 0x1000;
  bool time_parts_ = false;
  StepParts parts_;
  bool per_direction_ = false;  // step() polls the emulator one direction at a time
  int b_lcore_ = -1;  // the lcore side B runs on, -1: this thread
  std::atomic<bool> b_quit_{false};
  LoopCount b_loop_;
  static int b_main(void* rig);
  void poll_link(netsim::Direction d);
};

// RESET -> RTS towards `peer_qpn` at `peer_ip` (WRITE and READ allowed), and a QP on one CQ.
bool bring_up(rdma::Engine& e, rdma::QueuePair* qp, std::uint32_t peer_qpn, proto::Ipv4Addr peer_ip, const QpSetOptions& o,
              std::uint32_t rq_psn, std::uint32_t sq_psn);
rdma::QueuePair* make_qp(rdma::Engine& e, rdma::PdHandle pd, rdma::CompletionQueue* cq, std::uint32_t depth);
// A QP in RTR on a CQ of its own that takes the crafted WRITEs (bench/suite/frames.hpp) from
// the frame peer's QP `peer_qpn`, with the path MTU that fits `payload`; nullptr on failure.
rdma::QueuePair* make_write_target_qp(rdma::Engine& e, rdma::PdHandle pd, std::uint32_t peer_qpn, std::uint32_t payload);

// A buffer registered with one side (the caller owns and pre-touches the memory, so page
// faults stay out of the timings; one buffer may be registered with several rigs).
struct Region {
  std::span<std::byte> bytes;
  const rdma::MemoryRegion* mr = nullptr;
};
bool register_region(Dataplane& d, rdma::PdHandle pd, Region& r, std::span<std::byte> bytes);

// Drops, NAKs, errors the transport counted since creation (for the "healthy" check).
struct Health {
  std::uint64_t drops = 0, parse_drops = 0, errors = 0, retransmitted = 0, naks = 0, timeouts = 0, early_retransmits = 0;
  std::uint64_t window_cuts = 0, loss_events = 0, held = 0, placed = 0, sacks_sent = 0, tail_probes = 0;
  std::uint64_t pool_exhausted = 0, pool_bytes = 0;  // selective repeat: held requests dropped for want of a chunk; the reorder pool
};
Health health_of(const rdma::Engine& e);

}  // namespace roce::bench
