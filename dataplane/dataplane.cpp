#include "dataplane/dataplane.hpp"

#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <thread>

#include "dataplane/telemetry.hpp"

namespace roce::dp {

using namespace roce::proto;

Result<std::unique_ptr<Dataplane>> Dataplane::create(const DataplaneOptions& o) {
  if (o.workers == 0 || o.workers > kMaxWorkers)
    return make_error(EINVAL, "workers must be 1.." + std::to_string(kMaxWorkers));
  if (o.name.empty() || o.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    return make_error(EINVAL, "dataplane name '" + o.name + "' must be letters, digits and '_' (it names pools, rings and telemetry keys)");
  if (o.stats_interval_ns <= 0) return make_error(EINVAL, "stats_interval_ns must be positive");
  if (o.engine.qpns.base < 2 || o.engine.qpns.base > 0xFFFFFF)
    return make_error(EINVAL, "engine.qpns.base must be 2..0xFFFFFF (QPs 0 and 1 are special)");
  if (o.max_mrs == 0) return make_error(EINVAL, "max_mrs must be at least 1");
  if (const auto why = check(o.backlog)) return make_error(EINVAL, *why);
  std::unique_ptr<Dataplane> dp(new Dataplane(o.max_mrs));
  dp->name_ = o.name;
  dp->mode_ = o.mode;
  dp->shards_ = rdma::QpnShards{o.engine.qpns.base, o.workers};
  const std::string pool_name = o.name + "_pool";
  dp->owns_pool_ = o.pool == nullptr;
  dp->pool_ = o.pool ? o.pool : rte_pktmbuf_pool_create(pool_name.c_str(), o.mbufs, 256, 0, o.mbuf_data_room, SOCKET_ID_ANY);
  if (dp->pool_ == nullptr)
    return make_error(rte_errno, "cannot create mbuf pool '" + pool_name + "' of " + std::to_string(o.mbufs) + " x " +
                                     std::to_string(o.mbuf_data_room) + " B: " + rte_strerror(rte_errno) +
                                     " (give DPDK more memory with -m, or use fewer mbufs)");
  PortOptions po = o.port;
  po.queues = o.mode == Mode::Pipeline ? 1 : static_cast<std::uint16_t>(o.workers);
  auto port = open_port(po, dp->pool_);
  if (!port) return port.error();
  dp->port_ = *port;
  dp->port_open_ = true;
  dp->local_.mac = o.mac.value_or(dp->port_.mac);
  PortDropReader port_drops = o.overrun.check_interval > 0 ? o.port_drops : PortDropReader{};
  if (o.overrun.check_interval > 0 && !port_drops) {
    dp->port_drops_ = std::make_unique<PortDrops>(dp->port_.id);
    port_drops = [d = dp->port_drops_.get()] { return d->read(); };
  }
  dp->local_.ip = o.ip;
  if (o.ip.version == IpVersion::V6) {
    if (Status s = join_multicast(dp->port_.id, multicast_mac(solicited_node_multicast(o.ip.v6))); !s) return s.error();
  }

  // Run-to-completion over several queues: each worker gets an inbox for frames that reach
  // another worker's queue but belong to its QPs.
  std::vector<rte_ring*> inboxes;
  if (o.mode == Mode::RunToCompletion && o.workers > 1) {
    for (unsigned w = 0; w < o.workers; ++w) {
      const std::string name = o.name + "_w" + std::to_string(w) + "_in";
      rte_ring* r = rte_ring_create(name.c_str(), o.ring_size, SOCKET_ID_ANY, RING_F_SC_DEQ);
      if (!r) return make_error(rte_errno, "cannot create worker inbox " + name + ": " + rte_strerror(rte_errno));
      dp->rings_.push_back(r);
      inboxes.push_back(r);
    }
  }
  for (unsigned w = 0; w < o.workers; ++w) {
    WorkerConfig wc;
    if (!inboxes.empty()) {
      wc.inbox = inboxes[w];
      wc.shard_inboxes = inboxes;
    }
    wc.shards = dp->shards_;
    wc.port = dp->port_.id;
    wc.queue = o.mode == Mode::Pipeline ? 0 : static_cast<std::uint16_t>(w);
    wc.pool = dp->pool_;
    wc.tx_flush_ns = o.tx_flush_ns;
    wc.stats_interval_ns = o.stats_interval_ns;
    wc.index = w;
    if (w == 0 && o.mode == Mode::RunToCompletion) wc.port_drops = port_drops;
    wc.overrun = o.overrun;
    wc.backlog = o.backlog;
    wc.group_qp_runs = o.group_qp_runs;
    wc.engine = o.engine;
    wc.engine.path.local = dp->local_;
    wc.engine.qpns = dp->shards_;
    wc.engine.shard = w;
    Dataplane* self = dp.get();
    if (!wc.engine.path.resolve_mac)
      wc.engine.path.resolve_mac = [self](const rdma::IpAddress& ip) -> std::optional<MacAddr> { return self->cached(ip); };
    if (o.mode == Mode::Pipeline) {
      const std::string rx = o.name + "_w" + std::to_string(w) + "_rx", tx = o.name + "_w" + std::to_string(w) + "_tx";
      wc.rx_ring = rte_ring_create(rx.c_str(), o.ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
      wc.tx_ring = rte_ring_create(tx.c_str(), o.ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
      if (!wc.rx_ring || !wc.tx_ring)
        return make_error(rte_errno, "cannot create worker rings for " + o.name + ": " + rte_strerror(rte_errno));
      dp->rings_.push_back(wc.rx_ring);
      dp->rings_.push_back(wc.tx_ring);
    }
    dp->workers_.push_back(std::make_unique<Worker>(wc, dp->mrs_, dp->arp_, dp->neighbors_));
  }
  if (o.mode == Mode::Pipeline) {
    IoConfig io;
    io.port = dp->port_.id;
    io.shards = dp->shards_;
    io.stats_interval_ns = o.stats_interval_ns;
    io.port_drops = port_drops;
    io.overrun = o.overrun;
    io.backlog = o.backlog;
    for (auto& w : dp->workers_) {
      io.worker_rx.push_back(w->config().rx_ring);
      io.worker_tx.push_back(w->config().tx_ring);
    }
    dp->io_ = std::make_unique<IoLoop>(io);
    dp->loops_.push_back({dp.get(), -1});
  }
  for (unsigned w = 0; w < o.workers; ++w) dp->loops_.push_back({dp.get(), static_cast<int>(w)});
  if (dp->io_ == nullptr && dp->workers_.size() == 1) dp->sole_ = dp->workers_[0].get();
  telemetry_attach(dp.get());
  dp->attached_ = true;
  return dp;
}

Dataplane::~Dataplane() {
  if (attached_) telemetry_detach(this);  // first: no telemetry read may see what follows
  stop();
  wait();
  sole_ = nullptr;
  workers_.clear();  // returns stashed mbufs and flushes
  io_.reset();
  if (port_open_) close_port(port_.id);
  for (rte_ring* r : rings_) {
    rte_mbuf* m;
    while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
    rte_ring_free(r);
  }
  if (owns_pool_) rte_mempool_free(pool_);
}

std::optional<unsigned> Dataplane::owner_of(std::uint32_t qpn) const { return shards_.owner(qpn); }

void Dataplane::poll_every_loop() {
  const Nanos t = clock_.now();
  if (io_) io_->poll(t);
  for (auto& w : workers_) w->poll(t);
  if (io_) io_->drain_tx();
}

void Dataplane::flush() {
  for (auto& w : workers_) w->flush();
  if (io_) io_->drain_tx();
}

void Dataplane::run_loop(int index) {
  if (index < 0) {
    while (!stopping()) io_->poll(clock_.now());
    // RX has stopped; let the workers' last frames out until every worker loop has flushed
    // (bounded, in case a worker loop was never started on the main lcore).
    const Nanos deadline = clock_.now() + 100 * kMilli;
    while (workers_looping_.load(std::memory_order_acquire) > 0 && clock_.now() < deadline) io_->drain_tx();
    for (int i = 0; i < 8; ++i) io_->drain_tx();
    io_->publish_stats(clock_.now());
    return;
  }
  Worker& w = *workers_[static_cast<std::size_t>(index)];
  while (!stopping()) w.poll(clock_.now());
  w.flush();
  w.publish_stats(clock_.now());
  workers_looping_.fetch_sub(1, std::memory_order_release);
}

int Dataplane::loop_main(void* arg) {
  auto* l = static_cast<Loop*>(arg);
  l->dp->run_loop(l->index);
  return 0;
}

Status Dataplane::launch(const std::vector<unsigned>& lcores) {
  if (launched_) return make_error(EALREADY, "dataplane already launched");
  const std::size_t need = loops_.size();
  if (lcores.size() + 1 < need)
    return make_error(EINVAL, "too few lcores: " + std::to_string(need) + " loops (" +
                                  std::string(io_ ? "1 IO + " : "") + std::to_string(workers_.size()) +
                                  " workers) need " + std::to_string(need - 1) + " worker lcores besides the main one, have " +
                                  std::to_string(lcores.size()) + " (use -l 0-" + std::to_string(need - 1) + ")");
  stop_ = false;
  running_ = true;
  launched_ = true;
  workers_looping_ = static_cast<unsigned>(workers_.size());
  std::size_t i = 0;
  for (; i < need && i < lcores.size(); ++i) {
    if (int rc = rte_eal_remote_launch(&Dataplane::loop_main, &loops_[i], lcores[i]); rc != 0) {
      stop();
      wait();
      return make_error(-rc, "cannot launch on lcore " + std::to_string(lcores[i]) + ": " + rte_strerror(-rc));
    }
    launched_lcores_.push_back(lcores[i]);
  }
  main_loop_ = i < need ? static_cast<int>(i) : -2;
  return {};
}

void Dataplane::run_on_this_thread() {
  if (main_loop_ != -2) run_loop(loops_[static_cast<std::size_t>(main_loop_)].index);
  wait();
}

void Dataplane::stop() { stop_.store(true, std::memory_order_relaxed); }

void Dataplane::wait() {
  for (unsigned l : launched_lcores_) rte_eal_wait_lcore(l);
  launched_lcores_.clear();
  launched_ = false;
  running_ = false;
}

std::optional<MacAddr> Dataplane::cached(const rdma::IpAddress& ip) const {
  return ip.version == IpVersion::V4 ? arp_.lookup(ip.v4) : neighbors_.lookup(ip.v6);
}

void Dataplane::learn(const rdma::IpAddress& ip, const MacAddr& mac) {
  if (ip.version == IpVersion::V4) arp_.learn(ip.v4, mac);
  else neighbors_.learn(ip.v6, mac);
}

std::optional<MacAddr> Dataplane::resolve(const rdma::IpAddress& ip, Nanos wait_ns) {
  if (auto m = cached(ip)) return m;
  // A peer of the other family cannot be asked: a solicitation needs a source of its family.
  if (ip.version != local_.ip.version) return std::nullopt;
  // The request or its answer may be lost (seen live: a 5 % lossy link failed a connection
  // setup), so ask again every 200 ms until the deadline, as the kernel re-probes.
  constexpr Nanos kArpRetry = 200'000'000;
  workers_[0]->solicit(ip);
  Nanos next_request = clock_.now() + kArpRetry;
  const Nanos deadline = clock_.now() + wait_ns;
  const bool polled_elsewhere = launched_ || driven_elsewhere_;
  while (clock_.now() < deadline) {
    if (clock_.now() >= next_request) {
      workers_[0]->solicit(ip);
      next_request = clock_.now() + kArpRetry;
    }
    if (!polled_elsewhere) poll_once();
    if (auto m = cached(ip)) return m;
    if (polled_elsewhere) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return std::nullopt;
}

void Dataplane::publish_stats() {
  if (!launched_) {
    const Nanos t = clock_.now();
    for (auto& w : workers_) w->publish_stats(t);
    if (io_) io_->publish_stats(t);
    return;
  }
  // Launched: ask each loop, then wait for its next publication. A loop that is stopping
  // publishes on its way out instead, so stop waiting then.
  std::vector<std::uint64_t> before;
  for (auto& w : workers_) {
    before.push_back(w->published_sequence());
    Worker* wp = w.get();
    wp->post_command([this, wp](rdma::Engine&) { wp->publish_stats(clock_.now()); });
  }
  const Nanos deadline = clock_.now() + kSecond;
  for (std::size_t i = 0; i < workers_.size(); ++i)
    while (workers_[i]->published_sequence() == before[i] && !stopping() && clock_.now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
}

DataplaneSnapshot Dataplane::snapshot() const {
  DataplaneSnapshot s;
  s.name = name_;
  s.mode = to_string(mode_);
  s.port = port_;
  s.local = local_;
  if (port_open_) s.port_stats = read_port_stats(port_.id);
  if (io_) s.io = io_->published_stats();
  s.workers.reserve(workers_.size());
  for (const auto& w : workers_) s.workers.push_back(w->published_stats());
  return s;
}

std::string Dataplane::report_json() {
  if (!launched_) publish_stats();
  return dp::report_json(snapshot());
}

unsigned Dataplane::mbufs_in_use() const { return rte_mempool_in_use_count(pool_); }

std::string to_string(Mode m) { return m == Mode::Pipeline ? "pipeline" : "run-to-completion"; }

}  // namespace roce::dp
