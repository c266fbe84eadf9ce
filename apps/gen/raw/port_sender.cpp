#include "apps/gen/raw/port_sender.hpp"

#include <rte_ethdev.h>

#include <algorithm>

#include "dataplane/tsc_clock.hpp"

namespace roce::gen {

Result<RawPortSender> RawPortSender::create(RawFrameGenerator gen, const PortSenderOptions& o) {
  if (!o.pool) return make_error(EINVAL, "no mbuf pool for the raw sender");
  if (auto e = check(o.rate)) return make_error(EINVAL, *e);
  const std::size_t room = rte_pktmbuf_data_room_size(o.pool) - RTE_PKTMBUF_HEADROOM;
  if (gen.max_frame_bytes() > room)
    return make_error(EINVAL, "frames of " + std::to_string(gen.max_frame_bytes()) + " bytes do not fit the pool's " +
                                  std::to_string(room) + "-byte mbufs");
  if (!rte_eth_dev_is_valid_port(o.port)) return make_error(ENODEV, "no DPDK port " + std::to_string(o.port));
  return RawPortSender(std::move(gen), o);
}

RawPortSender::RawPortSender(RawFrameGenerator gen, const PortSenderOptions& o)
    : gen_(std::move(gen)), o_(o), clock_(o.rate) {}

RawPortSender::RawPortSender(RawPortSender&& other) noexcept
    : gen_(std::move(other.gen_)),
      o_(other.o_),
      clock_(other.clock_),
      made_(other.made_),
      pending_(other.pending_),
      pending_made_(other.pending_made_),
      pending_count_(other.pending_count_),
      stats_(other.stats_) {
  other.pending_count_ = 0;
}

RawPortSender::~RawPortSender() {
  if (pending_count_) rte_pktmbuf_free_bulk(pending_.data(), pending_count_);
}

bool RawPortSender::flush_pending() {
  const std::uint16_t sent = rte_eth_tx_burst(o_.port, o_.queue, pending_.data(), pending_count_);
  if (sent < pending_count_) ++stats_.tx_busy;
  for (std::uint16_t i = 0; i < sent; ++i) stats_.crafted.count(pending_made_[i].frame, pending_made_[i].departure);
  std::copy(pending_.begin() + sent, pending_.begin() + pending_count_, pending_.begin());
  std::copy(pending_made_.begin() + sent, pending_made_.begin() + pending_count_, pending_made_.begin());
  pending_count_ = static_cast<std::uint16_t>(pending_count_ - sent);
  return pending_count_ == 0;
}

unsigned RawPortSender::poll(Nanos elapsed) {
  unsigned taken = 0;
  if (pending_count_) {
    const std::uint16_t before = pending_count_;
    const bool clear = flush_pending();
    taken += before - pending_count_;
    if (!clear) return taken;
  }
  // A few bursts per call at most, so an unpaced endless stream still returns to its caller.
  for (unsigned burst = 0; burst < kMaxBurstsPerPoll && (o_.count == 0 || made_ < o_.count); ++burst) {
    std::uint16_t n = 0;
    while (n < kBurstFrames && (o_.count == 0 || made_ < o_.count) &&
           (!clock_.paced() || clock_.next_departure() <= elapsed)) {
      rte_mbuf* m = rte_pktmbuf_alloc(o_.pool);
      if (!m) {
        ++stats_.mbuf_alloc_failures;
        break;
      }
      const Nanos at = clock_.next_departure();
      const CraftedFrame f = gen_.next({rte_pktmbuf_mtod(m, std::byte*), rte_pktmbuf_tailroom(m)});
      m->data_len = static_cast<std::uint16_t>(f.length);
      m->pkt_len = static_cast<std::uint32_t>(f.length);
      clock_.on_sent(f.length);
      pending_made_[n] = {f, clock_.paced() ? at : elapsed};
      pending_[n++] = m;
      ++made_;
    }
    if (n == 0) break;
    pending_count_ = n;
    flush_pending();
    taken += n - pending_count_;
    if (pending_count_ || n < kBurstFrames) break;
  }
  return taken;
}

Nanos RawPortSender::run(const std::atomic<bool>& stop, Nanos max_ns) {
  const dp::TscClock tsc;
  const Nanos start = tsc.now();
  Nanos elapsed = 0;
  while (!done() && !stop.load(std::memory_order_relaxed) && elapsed < max_ns) {
    poll(elapsed);
    elapsed = tsc.now() - start;
  }
  return elapsed;
}

}  // namespace roce::gen
