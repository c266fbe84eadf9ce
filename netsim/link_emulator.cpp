#include "netsim/link_emulator.hpp"

#include <rte_errno.h>
#include <rte_launch.h>

#include <algorithm>

#include "lib/cc/pacer.hpp"
#include "protocol/ecn_mark.hpp"

namespace roce::netsim {

namespace {

// splitmix64: decorrelated seeds for the two directions and their RED generators.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

cc::CpParams queue_params(const DirectionFaults& f, std::uint64_t seed) {
  cc::CpParams cp;
  cp.red = f.red;
  cp.ecn_marking = f.ecn_marking;
  cp.capacity_bytes = f.queue_bytes;
  cp.capacity_packets = f.queue_frames;
  cp.line_rate_bps = f.rate_bps;
  cp.seed = seed;
  return cp;
}

proto::ByteSpan headers_of(const rte_mbuf* m) { return {rte_pktmbuf_mtod(m, const std::byte*), m->data_len}; }

}  // namespace

LinkEmulator::Path::Path(const DirectionFaults& f, std::uint64_t seed, std::size_t line_frames)
    : faults(f), rng(mix(seed)), wire(line_frames), held(line_frames) {
  if (f.has_queue()) queue.emplace(queue_params(f, mix(seed ^ 0x5245440000000000ull)));
}

Result<std::unique_ptr<LinkEmulator>> LinkEmulator::create(const LinkEmulatorOptions& o) {
  if (auto e = check(o.x_to_y)) return make_error(EINVAL, "link emulator x->y: " + *e);
  if (auto e = check(o.y_to_x)) return make_error(EINVAL, "link emulator y->x: " + *e);
  if (o.delay_line_frames == 0) return make_error(EINVAL, "link emulator: the delay line needs at least one slot");
  if (o.rx_bursts_per_poll == 0) return make_error(EINVAL, "link emulator: rx_bursts_per_poll must be at least 1");
  if (o.x.name == o.y.name) return make_error(EINVAL, "link emulator: both sides are port '" + o.x.name + "'");
  std::unique_ptr<LinkEmulator> e(new LinkEmulator());
  e->rx_bursts_ = o.rx_bursts_per_poll;
  const std::string pool_name = o.name + "_pool";
  e->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), o.mbufs, 256, 0, o.mbuf_data_room, SOCKET_ID_ANY);
  if (e->pool_ == nullptr)
    return make_error(rte_errno, "cannot create mbuf pool '" + pool_name + "': " + rte_strerror(rte_errno) +
                                     " (give DPDK more memory with -m, or use fewer mbufs)");
  dp::PortOptions px = o.x, py = o.y;
  px.promiscuous = py.promiscuous = true;
  // What leaves one side came in on the other, from whatever pool the far side used.
  px.tx_fast_free = py.tx_fast_free = false;
  px.queues = py.queues = 1;
  auto x = dp::open_port(px, e->pool_);
  if (!x) return x.error();
  e->x_ = *x;
  e->x_open_ = true;
  auto y = dp::open_port(py, e->pool_);
  if (!y) return y.error();
  e->y_ = *y;
  e->y_open_ = true;
  e->paths_[0] = std::make_unique<Path>(o.x_to_y, o.seed, o.delay_line_frames);
  e->paths_[1] = std::make_unique<Path>(o.y_to_x, mix(o.seed), o.delay_line_frames);
  e->paths_[0]->in_port = e->paths_[1]->out_port = e->x_.id;
  e->paths_[0]->out_port = e->paths_[1]->in_port = e->y_.id;
  return e;
}

LinkEmulator::~LinkEmulator() {
  stop();
  wait();
  for (auto& p : paths_)
    if (p) free_held(*p);
  if (x_open_) dp::close_port(x_.id);
  if (y_open_) dp::close_port(y_.id);
  rte_mempool_free(pool_);
}

void LinkEmulator::free_held(Path& p) {
  if (p.queue)
    while (auto d = p.queue->dequeue(kNever)) rte_pktmbuf_free(d->packet);
  while (!p.wire.empty()) rte_pktmbuf_free(p.wire.pop());
  while (!p.held.empty()) rte_pktmbuf_free(p.held.pop());
  if (p.pending_count) rte_pktmbuf_free_bulk(p.pending.data(), p.pending_count);
  p.pending_count = 0;
  p.counters.set(LinkCounter::Held, 0);
}

void LinkEmulator::drop(Path& p, rte_mbuf* m, LinkCounter why) {
  rte_pktmbuf_free(m);
  p.counters.add(why);
}

unsigned LinkEmulator::poll(Nanos now) {
  unsigned n = 0;
  for (auto& p : paths_) n += receive(*p, now);
  for (auto& p : paths_) {
    if (p->queue) service_queue(*p, now);
    release(*p, now);
    const std::size_t queued = p->queue ? p->queue->size() : 0;
    p->counters.set(LinkCounter::Held, queued + p->wire.size() + p->held.size() + p->pending_count);
    if (p->queue) p->counters.set(LinkCounter::QueueMaxBytes, p->queue->counters().max_occupancy_bytes);
  }
  return n;
}

unsigned LinkEmulator::poll(Direction d, Nanos now) { return poll_path(*paths_[static_cast<std::size_t>(d)], now); }

unsigned LinkEmulator::poll_path(Path& p, Nanos now) {
  const unsigned n = receive(p, now);
  if (p.queue) service_queue(p, now);
  release(p, now);
  const std::size_t queued = p.queue ? p.queue->size() : 0;
  p.counters.set(LinkCounter::Held, queued + p.wire.size() + p.held.size() + p.pending_count);
  if (p.queue) p.counters.set(LinkCounter::QueueMaxBytes, p.queue->counters().max_occupancy_bytes);
  return n;
}

unsigned LinkEmulator::receive(Path& p, Nanos now) {
  unsigned total = 0;
  std::array<rte_mbuf*, kBurstFrames> rx;
  for (unsigned b = 0; b < rx_bursts_; ++b) {
    const std::uint16_t n = rte_eth_rx_burst(p.in_port, 0, rx.data(), kBurstFrames);
    total += n;
    for (std::uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = rx[i];
      p.counters.add(LinkCounter::Received);
      p.counters.add(LinkCounter::ReceivedBytes, m->pkt_len);
      if (p.faults.loss > 0 && p.rng.uniform() < p.faults.loss) {
        drop(p, m, LinkCounter::Lost);
        continue;
      }
      rte_mbuf* copy = nullptr;
      if (p.faults.duplicate > 0 && p.rng.uniform() < p.faults.duplicate) {
        copy = rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX);
        p.counters.add(copy ? LinkCounter::Duplicated : LinkCounter::DuplicateNoMbuf);
      }
      admit(p, m, now);
      if (copy) admit(p, copy, now);
    }
    if (n < kBurstFrames) break;
  }
  return total;
}

void LinkEmulator::admit(Path& p, rte_mbuf* m, Nanos now) {
  if (!p.queue) {
    put_on_wire(p, m, now);
    return;
  }
  const auto at = proto::locate_ecn(headers_of(m));
  const proto::Ecn ecn = at ? proto::read_ecn(headers_of(m), *at) : proto::Ecn::NotEct;
  if (p.queue->enqueue(now, m, cc::link_bytes(m->pkt_len), ecn) != cc::EnqueueResult::Queued) {
    drop(p, m, LinkCounter::TailDropped);
    return;
  }
  // A frame that finds the link idle starts at once, so it leaves room for the ones behind it.
  service_queue(p, now);
}

void LinkEmulator::service_queue(Path& p, Nanos now) {
  while (auto d = p.queue->dequeue(now)) {
    if (d->marked) mark_ce(p, d->packet);
    // The frame is on the far side once its last bit is.
    put_on_wire(p, d->packet, d->end);
  }
}

void LinkEmulator::mark_ce(Path& p, rte_mbuf* m) {
  const auto at = proto::locate_ecn(headers_of(m));
  if (!at || !RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1) {
    p.counters.add(LinkCounter::MarkNotWritable);
    return;
  }
  proto::set_ce({rte_pktmbuf_mtod(m, std::byte*), m->data_len}, *at);
  p.counters.add(LinkCounter::Marked);
}

void LinkEmulator::put_on_wire(Path& p, rte_mbuf* m, Nanos departed) {
  const DirectionFaults& f = p.faults;
  if (f.reorder > 0 && p.rng.uniform() < f.reorder) {
    if (!p.held.push(m, departed + f.delay + f.reorder_delay)) return drop(p, m, LinkCounter::DelayLineFull);
    p.counters.add(LinkCounter::Reordered);
    return;
  }
  Nanos at = departed + f.delay;
  if (f.jitter > 0) at += static_cast<Nanos>(p.rng.uniform() * static_cast<double>(f.jitter + 1));
  // Jitter stretches gaps but never lets a frame pass the one ahead of it.
  at = std::max(at, p.last_release);
  if (!p.wire.push(m, at)) return drop(p, m, LinkCounter::DelayLineFull);
  p.last_release = at;
}

void LinkEmulator::release(Path& p, Nanos now) {
  if (p.pending_count) {
    std::array<rte_mbuf*, kBurstFrames> retry;
    const std::uint16_t n = p.pending_count;
    std::copy_n(p.pending.begin(), n, retry.begin());
    p.pending_count = 0;
    if (!send(p, retry.data(), n)) return;
  }
  std::array<rte_mbuf*, kBurstFrames> tx;
  std::uint16_t n = 0;
  for (;;) {
    const Nanos a = p.wire.next_release(), b = p.held.next_release();
    if (std::min(a, b) > now) break;
    tx[n++] = a <= b ? p.wire.pop() : p.held.pop();
    if (n == kBurstFrames) {
      if (!send(p, tx.data(), n)) return;
      n = 0;
    }
  }
  if (n) send(p, tx.data(), n);
}

bool LinkEmulator::send(Path& p, rte_mbuf** frames, std::uint16_t n) {
  // Bytes are summed before the PMD owns the mbufs (a receiver may free them at once).
  std::uint64_t bytes = 0;
  for (std::uint16_t i = 0; i < n; ++i) bytes += frames[i]->pkt_len;
  const std::uint16_t sent = rte_eth_tx_burst(p.out_port, 0, frames, n);
  for (std::uint16_t i = sent; i < n; ++i) bytes -= frames[i]->pkt_len;
  p.counters.add(LinkCounter::Forwarded, sent);
  p.counters.add(LinkCounter::ForwardedBytes, bytes);
  if (sent == n) return true;
  p.counters.add(LinkCounter::TxBusy, n - sent);
  std::copy(frames + sent, frames + n, p.pending.begin());
  p.pending_count = static_cast<std::uint16_t>(n - sent);
  return false;
}

LinkStats LinkEmulator::stats(Direction d) const {
  LinkStats s;
  const Path& p = *paths_[static_cast<std::size_t>(d)];
  for (std::size_t i = 0; i < kLinkCounterCount; ++i) s.v[i] = p.counters.v[i].load(std::memory_order_relaxed);
  return s;
}

std::size_t LinkEmulator::frames_held() const {
  std::size_t n = 0;
  for (const auto& p : paths_) n += (p->queue ? p->queue->size() : 0) + p->wire.size() + p->held.size() + p->pending_count;
  return n;
}

Nanos LinkEmulator::next_release() const {
  Nanos t = kNever;
  for (const auto& p : paths_) {
    if (p->queue) t = std::min(t, p->queue->next_dequeue_time());
    t = std::min({t, p->wire.next_release(), p->held.next_release()});
    if (p->pending_count) t = 0;  // due now
  }
  return t;
}

int LinkEmulator::loop_main(void* arg) {
  static_cast<LinkEmulator*>(arg)->run_on_this_thread();
  return 0;
}

void LinkEmulator::run_on_this_thread() {
  while (!stop_.load(std::memory_order_relaxed)) poll(clock_.now());
}

Status LinkEmulator::launch(unsigned lcore) {
  if (lcore_ >= 0) return make_error(EALREADY, "link emulator already launched");
  stop_ = false;
  if (int rc = rte_eal_remote_launch(&LinkEmulator::loop_main, this, lcore); rc != 0)
    return make_error(-rc, "cannot launch the link emulator on lcore " + std::to_string(lcore) + ": " + rte_strerror(-rc));
  lcore_ = static_cast<int>(lcore);
  return {};
}

void LinkEmulator::wait() {
  if (lcore_ >= 0) rte_eal_wait_lcore(static_cast<unsigned>(lcore_));
  lcore_ = -1;
}

}  // namespace roce::netsim
