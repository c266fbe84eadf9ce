#include "dataplane/io_loop.hpp"

#include <rte_ethdev.h>

#include <array>
#include <cstring>

#include "dataplane/worker.hpp"
#include "protocol/parser.hpp"

namespace roce::dp {

using namespace roce::proto;

unsigned IoLoop::poll(Nanos now) {
  std::array<rte_mbuf*, kBurst> rx;
  const std::uint16_t n = rte_eth_rx_burst(cfg_.port, 0, rx.data(), kBurst);
  stats_.rx_packets += n;
  const std::size_t workers = cfg_.worker_rx.size();
  // Per-worker staging so each ring gets one burst enqueue.
  std::array<std::array<rte_mbuf*, kBurst>, 16> staged;
  std::array<unsigned, 16> counts{};
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = rx[i];
    const std::span<const std::byte> frame{rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
    std::array<std::byte, kArpFrameBytes> reply;
    const ArpAction a = handle_arp(frame, cfg_.local.mac, cfg_.local.ip.v4, arp_, reply);
    if (a != ArpAction::NotArp) {
      if (a == ArpAction::Reply) {
        if (rte_mbuf* r = rte_pktmbuf_alloc(cfg_.pool)) {
          std::memcpy(rte_pktmbuf_mtod(r, void*), reply.data(), reply.size());
          r->data_len = r->pkt_len = kArpFrameBytes;
          if (rte_eth_tx_burst(cfg_.port, 0, &r, 1) == 1) ++stats_.arp_replies;
          else rte_pktmbuf_free(r);
        }
      }
      rte_pktmbuf_free(m);
      continue;
    }
    const auto qpn = peek_dest_qp(frame);
    if (!qpn) {
      ++stats_.not_roce;
      rte_pktmbuf_free(m);
      continue;
    }
    if (*qpn != proto::kGsiQpn && *qpn < cfg_.qpn_base) {
      ++stats_.unknown_worker;
      rte_pktmbuf_free(m);
      continue;
    }
    // QP1's MADs go to worker 0, where the CM agent runs.
    const std::size_t w = *qpn == proto::kGsiQpn ? 0 : (*qpn - cfg_.qpn_base) % workers;
    staged[w][counts[w]++] = m;
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
