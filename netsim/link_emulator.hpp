// A bump in the wire between two ports: every frame received on side X leaves on side Y and
// the other way round, through seeded, per-direction faults (link_faults.hpp): loss,
// duplication, a bottleneck queue with RED ECN marking and tail drop, delay, jitter and
// reordering. Poll mode, in bursts, with storage allocated once: the hot path neither
// allocates nor locks. Stepped by hand with poll(now) or run on an lcore.
//
// Duplicates are deep copies (rte_pktmbuf_copy from the emulator's own pool), not a second
// reference to the same mbuf: the bottleneck may set CE on one of the two and not the other,
// which a shared data buffer cannot express, and a reference count above 1 is what a PMD's
// MBUF_FAST_FREE path may not meet (the emulator leaves that offload off anyway: it sends mbufs
// of other pools).
// The copy costs a memcpy, paid only by the few frames a duplication rate picks.
//
// Ownership: every mbuf it takes is either sent, freed and counted, or held (queue, wire) and
// freed by the destructor. Received mbufs keep belonging to their pool (with net_ring ports,
// the sender's), so destroy the emulator before those pools, and only once the frames it sent
// (the duplicates come from its pool) have been drained by the receivers.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "dataplane/port.hpp"
#include "dataplane/tsc_clock.hpp"
#include "lib/status.hpp"
#include "netsim/delay_line.hpp"
#include "netsim/link_faults.hpp"

namespace roce::netsim {

struct LinkEmulatorOptions {
  std::string name = "emu0";  // names the pool
  dp::PortOptions x;           // opened here, promiscuous (a bump in the wire takes every frame), no fast free
  dp::PortOptions y;
  DirectionFaults x_to_y;
  DirectionFaults y_to_x;
  std::uint64_t seed = 1;
  std::uint32_t mbufs = 4095;  // receive buffers of ports that need them, and duplicates
  std::uint16_t mbuf_data_room = 4096 + 512 + RTE_PKTMBUF_HEADROOM;  // fits a whole frame: no chained copies
  std::uint32_t delay_line_frames = 8192;  // frames on the wire per direction (twice: in order, held back)
  unsigned rx_bursts_per_poll = 4;         // bursts taken from each port per poll
};

class LinkEmulator {
 public:
  static Result<std::unique_ptr<LinkEmulator>> create(const LinkEmulatorOptions& o);
  ~LinkEmulator();
  LinkEmulator(const LinkEmulator&) = delete;
  LinkEmulator& operator=(const LinkEmulator&) = delete;

  // One iteration: receive on both sides, run the queues, send what is due. `now` must not go
  // backwards. Returns frames received.
  unsigned poll(Nanos now);
  // One direction's share of poll(): receive what came in on its side, run its queue, send what
  // is due. For a caller that steps the emulator between its two ends on one thread (bench/suite
  // Rig::step: side X's poll, the emulator, side Y's poll, the emulator): after X's poll only
  // X -> Y has new frames, and what Y -> X would release then, X reads no earlier than after
  // Y's poll anyway; so polling X -> Y after X and Y -> X after Y delivers every frame at the
  // same step, in the same order, with the same fate (each direction draws from its own
  // generator, in its frames' order), at half the bursts and clock work of two full polls. Exact
  // only without a bottleneck queue (per_direction_exact()): a queue's tail-drop and RED
  // decisions see its occupancy, which a service of the other direction's queue in between
  // does not change but the caller then would have to prove; with one, call poll().
  unsigned poll(Direction d, Nanos now);
  bool per_direction_exact() const { return !paths_[0]->queue && !paths_[1]->queue; }
  Nanos now() const { return clock_.now(); }

  // On an lcore of its own: polls with the TSC clock until stop().
  Status launch(unsigned lcore);
  void run_on_this_thread();  // same loop on the calling thread; returns after stop()
  void stop() { stop_.store(true, std::memory_order_relaxed); }
  void wait();

  // Safe from any thread while the emulator runs.
  LinkStats stats(Direction d) const;
  // Frames in queues and on the wire (polling thread, or after wait()).
  std::size_t frames_held() const;
  // When the earliest held frame is due; kNever when nothing is held (polling thread).
  Nanos next_release() const;
  unsigned mbufs_in_use() const { return rte_mempool_in_use_count(pool_); }
  const dp::PortInfo& port(Direction from) const { return from == Direction::XtoY ? x_ : y_; }

 private:
  static constexpr std::uint16_t kBurstFrames = 32;

  // A uniform [0, 1) draw from a seeded mt19937_64, the same on every platform.
  struct Rng {
    explicit Rng(std::uint64_t seed) : gen(seed) {}
    double uniform() { return static_cast<double>(gen() >> 11) * 0x1.0p-53; }
    std::mt19937_64 gen;
  };

  struct Counters {
    std::array<std::atomic<std::uint64_t>, kLinkCounterCount> v{};
    // One writer (the polling thread): a relaxed load and store, not a locked add.
    void add(LinkCounter c, std::uint64_t n = 1) {
      auto& x = v[static_cast<std::size_t>(c)];
      x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void set(LinkCounter c, std::uint64_t n) { v[static_cast<std::size_t>(c)].store(n, std::memory_order_relaxed); }
  };

  struct alignas(RTE_CACHE_LINE_SIZE) Path {
    Path(const DirectionFaults& f, std::uint64_t seed, std::size_t line_frames);
    std::uint16_t in_port = 0;
    std::uint16_t out_port = 0;
    DirectionFaults faults;
    Rng rng;
    std::optional<cc::CongestionPoint<rte_mbuf*>> queue;
    DelayLine<rte_mbuf*> wire;  // in order: release times never decrease
    DelayLine<rte_mbuf*> held;  // held back by reorder_delay; in order among themselves
    Nanos last_release = 0;
    // Frames the egress port refused: they go first at the next poll, and until then nothing
    // else leaves (a full TX ring is a busy wire, not a loss).
    std::array<rte_mbuf*, kBurstFrames> pending{};
    std::uint16_t pending_count = 0;
    Counters counters;
  };

  LinkEmulator() = default;
  static int loop_main(void* arg);
  unsigned poll_path(Path& p, Nanos now);
  unsigned receive(Path& p, Nanos now);
  void admit(Path& p, rte_mbuf* m, Nanos now);
  void service_queue(Path& p, Nanos now);
  void put_on_wire(Path& p, rte_mbuf* m, Nanos departed);
  void mark_ce(Path& p, rte_mbuf* m);
  void release(Path& p, Nanos now);
  // False when the port took only part of them (the rest are pending).
  bool send(Path& p, rte_mbuf** frames, std::uint16_t n);
  void drop(Path& p, rte_mbuf* m, LinkCounter why);
  void free_held(Path& p);

  dp::TscClock clock_;
  rte_mempool* pool_ = nullptr;
  dp::PortInfo x_{};
  dp::PortInfo y_{};
  bool x_open_ = false;
  bool y_open_ = false;
  unsigned rx_bursts_ = 4;
  std::unique_ptr<Path> paths_[2];
  std::atomic<bool> stop_{false};
  int lcore_ = -1;
};

}  // namespace roce::netsim
