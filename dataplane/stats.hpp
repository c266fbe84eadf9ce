// What the dataplane counts, as plain snapshots: per QP (transport counters and DCQCN state),
// per engine, per worker lcore, per IO lcore and per port. Workers own their live counters and
// never lock on the packet path; every few milliseconds, from the poll loop, a worker copies
// them into a snapshot and publishes it (Published<T>: a swap under a mutex that only the
// publisher and readers such as the telemetry thread take).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/cc/counters.hpp"
#include "lib/rdma/counters.hpp"
#include "lib/rdma/engine.hpp"
#include "lib/rdma/qp_state.hpp"
#include "lib/time.hpp"

namespace roce::dp {

struct WorkerStats {
  std::uint64_t rx_packets = 0;
  std::uint64_t rx_bytes = 0;
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_dropped = 0;        // never taken by the port (only at shutdown, or ARP overflow)
  std::uint64_t rx_multi_segment = 0;  // chained mbufs: not taken (the pool is sized for one segment)
  std::uint64_t arp_replies = 0;
  std::uint64_t arp_requests_sent = 0;
  std::uint64_t ndp_advertisements = 0;   // Neighbor Advertisements sent in answer
  std::uint64_t ndp_solicitations_sent = 0;
  std::uint64_t ndp_invalid = 0;          // NS/NA failing RFC 4861 validation (checksum, hop limit, ...)
  std::uint64_t mbuf_alloc_failures = 0;
  std::uint64_t iterations = 0;
  std::uint64_t rx_handed_off = 0;       // arrived on this worker's queue, owned by another worker's QP
  std::uint64_t rx_handoff_dropped = 0;  // the owner's inbox was full (the transport retransmits)
  std::uint64_t rx_from_inbox = 0;       // handed to this worker by another
  std::uint64_t stalls = 0;              // gaps between iterations long enough to hold the timers
  std::uint64_t rx_overrun_frames = 0;   // the port's receive drops (imissed, rx_nombuf, af_packet ring) seen (overrun.hpp)
  std::uint64_t rx_overrun_ce_marks = 0; // arriving frames marked CE for them
  std::uint64_t rx_backlog_bursts = 0;     // RX bursts read with the queue's backlog above Kmin (rx_backlog.hpp)
  std::uint64_t rx_backlog_ce_marks = 0;   // frames marked CE for the backlog
  std::uint64_t rx_backlog_max_frames = 0; // the deepest backlog seen (frames), while backlog marking is on
  std::uint64_t rx_bursts_grouped = 0;     // RX bursts whose frames were put in runs by QP (qp_runs.hpp)
};

struct IoStats {
  std::uint64_t rx_packets = 0;
  std::uint64_t tx_packets = 0;
  std::uint64_t steered = 0;
  std::uint64_t not_roce = 0;        // neither ARP nor UDP 4791: dropped here
  std::uint64_t unknown_worker = 0;  // QPN outside every worker's shard
  std::uint64_t worker_ring_full = 0;
  std::uint64_t tx_dropped = 0;
  std::uint64_t rx_overrun_frames = 0;    // as WorkerStats: the IO lcore reads the port in pipeline mode
  std::uint64_t rx_overrun_ce_marks = 0;
  std::uint64_t rx_backlog_bursts = 0;  // as WorkerStats
  std::uint64_t rx_backlog_ce_marks = 0;
  std::uint64_t rx_backlog_max_frames = 0;
};

inline constexpr std::size_t kEngineDropCount = static_cast<std::size_t>(rdma::EngineDrop::Count);
inline constexpr std::size_t kParseErrorCount = static_cast<std::size_t>(proto::ParseError::Count);

struct QpStats {
  std::uint32_t qpn = 0;
  unsigned worker = 0;
  ibv_qp_type type = IBV_QPT_RC;
  rdma::QpState state = rdma::QpState::Reset;
  std::uint32_t dest_qpn = 0;
  std::uint32_t pmtu = 0;
  rdma::Counters counters;
  // DCQCN: present on RC/UC QPs when the engine runs congestion control.
  bool dcqcn = false;
  bool cc_active = false;  // a CNP was seen and the reaction point's timers run
  double rc_bps = 0;
  double rt_bps = 0;
  double alpha = 0;
  cc::RpCounters rp;
  cc::NpCounters np;
};

struct EngineStats {
  std::uint64_t received = 0;
  std::uint32_t qps = 0;
  std::array<std::uint64_t, kEngineDropCount> drops{};
  std::array<std::uint64_t, kParseErrorCount> parse_drops{};
  rdma::Counters counters;  // every QP's, destroyed QPs included
  cc::CcCounters cc;  // DCQCN sums over the live QPs
  void add(const EngineStats& o);
};

struct WorkerSnapshot {
  unsigned worker = 0;
  int lcore = -1;              // the lcore that published it; -1 for a thread that is not an EAL lcore
  std::uint64_t sequence = 0;  // publications so far; 0 = nothing published yet
  Nanos taken_at = 0;          // dataplane clock
  WorkerStats stats;
  EngineStats engine;
  std::vector<QpStats> qps;
};

struct IoSnapshot {
  int lcore = -1;
  std::uint64_t sequence = 0;
  Nanos taken_at = 0;
  IoStats stats;
};

// rte_eth_stats of a port.
struct PortStats {
  std::uint64_t ipackets = 0;
  std::uint64_t opackets = 0;
  std::uint64_t ibytes = 0;
  std::uint64_t obytes = 0;
  std::uint64_t imissed = 0;
  std::uint64_t ierrors = 0;
  std::uint64_t oerrors = 0;
  std::uint64_t rx_nombuf = 0;
};

std::optional<PortStats> read_port_stats(std::uint16_t port);

// The calling thread's EAL lcore id, or -1 for a thread that is not an lcore.
int current_lcore();

// Copies an engine's counters and every live QP's into `out`, reusing its storage.
void collect(const rdma::Engine& engine, unsigned worker, WorkerSnapshot& out);
void collect(const rdma::QueuePair& qp, unsigned worker, QpStats& out);

// The last value a single owner published; readers on any thread get a consistent copy.
template <typename T>
class Published {
 public:
  explicit Published(T initial = T{}) : value_(std::move(initial)) {}
  // Swaps `fresh` in; `fresh` gets the previous value back, so its storage is reused and the
  // owner allocates nothing once its vectors have grown.
  void publish(T& fresh) {
    std::lock_guard lock(mutex_);
    std::swap(value_, fresh);
  }
  T read() const {
    std::lock_guard lock(mutex_);
    return value_;
  }

 private:
  mutable std::mutex mutex_;
  T value_;
};

std::string qp_type_name(ibv_qp_type t);

}  // namespace roce::dp
