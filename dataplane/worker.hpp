// A transport worker: one lcore, one Engine, one RX/TX queue pair. Each iteration receives a
// burst, hands RoCEv2 frames to the engine (ARP and NDP to their responders), runs the application
// hook and the timers, then fills at most one burst of fresh mbufs with whatever the engine has
// to send. Built frames go out a full burst at once, a partial one at the end of the iteration
// that built it. A port that takes fewer frames than offered holds the engine back
// (backpressure) instead of losing them.
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "dataplane/arp.hpp"
#include "dataplane/ndp.hpp"
#include "dataplane/overrun.hpp"
#include "dataplane/rx_backlog.hpp"
#include "dataplane/stats.hpp"
#include "dataplane/steering.hpp"
#include "dataplane/write_prefetch.hpp"
#include "lib/rdma/engine.hpp"

namespace roce::dp {

inline constexpr unsigned kBurst = 32;

struct WorkerConfig {
  std::uint16_t port = 0;
  std::uint16_t queue = 0;
  // Pipeline mode: frames come from and go to an IO lcore over these rings instead of the port.
  rte_ring* rx_ring = nullptr;
  rte_ring* tx_ring = nullptr;
  // Run-to-completion with several workers on a multi-queue port: RSS (or the peer) decides
  // the queue, steering (steering.hpp) the owner. A frame another worker owns goes to that
  // worker's inbox (shard_inboxes[owner]); this worker drains its own `inbox`.
  rte_ring* inbox = nullptr;
  std::vector<rte_ring*> shard_inboxes;
  rdma::QpnShards shards;  // the dataplane's QPN rule (engine.qpns)
  rte_mempool* pool = nullptr;
  rdma::EngineConfig engine;
  Nanos tx_flush_ns = 20 * kMicro;
  Nanos stats_interval_ns = 10 * kMilli;  // how often the loop publishes a stats snapshot
  // A longer gap between two iterations is a stall of this lcore, not of the network: the
  // transport's timers wait until what arrived meanwhile has been read.
  Nanos stall_ns = 200 * kMicro;
  unsigned index = 0;                     // this worker's number in its dataplane
  // Receive overruns marked CE (overrun.hpp): set on the one worker per port that reads them
  // (worker 0 in run-to-completion; in pipeline mode the IO loop reads the port). Empty: none.
  PortDropReader port_drops;
  OverrunConfig overrun{};
  // Marks from the RX queue's backlog (rx_backlog.hpp), on every worker that reads a port queue.
  BacklogConfig backlog{};
  bool ipv4_checksum_offload = false;
  // A burst's frames grouped by destination QP before the engine takes them (qp_runs.hpp), so
  // that each QP's frames make one run; false: as they came (perf_suite --qp-runs off).
  bool group_qp_runs = true;
};

class Worker {
 public:
  Worker(WorkerConfig cfg, rdma::MrTable& mrs, ArpCache& arp, NeighborCache& neighbors);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // One poll-loop iteration at time `now`. Returns frames received. `send` false: the
  // iteration ends before building and sending the engine's frames (what the engine owes stays
  // owed until the next full iteration): the verbs device holds the ACK of a frame its program
  // is about to answer, so that both leave in one burst. The worker's own frames (ARP and NDP
  // answers, solicitations) still leave in that iteration.
  unsigned poll(Nanos now, bool send = true);
  // Sends everything buffered (graceful stop, tests).
  void flush();
  // Frees what the port never took (shutdown), counting it as dropped.
  void drop_pending();
  // Gives the mbufs kept for the next transmit back to the pool (leak checks, shutdown).
  void release_stash();

  rdma::Engine& engine() { return engine_; }
  // Live counters: read them only on the worker's own thread (or while it is stopped).
  const WorkerStats& stats() const { return stats_; }

  // Copies the live counters into the published snapshot. Runs on the worker's thread: from
  // poll() every stats_interval_ns, at loop exit, or when stepped by hand.
  void publish_stats(Nanos now);
  // The last published snapshot; safe from any thread.
  WorkerSnapshot published_stats() const { return published_.read(); }
  std::uint64_t published_sequence() const { return published_seq_.load(std::memory_order_acquire); }
  const WorkerConfig& config() const { return cfg_; }

  // Runs once per iteration on the worker's lcore (the application's verbs work: post WRs,
  // poll CQs). Not per packet.
  std::function<void(rdma::Engine&, Nanos)> app_hook;

  // Runs `fn` on the worker's thread at the start of its next iteration (control path).
  void post_command(std::function<void(rdma::Engine&)> fn);
  // Sends an ARP request for `ip` from this worker's queue at its next iteration.
  void request_arp(const proto::Ipv4Addr& ip);
  // Asks the link for a peer's MAC: an ARP request (IPv4) or a Neighbor Solicitation (IPv6).
  void solicit(const rdma::IpAddress& ip);

  // Frames taken per RX burst, 0..kBurst (default kBurst). 0 leaves arriving frames queued
  // while timers and transmissions still run: a capture replay (apps/replay) takes frames one
  // at a time, each at its capture time. Set from the thread that polls.
  void set_rx_burst(unsigned n) {
    rx_burst_ = n < kBurst ? n : kBurst;
    plain_rx_ = rx_burst_ == kBurst && cfg_.rx_ring == nullptr && !backlog_.enabled() && cfg_.shard_inboxes.empty();
  }
  unsigned rx_burst() const { return rx_burst_; }

 private:
  // Hands the burst's frames that another worker owns to their inboxes; returns how many of
  // `rx` are left (this worker's, at its front).
  unsigned hand_off_foreign(rte_mbuf** rx, unsigned n);
  // Handles and frees frames this worker owns; `count`: they came from its queue (not its inbox).
  void receive(rte_mbuf** rx, unsigned n, Nanos now, bool count);
  // receive()'s grouping of `rx` by destination QP (group_qp_runs); the burst's heads read.
  // Returns whether the burst interleaved QPs (then it was grouped).
  bool group_runs(rte_mbuf** rx, unsigned n);
  void receive_one(rte_mbuf* m, Nanos now, bool count);  // receive() of a burst of one
  void receive_whole(rte_mbuf** rx, unsigned n, Nanos now, bool count);  // ... of one not grouped
  // One single-segment frame this worker owns: IPv4 to the engine, the rest to deliver().
  void receive_frame(std::span<const std::byte> frame, Nanos now);
  // poll()'s RX step when the worker is not plain_rx_; returns the frames read from its queue.
  unsigned receive_general(rte_mbuf** rx, Nanos now);
  // A frame this worker owns: ARP to answer_arp, NDP to answer_ndp, the rest to the engine
  // (which counts what is not RoCEv2 as a parse drop).
  void deliver(std::span<const std::byte> frame, FrameClass cls, Nanos now);
  // The one place ARP is answered (and its sender learnt).
  void answer_arp(std::span<const std::byte> frame);
  // The one place Neighbor Solicitations are answered (and NS/NA senders learnt).
  void answer_ndp(std::span<const std::byte> frame);
  void send_control(std::span<const std::byte> frame);
  bool timers_due(bool stalled, unsigned received, unsigned burst);
  void housekeep(Nanos now);
  // Called with send work (Engine::has_tx_work) and room in pending_.
  // `busy_iteration`: this iteration's RX burst came back full, and the last iteration took
  // this long (a plain ACK may wait to cover more: Engine::transmit); kNever otherwise.
  void transmit(Nanos now, Nanos busy_iteration);
  // A frame of the worker's own (ARP, NDP) to the pending queue (counted as dropped when full).
  void send_frame(rte_mbuf* m);
  // Hands the pending frames to the port; true once none is left. Inline: most calls (three
  // an iteration) find nothing pending.
  bool push_out() { return pending_count_ == 0 || push_pending(); }
  bool push_pending();
  bool hand_to_port();  // push_pending's body, inline in poll()
  void run_commands();
  rte_mbuf* take_mbuf();
  // A received mbuf the engine is done with (after end_receive_burst): the stash's next fresh
  // mbuf when it is a plain mbuf of this worker's pool (mbuf_burst.hpp: one segment, direct,
  // refcnt 1, so no one else holds it) and the stash has room; freed otherwise. A pool put now
  // and a get at the next refill saved (docs/perf-changes.md section 63).
  void recycle(rte_mbuf* m);
  // recycle() for a received burst: its front mbufs, as many as the stash has room for, when
  // every one of those is plain of the pool; the rest (or all) freed as free_burst frees them.
  void recycle_burst(rte_mbuf** m, unsigned n);
  // A plain mbuf of the pool (plain_mbuf_of passed) as the stash's front entry, in the state
  // rte_pktmbuf_alloc gives (reset_plain).
  void keep_in_stash(rte_mbuf* m);
  // A burst of mbufs from the pool below the stash's live entries (room: at most kBurst left).
  bool refill_stash();
  unsigned stash_count() const { return static_cast<unsigned>(stash_.size()) - stash_at_; }

  WorkerConfig cfg_;
  Steering steering_;
  rdma::Engine engine_;
  WriteDestinations destinations_;  // the RX loop's destination prefetches (the last region remembered)
  ArpCache& arp_;
  NeighborCache& neighbors_;
  WorkerStats stats_;
  std::array<rte_mbuf*, 4 * kBurst> pending_{};  // built frames the port has not taken yet
  unsigned pending_count_ = 0;
  // A frame of the worker's own (send_frame: ARP, NDP) may be among them: a step that holds the
  // engine's frames (poll's `send` false) still pushes them out.
  bool control_queued_ = false;
  Nanos last_flush_ = 0;
  Nanos last_poll_ = 0;
  Nanos stall_after_ = 0;      // cfg_.stall_ns, at least 0
  Nanos housekeeping_at_ = 0;  // from here on a poll checks the flush and publication timers
  // The RX step is the port queue's full burst, the overrun marking and the frames' delivery,
  // nothing more: a whole burst asked for, no IO loop ring, no backlog marking, no other
  // workers' frames (set_rx_burst).
  bool plain_rx_ = false;
  unsigned timers_held_ = 0;  // iterations left before the transport's timers run regardless
  // Grouping reads every head of a burst before its first frame is handled, a wait the frame by
  // frame prefetches otherwise hide: it is done while bursts interleave QPs, and on every 16th
  // burst to find out whether they have begun to (group_qp_runs).
  bool rx_interleaved_ = false;
  unsigned rx_check_in_ = 1;  // bursts until the next check (the first burst is checked)
  std::array<rte_mbuf*, kBurst> arrival_{};  // a grouped burst in the order it came
  // Fresh mbufs, refilled a burst at a time (or one received mbuf at a time: recycle); the live
  // ones are [stash_at_, end), taken from the front. stash_frames_[i] is stash_[i]'s data room as Engine::transmit wants it, written once
  // when the mbuf came from the pool: the engine is offered the front entries where they lie and
  // those it filled leave, so an mbuf offered and not used is not described again next time
  // (at queue depth 1 four were offered for the one used; docs/perf-changes.md section 45).
  std::array<rte_mbuf*, 2 * kBurst> stash_{};
  std::array<rdma::TxFrame, 2 * kBurst> stash_frames_{};
  unsigned stash_at_ = 2 * kBurst;
  // Frames offered to the engine per call: as many as it filled last time (at least a few),
  // so a lone ACK does not cost a burst of mbuf headers read and handed back.
  unsigned tx_offer_ = kBurst;
  std::uint32_t frame_capacity_ = 0;
  unsigned rx_burst_ = kBurst;
  // A ring port's RX ring (ring_port.hpp): while it is empty the poll does not call the PMD.
  rte_ring* port_rx_ring_ = nullptr;
  OverrunMarking overrun_;
  BacklogMarking backlog_;

  Nanos last_publish_ = 0;
  std::uint64_t publications_ = 0;
  std::atomic<std::uint64_t> published_seq_{0};
  WorkerSnapshot scratch_;  // filled without a lock, then swapped with the published one
  Published<WorkerSnapshot> published_;

  std::atomic<bool> has_commands_{false};
  std::mutex commands_mutex_;
  std::vector<std::function<void(rdma::Engine&)>> commands_;
  std::vector<rdma::IpAddress> solicit_wanted_;
};

}  // namespace roce::dp
