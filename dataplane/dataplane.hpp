// The dataplane: a port, an mbuf pool, and the transport workers that serve it, either one
// lcore doing everything (run to completion) or an IO lcore feeding workers over rte_rings
// (pipeline). QPs are sharded across workers by QPN. Runs on its own lcores or is stepped
// by hand (tests).
#pragma once

#include <rte_mempool.h>
#include <rte_ring.h>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/io_loop.hpp"
#include "dataplane/port.hpp"
#include "dataplane/port_drops.hpp"
#include "dataplane/report.hpp"
#include "dataplane/tsc_clock.hpp"
#include "dataplane/worker.hpp"

namespace roce::dp {

enum class Mode : std::uint8_t { RunToCompletion, Pipeline };

struct DataplaneOptions {
  std::string name = "dp0";     // [A-Za-z0-9_]: names its pool, rings and telemetry entries
  PortOptions port;
  rdma::IpAddress ip = rdma::IpAddress::ipv4({10, 0, 0, 1});
  std::optional<proto::MacAddr> mac;  // default: the port's MAC
  unsigned workers = 1;
  Mode mode = Mode::RunToCompletion;
  std::uint32_t mbufs = 8191;
  std::uint16_t mbuf_data_room = 4096 + 512 + RTE_PKTMBUF_HEADROOM;
  // A pktmbuf pool the caller made and frees after this dataplane (`mbufs` and `mbuf_data_room`
  // are then not used): dataplanes in one process that share it, as ports on one NIC share a
  // pool, receive each other's frames in mbufs of their own pool, which a worker reuses for its
  // next transmitted frame (Worker::recycle). Null: the dataplane makes its own.
  rte_mempool* pool = nullptr;
  std::uint32_t ring_size = 4096;
  // Per-worker engine settings. Addresses are set here; worker w is shard w of
  // QpnShards{engine.qpns.base, workers}: it hands out QPNs base + w + k * workers.
  rdma::EngineConfig engine;
  std::uint32_t max_mrs = 4096;  // memory regions, all workers together (the MR limit)
  Nanos tx_flush_ns = 20 * kMicro;
  Nanos stats_interval_ns = 10 * kMilli;  // how often each loop publishes its counters
  // The port's receive overruns marked CE by the loop that reads the port (overrun.hpp);
  // check_interval 0: not read, nothing marked. `port_drops` empty: the port's own counters
  // (PortDrops); a test, or a port whose drops are counted elsewhere, gives its own reader.
  OverrunConfig overrun{};
  PortDropReader port_drops;
  // Marks from the RX queues' backlog, before they overflow (rx_backlog.hpp); off by default.
  BacklogConfig backlog{};
  // Each worker's RX bursts grouped by destination QP (WorkerConfig::group_qp_runs, qp_runs.hpp).
  bool group_qp_runs = true;
};

class Dataplane {
 public:
  static Result<std::unique_ptr<Dataplane>> create(const DataplaneOptions& o);
  ~Dataplane();
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  const std::string& name() const { return name_; }
  Mode mode() const { return mode_; }
  unsigned worker_count() const { return static_cast<unsigned>(workers_.size()); }
  Worker& worker(unsigned i) { return *workers_[i]; }
  // The worker that owns a QPN (steering.hpp's rule); none below the QPN base but QP1.
  std::optional<unsigned> owner_of(std::uint32_t qpn) const;
  rdma::MrTable& memory() { return mrs_; }
  ArpCache& arp() { return arp_; }
  NeighborCache& neighbors() { return neighbors_; }
  // Teaches the right cache (ARP or NDP) a peer's MAC (tests, two dataplanes in one process).
  void learn(const rdma::IpAddress& ip, const proto::MacAddr& mac);
  const PortInfo& port() const { return port_; }
  const rdma::LocalAddress& local() const { return local_; }
  rte_mempool* pool() const { return pool_; }
  const IoStats* io_stats() const { return io_ ? &io_->stats() : nullptr; }
  Nanos now() const { return clock_.now(); }

  // The MAC of a peer: from the ARP or neighbour cache, else by asking on the link (ARP
  // request, Neighbor Solicitation) for up to `wait`.
  // Needs the dataplane to be running (launched or stepped from another thread).
  std::optional<proto::MacAddr> resolve(const rdma::IpAddress& ip, Nanos wait);
  // The cached MAC of a peer, asking nobody.
  std::optional<proto::MacAddr> cached(const rdma::IpAddress& ip) const;

  // Stepping by hand: every loop polls once. When another thread does the stepping (several
  // dataplanes sharing one polling lcore), say so, so that call() goes through the mailbox.
  // Inline for a run-to-completion dataplane of one worker (every rig and test, one QP's
  // round trip takes four of these): one clock read and the worker's poll.
  void poll_once() {
    if (sole_ != nullptr) sole_->poll(clock_.now());
    else poll_every_loop();
  }
  void set_driven_by_other_thread(bool on) { driven_elsewhere_ = on; }
  void flush();

  // Running on lcores: each loop gets one of `lcores` (worker lcores, not the main one); with
  // one lcore too few, the last loop runs in run() on the calling (main) lcore.
  Status launch(const std::vector<unsigned>& lcores);
  void run_on_this_thread();  // returns after stop()
  void stop();                // graceful: RX stops, TX is flushed, final counters are published
  void wait();                // joins the launched lcores
  bool running() const { return running_.load(std::memory_order_relaxed); }
  // The loops also stop when `flag` becomes true (StopSignals::flag() for SIGINT/SIGTERM).
  // Set it before launch(); the flag must outlive the dataplane.
  void watch_stop_flag(const std::atomic<bool>* flag) { external_stop_ = flag; }

  // Observability. Every loop publishes a snapshot of its counters every stats_interval_ns
  // and when it stops. publish_stats() makes the workers publish now: directly when stepped
  // by hand, through their command queue (waiting for it) when launched.
  void publish_stats();
  // What the loops last published plus the port's rte_eth_stats; safe from any thread.
  DataplaneSnapshot snapshot() const;
  // The JSON report of snapshot(), fresh: when stepped by hand it publishes first; when
  // launched, call it after wait() for final figures (else they are up to one interval old).
  std::string report_json();

  // Runs `fn(engine)` on the owning worker's thread and returns its result.
  template <typename Fn>
  auto call(unsigned worker, Fn&& fn) -> decltype(fn(std::declval<rdma::Engine&>())) {
    using R = decltype(fn(std::declval<rdma::Engine&>()));
    if (!launched_ && !driven_elsewhere_) return fn(workers_[worker]->engine());
    auto task = std::make_shared<std::packaged_task<R(rdma::Engine&)>>(std::forward<Fn>(fn));
    auto fut = task->get_future();
    workers_[worker]->post_command([task](rdma::Engine& e) { (*task)(e); });
    return fut.get();
  }

  // mbufs currently out of the pool (for leak checks).
  unsigned mbufs_in_use() const;

 private:
  void poll_every_loop();
  explicit Dataplane(std::size_t max_mrs) : mrs_(max_mrs) {}
  static int loop_main(void* arg);
  struct Loop {
    Dataplane* dp;
    int index;  // -1 = IO loop, else worker index
  };
  void run_loop(int index);
  bool stopping() const {
    return stop_.load(std::memory_order_relaxed) ||
           (external_stop_ != nullptr && external_stop_->load(std::memory_order_relaxed));
  }

  std::string name_;
  Mode mode_ = Mode::RunToCompletion;
  TscClock clock_;
  rdma::QpnShards shards_;
  PortInfo port_{};
  rdma::LocalAddress local_{};
  rte_mempool* pool_ = nullptr;
  bool owns_pool_ = false;  // made here (DataplaneOptions::pool null), freed here
  rdma::MrTable mrs_;
  ArpCache arp_;
  NeighborCache neighbors_;
  std::unique_ptr<PortDrops> port_drops_;  // read by one loop only (worker 0 or the IO loop)
  std::vector<rte_ring*> rings_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<IoLoop> io_;
  Worker* sole_ = nullptr;  // the only worker, with no IO loop: poll_once calls it alone
  std::vector<Loop> loops_;
  std::vector<unsigned> launched_lcores_;
  bool launched_ = false;
  std::atomic<bool> driven_elsewhere_{false};
  bool port_open_ = false;
  int main_loop_ = -2;  // loop index the main lcore runs in run_on_this_thread(); -2 = none
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  const std::atomic<bool>* external_stop_ = nullptr;
  std::atomic<unsigned> workers_looping_{0};  // worker loops still running (the IO loop drains until 0)
  bool attached_ = false;                     // listed in the telemetry commands
};

std::string to_string(Mode m);

}  // namespace roce::dp
