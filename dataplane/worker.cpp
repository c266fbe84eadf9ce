#include "dataplane/worker.hpp"

#include <rte_prefetch.h>

#include "dataplane/mbuf_burst.hpp"
#include "dataplane/qp_runs.hpp"
#include "dataplane/ring_port.hpp"
#include "dataplane/write_prefetch.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>


namespace roce::dp {

using namespace roce::proto;

namespace {

// The ICRC check reads every byte of a frame before the payload is placed; the lines after
// the first two are fetched one frame ahead so that read finds them in cache. The first two are
// prefetch_head's, which both receive paths call for a frame before this (asking here again
// cost a loop turn per frame longer than a line). The third line apart: a frame of at most
// three lines (every 64 B WRITE, every ACK) asks for it alone, without the loop's setup.
// Only up to kRestUpTo: a longer frame's payload has its ICRC deferred (rdma::kDeferIcrcFrom)
// and is read once, by the copy that places it, which asks for its own lines as it goes; a
// whole 4 KiB frame asked for at once took the memory's slots from the copy in progress
// (docs/perf-changes.md section 91).
constexpr unsigned kRestUpTo = rdma::kDeferIcrcFrom + 2 * RTE_CACHE_LINE_SIZE;  // headers and ICRC of IPv4 or IPv6
void prefetch_rest(const rte_mbuf* m) {
  const auto* p = rte_pktmbuf_mtod(m, const char*);
  const unsigned len = m->data_len;
  if (len <= 2 * RTE_CACHE_LINE_SIZE) return;
  rte_prefetch0(p + 2 * RTE_CACHE_LINE_SIZE);
  const unsigned upto = std::min(len, kRestUpTo);
  for (unsigned at = 3 * RTE_CACHE_LINE_SIZE; at < upto; at += RTE_CACHE_LINE_SIZE) rte_prefetch0(p + at);
}

// What a frame's first reads need, a few frames ahead of its turn: its first two lines and its
// last. A WRITE's RETH R_Key (bytes 62-65 over IPv4 without VLAN) straddles the first line's
// end, and prefetch_destination reads it two frames ahead: with the first line alone asked for,
// that load waited for memory (84 % of write_destination's samples in a cpu-clock profile; every
// 64 B WRITE_ONLY, every FIRST of a 4 KiB message). The parser reads the ICRC from the last line
// before the copy reads the rest, and prefetch_rest asks for that line last, one frame ahead.
// docs/perf-changes.md section 37.
void prefetch_head(const rte_mbuf* m) {
  const auto* p = rte_pktmbuf_mtod(m, const char*);
  rte_prefetch0(p);
  if (m->data_len > RTE_CACHE_LINE_SIZE) rte_prefetch0(p + RTE_CACHE_LINE_SIZE);
  if (m->data_len > 2 * RTE_CACHE_LINE_SIZE) rte_prefetch0(p + m->data_len - 1);
}

// The first line a WRITE in `m` will store into, fetched for writing while the frames before
// it are handled (write_prefetch.hpp).
void prefetch_destination(const rte_mbuf* m, WriteDestinations& destinations, const rdma::MrTable& mrs) {
  if (m->nb_segs != 1) return;
  if (const std::byte* d = destinations.find({rte_pktmbuf_mtod(m, const std::byte*), m->data_len}, mrs))
    __builtin_prefetch(d, 1, 3);  // rte_prefetch0_write is still experimental in DPDK 22.11
}

// The first time t with t - last >= period (the poll's flush and publication checks): the two
// are folded into one deadline. kNever past the range, where no t can be that late.
constexpr Nanos due_after(Nanos last, Nanos period) { return period > 0 && last > kNever - period ? kNever : last + period; }

// Room for a burst's frame spans that is not initialised: only the entries written are read.
struct SpanSlots {
  SpanSlots() {}  // NOLINT: leaves `at` unwritten on purpose
  ByteSpan* data() { return at; }
  ByteSpan& operator[](unsigned i) { return at[i]; }
  union {
    ByteSpan at[kBurst];
  };
};
static_assert(std::is_trivially_destructible_v<ByteSpan> && std::is_trivially_copyable_v<ByteSpan>);

// A received mbuf's bytes counted, its `next` asked for (free_burst reads it at the end of the
// burst); false for a chained mbuf, counted and left out: the engine takes flat frames.
inline bool flat_frame(rte_mbuf* m, std::uint64_t& bytes, WorkerStats& stats) {
  rte_mbuf_prefetch_part2(m);
  bytes += m->pkt_len;
  if (m->nb_segs == 1) return true;
  ++stats.rx_multi_segment;
  return false;
}

}  // namespace

Worker::Worker(WorkerConfig cfg, rdma::MrTable& mrs, ArpCache& arp, NeighborCache& neighbors)
    : cfg_(std::move(cfg)), steering_(cfg_.shards), engine_(cfg_.engine, mrs), arp_(arp), neighbors_(neighbors) {
  if (cfg_.port_drops && cfg_.rx_ring == nullptr) overrun_ = OverrunMarking(cfg_.overrun, cfg_.port_drops);
  if (cfg_.backlog.mark && cfg_.rx_ring == nullptr)
    backlog_ = BacklogMarking(cfg_.backlog, rx_queue_count_of(cfg_.port, cfg_.queue));
  frame_capacity_ = rte_pktmbuf_data_room_size(cfg_.pool) - RTE_PKTMBUF_HEADROOM;
  if (cfg_.rx_ring == nullptr) port_rx_ring_ = ring_port_rx_ring(cfg_.port, cfg_.queue);
  stall_after_ = std::max<Nanos>(cfg_.stall_ns, 0);
  set_rx_burst(rx_burst_);
  WorkerSnapshot first;
  first.worker = cfg_.index;
  published_.publish(first);
}

Worker::~Worker() {
  flush();
  drop_pending();
  release_stash();
}

void Worker::release_stash() {
  if (stash_count()) rte_pktmbuf_free_bulk(stash_.data() + stash_at_, stash_count());
  stash_at_ = static_cast<unsigned>(stash_.size());
}

void Worker::post_command(std::function<void(rdma::Engine&)> fn) {
  std::lock_guard lock(commands_mutex_);
  commands_.push_back(std::move(fn));
  has_commands_.store(true, std::memory_order_release);
}

void Worker::request_arp(const Ipv4Addr& ip) { solicit(rdma::IpAddress::ipv4(ip)); }

void Worker::solicit(const rdma::IpAddress& ip) {
  post_command([this, ip](rdma::Engine&) { solicit_wanted_.push_back(ip); });
}

void Worker::run_commands() {
  std::vector<std::function<void(rdma::Engine&)>> todo;
  {
    std::lock_guard lock(commands_mutex_);
    todo.swap(commands_);
    has_commands_.store(false, std::memory_order_relaxed);
  }
  for (auto& fn : todo) fn(engine_);
  const auto& local = cfg_.engine.path.local;
  for (const rdma::IpAddress& ip : solicit_wanted_) {
    rte_mbuf* m = take_mbuf();
    if (m == nullptr) break;
    if (ip.version == IpVersion::V4) {
      build_arp_request(local.mac, local.ip.v4, ip.v4, {rte_pktmbuf_mtod(m, std::byte*), kArpFrameBytes});
      m->data_len = m->pkt_len = kArpFrameBytes;
      ++stats_.arp_requests_sent;
    } else {
      build_neighbor_solicitation(local.mac, local.ip.v6, ip.v6, {rte_pktmbuf_mtod(m, std::byte*), kNdFrameBytes});
      m->data_len = m->pkt_len = kNdFrameBytes;
      ++stats_.ndp_solicitations_sent;
    }
    send_frame(m);
  }
  solicit_wanted_.clear();
}

bool Worker::refill_stash() {
  const unsigned at = stash_at_ - kBurst;  // callers ask with at most kBurst left
  if (rte_pktmbuf_alloc_bulk(cfg_.pool, stash_.data() + at, kBurst) != 0) {
    ++stats_.mbuf_alloc_failures;
    return false;
  }
  for (unsigned i = at; i < stash_at_; ++i)
    stash_frames_[i] = rdma::TxFrame{rte_pktmbuf_mtod(stash_[i], std::byte*), frame_capacity_, 0};
  stash_at_ = at;
  return true;
}

[[gnu::always_inline]] inline void Worker::keep_in_stash(rte_mbuf* m) {
  reset_plain(m);  // both callers tested plain_mbuf_of first
  --stash_at_;
  stash_[stash_at_] = m;
  stash_frames_[stash_at_] = rdma::TxFrame{rte_pktmbuf_mtod(m, std::byte*), frame_capacity_, 0};
}

// The stash is refilled only below kBurst live mbufs (refill_stash), so a kept one never stands
// in a refill's way; a full stash (64) frees as before. The pool is tested first, alone: where
// every frame is another pool's (two dataplanes over a ring pair, each with its own pool) the
// rest of the test is not paid for.
[[gnu::always_inline]] inline void Worker::recycle(rte_mbuf* m) {
  if (m->pool == cfg_.pool && stash_at_ != 0 && plain_mbuf_of(m, cfg_.pool)) keep_in_stash(m);
  else if (m->next == nullptr) rte_pktmbuf_free_seg(m);
  else rte_pktmbuf_free(m);
}

void Worker::recycle_burst(rte_mbuf** m, unsigned n) {
  if (const unsigned k = std::min(n, stash_at_); k != 0 && m[0]->pool == cfg_.pool && not_plain_bits(m, k, cfg_.pool) == 0) {
    for (unsigned i = k; i-- > 0;) keep_in_stash(m[i]);  // m[0] ends at the front
    m += k;
    n -= k;
  }
  free_burst(m, n);
}

rte_mbuf* Worker::take_mbuf() {
  if (stash_count() == 0 && !refill_stash()) return nullptr;
  return stash_[stash_at_++];
}

void Worker::send_frame(rte_mbuf* m) {
  control_queued_ = true;
  if (pending_count_ == pending_.size()) {  // only a burst of ARP replies can get here
    ++stats_.tx_dropped;
    rte_pktmbuf_free(m);
    return;
  }
  stats_.tx_bytes += m->pkt_len;
  ++stats_.tx_packets;
  pending_[pending_count_++] = m;
  if (pending_count_ >= kBurst) push_out();
}

[[gnu::always_inline]] inline bool Worker::hand_to_port() {
  const unsigned sent =
      cfg_.tx_ring ? rte_ring_sp_enqueue_burst(cfg_.tx_ring, reinterpret_cast<void**>(pending_.data()), pending_count_, nullptr)
                   : rte_eth_tx_burst(cfg_.port, cfg_.queue, pending_.data(), static_cast<std::uint16_t>(pending_count_));
  // What the PMD (or ring) did not take stays queued: the engine is asked for nothing more
  // until it drains, so a full TX ring slows the requester instead of losing its packets.
  if (sent != pending_count_) std::copy(pending_.begin() + sent, pending_.begin() + pending_count_, pending_.begin());
  pending_count_ -= sent;
  return pending_count_ == 0;
}

bool Worker::push_pending() { return hand_to_port(); }

// One burst per iteration, as on the receive side. Letting the engine fill bursts until it ran
// dry put a whole READ's responses (or a 16-QP window) in the ring at once: the receiver then
// found them cold, having left the cache while they waited (measured in docs/perf-changes.md,
// "One TX burst per iteration"). Inlined into poll(), its one caller: a call's register saves
// twice a round trip at queue depth 1.
[[gnu::always_inline]] inline void Worker::transmit(Nanos now, Nanos busy_iteration) {
  constexpr unsigned kMinOffer = 4;
  // The caller asks only with send work and room in pending_ (most iterations have none).
  // The engine fills the stash's front mbufs where they lie: those it used leave the stash, the
  // rest stay for the next round, already described (stash_frames_).
  if (stash_count() < tx_offer_) refill_stash();  // tx_offer_ <= kBurst: room for a burst more
  const unsigned have = std::min(tx_offer_, stash_count());
  if (have == 0) return;
  const unsigned first = stash_at_;
  const auto n = static_cast<unsigned>(engine_.transmit(std::span{stash_frames_.data() + first, have}, now, busy_iteration));
  // Straight to the pending queue, counted once per burst: it has room (pending_count_ < kBurst
  // on entry, n <= kBurst, the queue holds 4 x kBurst), so none of the engine's frames is dropped.
  static_assert(std::tuple_size_v<decltype(pending_)> >= 2 * kBurst);
  rte_mbuf** out = pending_.data() + pending_count_;
  std::uint64_t bytes = 0;
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* m = stash_[first + i];
    const std::uint32_t len = stash_frames_[first + i].length;
    m->data_len = static_cast<std::uint16_t>(len);
    m->pkt_len = len;
    bytes += len;
    out[i] = m;
  }
  stash_at_ = first + n;
  pending_count_ += n;
  stats_.tx_packets += n;
  stats_.tx_bytes += bytes;
  if (pending_count_ >= kBurst) push_out();
  // The QPs whose ACK waits (Engine::transmit's ack_hold) each want a frame next time: offering
  // fewer would leave some of them for an iteration more once they go.
  // (std::clamp, by reference, put its bounds on the stack.)
  const std::size_t wanted = n + engine_.acks_held();
  tx_offer_ = n == have || wanted >= kBurst ? kBurst : wanted <= kMinOffer ? kMinOffer : static_cast<unsigned>(wanted);
}

void Worker::flush() {
  for (int attempt = 0; attempt < 1000 && !push_out(); ++attempt) {
  }
}

void Worker::drop_pending() {
  stats_.tx_dropped += pending_count_;
  if (pending_count_) rte_pktmbuf_free_bulk(pending_.data(), pending_count_);
  pending_count_ = 0;
}

void Worker::send_control(std::span<const std::byte> frame) {
  rte_mbuf* r = take_mbuf();
  if (r == nullptr) return;
  std::memcpy(rte_pktmbuf_mtod(r, void*), frame.data(), frame.size());
  r->data_len = r->pkt_len = static_cast<std::uint16_t>(frame.size());
  send_frame(r);
}

void Worker::answer_arp(std::span<const std::byte> frame) {
  const auto& local = cfg_.engine.path.local;
  std::array<std::byte, kArpFrameBytes> reply;
  if (handle_arp(frame, local.mac, local.ip.v4, arp_, reply) != ArpAction::Reply) return;
  send_control(reply);
  ++stats_.arp_replies;
}

// An IPv4 endpoint still learns IPv6 neighbours but answers for no IPv6 address: its v6 field
// is the unspecified address, which no valid solicitation targets.
void Worker::answer_ndp(std::span<const std::byte> frame) {
  const auto& local = cfg_.engine.path.local;
  std::array<std::byte, kNdFrameBytes> reply;
  switch (handle_ndp(frame, local.mac, local.ip.v6, neighbors_, reply)) {
    case NdpAction::Reply:
      send_control(reply);
      ++stats_.ndp_advertisements;
      break;
    case NdpAction::Invalid: ++stats_.ndp_invalid; break;
    case NdpAction::NotNdp:
    case NdpAction::Ignored:
    case NdpAction::Learned: break;
  }
}

void Worker::deliver(std::span<const std::byte> frame, FrameClass cls, Nanos now) {
  switch (cls) {
    case FrameClass::Arp: answer_arp(frame); break;
    case FrameClass::Ndp: answer_ndp(frame); break;
    case FrameClass::Roce:
    case FrameClass::Other:
    case FrameClass::Count: engine_.receive(frame, now); break;
  }
}

// Frames another worker owns leave first, one enqueue per owner, before this worker reads
// more than their headers: prefetching a whole 4 KiB frame only to hand it over cost its
// owner a transfer from this core's cache. Returns the frames left in `rx` (kept in order).
unsigned Worker::hand_off_foreign(rte_mbuf** rx, unsigned n) {
  for (unsigned i = 0; i < n; ++i) rte_prefetch0(rte_pktmbuf_mtod(rx[i], void*));
  std::array<std::array<rte_mbuf*, kBurst>, kMaxWorkers> out;
  std::array<unsigned, kMaxWorkers> counts{};
  std::uint32_t owners = 0;  // bit per worker with frames in `out`
  unsigned kept = 0;
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* m = rx[i];
    if (m->nb_segs == 1) {
      const SteerVerdict v = steering_.steer({rte_pktmbuf_mtod(m, const std::byte*), m->data_len});
      if (v.owner && *v.owner != cfg_.index && *v.owner < cfg_.shard_inboxes.size()) {
        ++stats_.rx_packets;
        stats_.rx_bytes += m->pkt_len;
        out[*v.owner][counts[*v.owner]++] = m;
        owners |= 1u << *v.owner;
        continue;
      }
    }
    rx[kept++] = m;
  }
  for (; owners; owners &= owners - 1) {
    const auto w = static_cast<unsigned>(__builtin_ctz(owners));
    const unsigned sent = rte_ring_mp_enqueue_burst(cfg_.shard_inboxes[w], reinterpret_cast<void**>(out[w].data()), counts[w], nullptr);
    stats_.rx_handed_off += sent;
    if (sent < counts[w]) {
      stats_.rx_handoff_dropped += counts[w] - sent;
      rte_pktmbuf_free_bulk(out[w].data() + sent, counts[w] - sent);
    }
  }
  return kept;
}

// An IPv4 frame is the engine's (control_class would find no ARP or NDP in it): neither call is
// made for it. Inline: both receive paths run it once per frame.
[[gnu::always_inline]] inline void Worker::receive_frame(std::span<const std::byte> frame, Nanos now) {
  if (frame.size() >= sizeof(EthernetHeader) && load_header<EthernetHeader>(frame, 0).ether_type.get() == kEtherTypeIpv4)
    engine_.receive(frame, now);
  else
    deliver(frame, control_class(frame), now);
}

// A lone frame (queue depth 1: every frame) as receive() handles a burst of one, without the
// burst's loop and call: its lines asked for at once, the frame to the engine, the mbuf kept for
// the next transmit or freed inline (recycle).
[[gnu::always_inline]] inline void Worker::receive_one(rte_mbuf* m, Nanos now, bool count) {
  prefetch_head(m);
  prefetch_rest(m);
  rte_mbuf_prefetch_part2(m);
  if (count) {
    ++stats_.rx_packets;
    stats_.rx_bytes += m->pkt_len;
  }
  engine_.begin_receive_burst();
  if (m->nb_segs != 1) {
    ++stats_.rx_multi_segment;
  } else {
    receive_frame({rte_pktmbuf_mtod(m, const std::byte*), m->data_len}, now);
  }
  engine_.end_receive_burst();
  recycle(m);
}

// A frame's destination QP as group_qp_runs wants it: read at fixed offsets over IPv4 without
// VLAN tag or IP options (every frame of such an endpoint), else by the parser's peek; kNoQpRun
// for QP1 and for anything that is not RoCEv2 (or not in one segment).
static std::uint32_t run_key(const rte_mbuf* m) {
  if (m->nb_segs != 1) return kNoQpRun;
  const std::span<const std::byte> f{rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
  constexpr std::size_t ip = sizeof(EthernetHeader), udp = ip + sizeof(Ipv4Header), bth = udp + sizeof(UdpHeader);
  std::uint32_t qpn;
  if (f.size() >= bth + sizeof(Bth) && load_header<Be16>(f, offsetof(EthernetHeader, ether_type)).get() == kEtherTypeIpv4 &&
      f[ip] == std::byte{0x45} && f[ip + offsetof(Ipv4Header, protocol)] == std::byte{kIpProtoUdp} &&
      load_header<Be16>(f, udp + offsetof(UdpHeader, dst_port)).get() == kRoceV2Port) {
    qpn = load_header<Bth>(f, bth).dest_qp.get();
  } else {
    const auto q = peek_dest_qp(f);
    if (!q) return kNoQpRun;
    qpn = *q;
  }
  return qpn == kGsiQpn ? kNoQpRun : qpn;
}

// Every head is read before the first frame is handled: asked for all at once (cold frames
// arrive together, one memory latency for the burst), and found in cache by the loop after.
bool Worker::group_runs(rte_mbuf** rx, unsigned n) {
  std::array<std::uint32_t, kBurst> keys{};  // (gcc cannot see that n <= kBurst)
  for (unsigned i = 0; i < n; ++i) rte_prefetch0(rte_pktmbuf_mtod(rx[i], void*));
  for (unsigned i = 0; i < n; ++i) keys[i] = run_key(rx[i]);
  std::array<std::uint8_t, kBurst> order;
  if (!group_qp_runs(keys.data(), n, order.data())) return false;
  std::copy(rx, rx + n, arrival_.begin());
  for (unsigned i = 0; i < n; ++i) rx[i] = arrival_[order[i]];
  ++stats_.rx_bursts_grouped;
  return true;
}

// A burst not grouped (one QP's frames, or QPs that do not interleave) goes to the engine in one
// call (Engine::receive_frames, which prefetches each frame's lines as the loop below does), not
// frame by frame: one call and prologue a burst (docs/perf-changes.md section 77). Its
// destinations are not prefetched: one stream of WRITEs the hardware prefetcher follows (the
// responder case read no time difference against the loop below, section 77); interleaved QPs'
// bursts are grouped and take the loop below, which does (as does every burst with the grouping
// off: the old path, for comparisons). The engine stops at a frame that is not IPv4:
// receive_frame's.
void Worker::receive_whole(rte_mbuf** rx, unsigned n, Nanos now, bool count) {
  // The first k entries written below, the rest never read: left uninitialised (a
  // std::array<ByteSpan, kBurst> value-initialises all 32 spans, 512 bytes of stores and eight
  // stack lines a burst, whatever its size).
  SpanSlots frames;  // (n <= kBurst)
  unsigned k = 0;
  std::uint64_t bytes = 0;
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* m = rx[i];
    if (flat_frame(m, bytes, stats_)) frames[k++] = {rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
  }
  if (count) {
    stats_.rx_packets += n;
    stats_.rx_bytes += bytes;
  }
  engine_.begin_receive_burst();
  for (unsigned at = 0; at < k;) {
    at += static_cast<unsigned>(engine_.receive_frames(std::span{frames.data() + at, k - at}, now));
    if (at < k) receive_frame(frames[at++], now);
  }
  engine_.end_receive_burst();
  recycle_burst(rx, n);
}

// Frames this worker handles (its own queue's, less what went to other owners, or its inbox,
// whose frames the receiving worker counted): headers a few frames ahead and the rest of the
// next frame are prefetched while one is handled.
void Worker::receive(rte_mbuf** rx, unsigned n, Nanos now, bool count) {
  if (n == 1) return receive_one(rx[0], now, count);
  bool grouped = false;
  if (cfg_.group_qp_runs && (rx_interleaved_ || --rx_check_in_ == 0)) {
    rx_check_in_ = 16;
    grouped = rx_interleaved_ = group_runs(rx, n);
  }
  if (!grouped && cfg_.group_qp_runs) return receive_whole(rx, n, now, count);
  constexpr unsigned kPrefetchAhead = 3;
  for (unsigned i = 0; i < n && i < kPrefetchAhead; ++i) prefetch_head(rx[i]);
  if (n) prefetch_rest(rx[0]);
  // Two frames ahead of its turn a frame's header has arrived (asked for three ahead), and its
  // destination still has two frames' time to come in.
  constexpr unsigned kDestinationAhead = 2;
  engine_.begin_receive_burst();
  // The burst's bytes summed in a register and counted with its frames once, after the loop:
  // nothing the loop calls reads this worker's counters.
  std::uint64_t bytes = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) prefetch_head(rx[i + kPrefetchAhead]);
    if (i + kDestinationAhead < n) prefetch_destination(rx[i + kDestinationAhead], destinations_, engine_.memory());
    if (i + 1 < n) prefetch_rest(rx[i + 1]);
    rte_mbuf* m = rx[i];
    if (flat_frame(m, bytes, stats_)) receive_frame({rte_pktmbuf_mtod(m, const std::byte*), m->data_len}, now);
  }
  if (count) {
    stats_.rx_packets += n;
    stats_.rx_bytes += bytes;
  }
  engine_.end_receive_burst();
  // A grouped burst goes back in the order it came: freed in the grouped order, the pool handed
  // the next frames' mbufs out scattered, and the hardware prefetcher, which follows the
  // arrival order's addresses, lost them (the fanout case's 1 QP, after a case of 16 QPs
  // grouped on the same pool: 6.4 Mpps against 12).
  recycle_burst(grouped ? arrival_.data() : rx, n);
}

void Worker::publish_stats(Nanos now) {
  collect(engine_, cfg_.index, scratch_);
  scratch_.worker = cfg_.index;
  scratch_.lcore = current_lcore();
  scratch_.sequence = ++publications_;
  scratch_.taken_at = now;
  scratch_.stats = stats_;
  published_.publish(scratch_);
  published_seq_.store(publications_, std::memory_order_release);
  last_publish_ = now;
  housekeeping_at_ = std::min(housekeeping_at_, due_after(now, cfg_.stats_interval_ns));
}


// After a stall (the lcore descheduled, a long control command) the ACKs that arrived during it
// are still queued, and a peer stepped on the same thread has not answered yet: running the
// retransmission timers first would resend what was never lost. They wait for the next
// iteration whose RX burst came back short (the queue read to the end), at most kMaxHeld.
// `stalled`: this iteration began one (poll). Inline: it runs every iteration.
inline bool Worker::timers_due(bool stalled, unsigned received, unsigned burst) {
  constexpr unsigned kMaxHeld = 64;
  if (stalled) {
    ++stats_.stalls;
    timers_held_ = kMaxHeld;
    return false;
  }
  if (timers_held_ == 0) return true;
  if (received < burst || --timers_held_ == 0) timers_held_ = 0;
  return timers_held_ == 0;
}

// The RX step of a worker that is not plain_rx_: a burst limit (replay), an IO loop's ring, CE
// marking from the port's drops or backlog, or frames owned by other workers.
unsigned Worker::receive_general(rte_mbuf** rx, Nanos now) {
  const auto want = static_cast<std::uint16_t>(rx_burst_);
  const unsigned n = want == 0                                        ? 0
                     : cfg_.rx_ring                                     ? rte_ring_sc_dequeue_burst(cfg_.rx_ring, reinterpret_cast<void**>(rx), want, nullptr)
                     : port_rx_ring_ != nullptr && rte_ring_empty(port_rx_ring_) ? 0
                                                                        : rte_eth_rx_burst(cfg_.port, cfg_.queue, rx, want);
  if (overrun_.enabled()) {
    overrun_.on_burst(rx, n, now);
    overrun_.copy_to(stats_);
  }
  if (backlog_.enabled()) {
    backlog_.on_burst(rx, n, want);
    backlog_.copy_to(stats_);
  }
  // An empty burst skips receive() (the engine's burst brackets settle nothing then).
  if (cfg_.shard_inboxes.empty()) {
    if (n) receive(rx, n, now, true);
  } else {
    if (const unsigned own = n ? hand_off_foreign(rx, n) : 0) receive(rx, own, now, true);
    const unsigned k = rte_ring_sc_dequeue_burst(cfg_.inbox, reinterpret_cast<void**>(rx), kBurst, nullptr);
    stats_.rx_from_inbox += k;
    if (k) receive(rx, k, now, false);
  }
  return n;
}

// The flush and publication checks, due at housekeeping_at_ (the earlier of the two deadlines).
void Worker::housekeep(Nanos now) {
  if (now - last_flush_ >= cfg_.tx_flush_ns) {
    push_out();
    last_flush_ = now;
  }
  if (now - last_publish_ >= cfg_.stats_interval_ns) publish_stats(now);
  housekeeping_at_ = std::min(due_after(last_flush_, cfg_.tx_flush_ns), due_after(last_publish_, cfg_.stats_interval_ns));
}

unsigned Worker::poll(Nanos now, bool send) {
  ++stats_.iterations;
  // A gap longer than stall_ns (and than 0: a clock standing still or stepped back is no stall)
  // since the previous iteration: this lcore was not running. The engine hears of it before it
  // reads what arrived meanwhile, so that no round trip it measures then counts the stall.
  const Nanos last = last_poll_;
  last_poll_ = now;
  const bool stalled = now - last > stall_after_ && last != 0;
  if (stalled) [[unlikely]]
    engine_.note_stall(last, now);
  if (has_commands_.load(std::memory_order_acquire)) run_commands();
  std::array<rte_mbuf*, kBurst> rx;
  unsigned n;
  if (plain_rx_) {
    n = port_rx_ring_ != nullptr && rte_ring_empty(port_rx_ring_) ? 0 : rte_eth_rx_burst(cfg_.port, cfg_.queue, rx.data(), kBurst);
    // The drops read and the marks made as receive_general does; nothing to copy when neither
    // (one compare: a worker without the marking never gets there, its attention_at() is kNever).
    if (overrun_.due_or_owed(now)) {
      overrun_.on_burst(rx.data(), n, now);
      overrun_.copy_to(stats_);
    }
    // An empty burst skips receive() (the engine's burst brackets settle nothing then).
    if (n == 1) receive_one(rx[0], now, true);
    else if (n) receive(rx.data(), n, now, true);
  } else {
    n = receive_general(rx.data(), now);
  }
  if (app_hook) app_hook(engine_, now);
  // The engine is entered only when a QP's deadline has come (Engine::timers_pending: one
  // compare); most iterations find none.
  if (timers_due(stalled, n, rx_burst_) && engine_.timers_pending(now)) engine_.advance(now);
  if (!send) {
    // What the step holds is the engine's answer to the program's peer. An ARP or NDP answer,
    // or a solicitation, rides with nothing: held, it waited for the next full step, which in
    // roce-verbsd (its control thread steps this way while a program holds rings, and the
    // dataplane thread only after 1 ms without such a step) came with the engine's next frame
    // or the 32nd answer: a peer's 3 s ARP waits ran out (docs/verbs.md, "ARP answers held").
    if (control_queued_) control_queued_ = !push_out();
    return n;
  }
  push_out();
  // A full RX burst: more requests are queued behind it, and an ACK held for a turn or two
  // covers them too (one ACK per QP per iteration was half an ACK per frame at 16 QPs). Not
  // after a stall: that iteration is longer than any hold (Engine::transmit), so the ACKs owed
  // for what arrived meanwhile go at once.
  if (engine_.has_tx_work() && pending_count_ < kBurst)
    transmit(now, n == kBurst && last != 0 && now > last ? now - last : kNever);
  // What this iteration built goes now, after a full RX burst too: kept, it went at the next
  // iteration's push_out above, before anything else was built, so keeping it batched nothing
  // (one hand-over an iteration either way) and only delayed it by an iteration: the ACK after
  // a full burst then reached the requester a loop turn late and left it at its in-flight cap
  // for that turn (docs/loss.md, part 2, "Session 20 (sr20)" and "Session 21 (gbn21)").
  // Inline here (not push_out's call): at queue depth 1 every poll that builds a frame hands it
  // over here, and the call's register saves cost as much as the handing.
  if (pending_count_ != 0) hand_to_port();
  if (now >= housekeeping_at_) housekeep(now);
  return n;
}

}  // namespace roce::dp
