#include "dataplane/worker.hpp"

#include <rte_malloc.h>
#include <rte_prefetch.h>

#include <cstring>

namespace roce::dp {

using namespace roce::proto;

namespace {

// Counts frames the PMD would not take after a flush and frees them: a TX drop is counted,
// never a leak.
void count_unsent(rte_mbuf** pkts, std::uint16_t unsent, void* userdata) {
  auto* dropped = static_cast<std::uint64_t*>(userdata);
  *dropped += unsent;
  rte_pktmbuf_free_bulk(pkts, unsent);
}

}  // namespace

Worker::Worker(WorkerConfig cfg, MrTable& mrs, ArpCache& arp)
    : cfg_(std::move(cfg)), engine_(cfg_.engine, mrs), arp_(arp) {
  txb_ = static_cast<rte_eth_dev_tx_buffer*>(
      rte_zmalloc_socket("tx_buffer", RTE_ETH_TX_BUFFER_SIZE(kBurst), 0, rte_eth_dev_socket_id(cfg_.port)));
  if (txb_) {
    rte_eth_tx_buffer_init(txb_, kBurst);
    rte_eth_tx_buffer_set_err_callback(txb_, count_unsent, &stats_.tx_dropped);
  }
  frame_capacity_ = rte_pktmbuf_data_room_size(cfg_.pool) - RTE_PKTMBUF_HEADROOM;
}

Worker::~Worker() {
  flush();
  release_stash();
  rte_free(txb_);
}

void Worker::release_stash() {
  if (stash_count_) rte_pktmbuf_free_bulk(stash_.data(), stash_count_);
  stash_count_ = 0;
}

void Worker::post_command(std::function<void(Engine&)> fn) {
  std::lock_guard lock(commands_mutex_);
  commands_.push_back(std::move(fn));
  has_commands_.store(true, std::memory_order_release);
}

void Worker::request_arp(const Ipv4Addr& ip) {
  post_command([this, ip](Engine&) { arp_wanted_.push_back(ip); });
}

void Worker::run_commands() {
  std::vector<std::function<void(Engine&)>> todo;
  {
    std::lock_guard lock(commands_mutex_);
    todo.swap(commands_);
    has_commands_.store(false, std::memory_order_relaxed);
  }
  for (auto& fn : todo) fn(engine_);
  for (const Ipv4Addr& ip : arp_wanted_) {
    rte_mbuf* m = take_mbuf();
    if (m == nullptr) break;
    const auto& local = cfg_.engine.path.local;
    build_arp_request(local.mac, local.ip.v4, ip, {rte_pktmbuf_mtod(m, std::byte*), kArpFrameBytes});
    m->data_len = m->pkt_len = kArpFrameBytes;
    send_frame(m);
    ++stats_.arp_requests_sent;
  }
  arp_wanted_.clear();
}

rte_mbuf* Worker::take_mbuf() {
  if (stash_count_ == 0) {
    if (rte_pktmbuf_alloc_bulk(cfg_.pool, stash_.data(), kBurst) != 0) {
      ++stats_.mbuf_alloc_failures;
      return nullptr;
    }
    stash_count_ = kBurst;
  }
  return stash_[--stash_count_];
}

void Worker::send_frame(rte_mbuf* m) { emit(&m, 1); }

void Worker::emit(rte_mbuf** m, unsigned n) {
  for (unsigned i = 0; i < n; ++i) stats_.tx_bytes += m[i]->pkt_len;
  stats_.tx_packets += n;
  if (cfg_.tx_ring) {
    const unsigned sent = rte_ring_sp_enqueue_burst(cfg_.tx_ring, reinterpret_cast<void**>(m), n, nullptr);
    if (sent < n) {
      stats_.tx_dropped += n - sent;
      rte_pktmbuf_free_bulk(m + sent, n - sent);
    }
    return;
  }
  for (unsigned i = 0; i < n; ++i) rte_eth_tx_buffer(cfg_.port, cfg_.queue, txb_, m[i]);
}

void Worker::handle_rx(rte_mbuf* m, Nanos now) {
  ++stats_.rx_packets;
  stats_.rx_bytes += m->pkt_len;
  if (m->nb_segs != 1) {
    ++stats_.rx_multi_segment;
    return;
  }
  const std::span<const std::byte> frame{rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
  if (frame.size() >= sizeof(EthernetHeader)) {
    EthernetHeader eth;
    std::memcpy(&eth, frame.data(), sizeof eth);
    if (eth.ether_type.get() == kEtherTypeArp) {
      const auto& local = cfg_.engine.path.local;
      std::array<std::byte, kArpFrameBytes> reply;
      if (handle_arp(frame, local.mac, local.ip.v4, arp_, reply) == ArpAction::Reply) {
        if (rte_mbuf* r = take_mbuf()) {
          std::memcpy(rte_pktmbuf_mtod(r, void*), reply.data(), reply.size());
          r->data_len = r->pkt_len = kArpFrameBytes;
          send_frame(r);
          ++stats_.arp_replies;
        }
      }
      return;
    }
  }
  engine_.receive(frame, now);
}

void Worker::transmit(Nanos now) {
  while (engine_.has_tx_work()) {
    std::array<TxFrame, kBurst> frames;
    std::array<rte_mbuf*, kBurst> mbufs;
    unsigned have = 0;
    for (; have < kBurst; ++have) {
      rte_mbuf* m = take_mbuf();
      if (m == nullptr) break;
      mbufs[have] = m;
      frames[have] = TxFrame{rte_pktmbuf_mtod(m, std::byte*), frame_capacity_, 0};
    }
    if (have == 0) return;
    const std::size_t n = engine_.transmit(std::span{frames.data(), have}, now);
    for (std::size_t i = 0; i < n; ++i) {
      mbufs[i]->data_len = static_cast<std::uint16_t>(frames[i].length);
      mbufs[i]->pkt_len = frames[i].length;
    }
    emit(mbufs.data(), static_cast<unsigned>(n));
    // Unused mbufs go back to the stash for the next round.
    for (std::size_t i = n; i < have; ++i) stash_[stash_count_++] = mbufs[i];
    if (n < have) break;
  }
}

void Worker::flush() {
  if (txb_ && !cfg_.tx_ring) rte_eth_tx_buffer_flush(cfg_.port, cfg_.queue, txb_);
}

unsigned Worker::poll(Nanos now) {
  ++stats_.iterations;
  if (has_commands_.load(std::memory_order_acquire)) run_commands();
  std::array<rte_mbuf*, kBurst> rx;
  const auto want = static_cast<std::uint16_t>(rx_burst_);
  const unsigned n = want == 0     ? 0
                     : cfg_.rx_ring ? rte_ring_sc_dequeue_burst(cfg_.rx_ring, reinterpret_cast<void**>(rx.data()), want, nullptr)
                                    : rte_eth_rx_burst(cfg_.port, cfg_.queue, rx.data(), want);
  constexpr unsigned kPrefetchAhead = 3;
  for (unsigned i = 0; i < n && i < kPrefetchAhead; ++i) rte_prefetch0(rte_pktmbuf_mtod(rx[i], void*));
  for (unsigned i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) rte_prefetch0(rte_pktmbuf_mtod(rx[i + kPrefetchAhead], void*));
    handle_rx(rx[i], now);
  }
  if (n) rte_pktmbuf_free_bulk(rx.data(), n);
  if (app_hook) app_hook(engine_, now);
  engine_.advance(now);
  transmit(now);
  if (now - last_flush_ >= cfg_.tx_flush_ns) {
    flush();
    last_flush_ = now;
  }
  return n;
}

}  // namespace roce::dp
