#include "dataplane/io_loop.hpp"

#include <rte_ethdev.h>

#include <array>

#include "dataplane/worker.hpp"

namespace roce::dp {

unsigned IoLoop::poll(Nanos now) {
  std::array<rte_mbuf*, kBurst> rx;
  const std::uint16_t n = port_rx_ring_ != nullptr && rte_ring_empty(port_rx_ring_) ? 0 : rte_eth_rx_burst(cfg_.port, 0, rx.data(), kBurst);
  stats_.rx_packets += n;
  if (overrun_.enabled()) {
    overrun_.on_burst(rx.data(), n, now);
    overrun_.copy_to(stats_);
  }
  if (backlog_.enabled()) {
    backlog_.on_burst(rx.data(), n, kBurst);
    backlog_.copy_to(stats_);
  }
  const std::size_t workers = cfg_.worker_rx.size();
  // Per-worker staging so each ring gets one burst enqueue.
  std::array<std::array<rte_mbuf*, kBurst>, kMaxWorkers> staged;
  std::array<unsigned, kMaxWorkers> counts{};
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = rx[i];
    const SteerVerdict v = steering_.steer({rte_pktmbuf_mtod(m, const std::byte*), m->data_len});
    if (!v.owner || *v.owner >= workers) {
      // The IO lcore is the receiver of what no worker owns: it counts and drops it.
      if (v.cls == FrameClass::Roce) ++stats_.unknown_worker;
      else ++stats_.not_roce;
      rte_pktmbuf_free(m);
      continue;
    }
    staged[*v.owner][counts[*v.owner]++] = m;
  }
  for (std::size_t w = 0; w < workers; ++w) {
    if (!counts[w]) continue;
    const unsigned sent = rte_ring_sp_enqueue_burst(cfg_.worker_rx[w], reinterpret_cast<void**>(staged[w].data()), counts[w], nullptr);
    stats_.steered += sent;
    if (sent < counts[w]) {
      stats_.worker_ring_full += counts[w] - sent;
      rte_pktmbuf_free_bulk(staged[w].data() + sent, counts[w] - sent);
    }
  }
  drain_tx();
  if (now - last_publish_ >= cfg_.stats_interval_ns) publish_stats(now);
  return n;
}

void IoLoop::publish_stats(Nanos now) {
  IoSnapshot s;
  s.lcore = current_lcore();
  s.sequence = ++publications_;
  s.taken_at = now;
  s.stats = stats_;
  published_.publish(s);
  last_publish_ = now;
}

void IoLoop::drain_tx() {
  for (rte_ring* r : cfg_.worker_tx) {
    std::array<rte_mbuf*, kBurst> tx;
    const unsigned n = rte_ring_sc_dequeue_burst(r, reinterpret_cast<void**>(tx.data()), kBurst, nullptr);
    if (!n) continue;
    unsigned sent = 0;
    for (int attempt = 0; attempt < 4 && sent < n; ++attempt)
      sent += rte_eth_tx_burst(cfg_.port, 0, tx.data() + sent, static_cast<std::uint16_t>(n - sent));
    stats_.tx_packets += sent;
    if (sent < n) {
      stats_.tx_dropped += n - sent;
      rte_pktmbuf_free_bulk(tx.data() + sent, n - sent);
    }
  }
}

}  // namespace roce::dp
