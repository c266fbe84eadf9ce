// A receive ring that really overflows, and whether marking its overruns CE (dataplane/overrun.hpp)
// lets DCQCN slow the sender. Two dataplanes in one process; between them the test is the wire
// and the receiver's NIC: what a sends goes into a receive ring of kRingSlots slots, and a frame
// that finds it full is dropped and counted as b's port drop (the reader b's marker reads, as
// PortDrops reads imissed or af_packet's tp_drops). The ring empties into b at kReceiverGbps
// (a receiver that cannot read faster), while a's DCQCN line rate is kLineGbps. What is
// asserted is counted packets; the rates only make the ring overflow.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <deque>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "lib/cc/params.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::overrun_dcqcn_test {
namespace {

// The receive ring that overflows: half of what a's pacer lets leave back to back (16 KiB), so
// the first burst overflows it whatever the machine's speed.
constexpr unsigned kRingSlots = 8;
constexpr double kLineGbps = 0.4;      // a's DCQCN line rate: where its pacer starts
constexpr double kReceiverGbps = 0.1; // what b reads at most
constexpr unsigned kQps = 2;
constexpr std::uint32_t kMessage = 64 * 1024;
constexpr unsigned kDepth = 4;  // WRITEs outstanding per QP

// The second receiver: the queue is b's own receive ring (kQueueSlots), and b is a poller that
// cannot keep up: it is polled only when kReceiverGbps allows kPollFrames more frames, and takes
// at most kPollFrames per poll. Its backlog is then what b's loop sees (a run of full bursts),
// which the backlog marks (rx_backlog.hpp) mark before the ring overflows.
enum class Receiver { Nic, SlowPoller };
constexpr unsigned kQueueSlots = 128;
constexpr unsigned kPollFrames = 8;

std::string fresh(const std::string& stem) {
  static int n = 0;
  return stem + std::to_string(n++);
}

struct Figures {
  std::uint64_t ring_drops = 0, counted = 0, timeouts = 0, early = 0, naks = 0, retransmitted = 0, sent = 0, ce_marks = 0, cnps = 0, rate_cuts = 0, backlog_marks = 0;
  double min_rate_gbps = 0;
  Nanos elapsed = 0;
};

// `messages` WRITEs per QP from a to b through the overflowing ring, b marking as `marks` says
// (mark false: the drops are only counted).
// `rp_timers`: the reaction point's increase and alpha timers (0: the paper profile's 55 us).
Figures run(unsigned messages, dp::OverrunConfig marks, Receiver receiver = Receiver::Nic, dp::BacklogConfig backlog = {},
            Nanos rp_timers = 0) {
  Figures f;
  const std::string na = fresh("ovdA"), nwa = fresh("ovdAw"), nwb = fresh("ovdBw"), nb = fresh("ovdB");
  auto pa = dp::make_ring_pair(na, nwa, 4096);
  auto pb = dp::make_ring_pair(nwb, nb, receiver == Receiver::Nic ? kRingSlots : kQueueSlots);
  EXPECT_TRUE(pa.ok() && pb.ok());
  if (!pa.ok() || !pb.ok()) return f;
  rte_ring* a_tx = rte_ring_lookup((na + "_to_" + nwa).c_str());
  rte_ring* a_rx = rte_ring_lookup((nwa + "_to_" + na).c_str());
  rte_ring* b_rx = rte_ring_lookup((nwb + "_to_" + nb).c_str());
  rte_ring* b_tx = rte_ring_lookup((nb + "_to_" + nwb).c_str());
  EXPECT_TRUE(a_tx && a_rx && b_rx && b_tx);
  if (!a_tx || !a_rx || !b_rx || !b_tx) return f;
  // The test moves frames between the rings itself: the wire ends' ports are never used, and
  // closing them keeps a run from holding port ids (the dataplanes close a's and b's).
  rte_eth_dev_close(pa->b);
  rte_eth_dev_close(pb->a);
  std::uint64_t dropped = 0;
  const auto make = [&](std::uint16_t port, std::uint8_t host, bool receiver) {
    dp::DataplaneOptions o;
    o.name = fresh("ovd");
    o.port.name = std::to_string(port);
    o.ip = rdma::IpAddress::ipv4({10, 0, 0, host});
    o.mac = proto::MacAddr{2, 0, 0, 0, 0, host};
    o.mbufs = 4095;
    o.engine.tuning.congestion.enabled = true;
    o.engine.tuning.congestion.rp = cc::paper_params(kLineGbps * 1e9);
    if (rp_timers) o.engine.tuning.congestion.rp.paper.increase_interval = o.engine.tuning.congestion.rp.paper.alpha_interval = rp_timers;
    o.overrun = marks;
    if (!receiver) o.overrun.check_interval = 0;  // a's port drops nothing
    if (receiver) o.port_drops = [&] { return std::optional<std::uint64_t>(dropped); };
    if (receiver) o.backlog = backlog;
    auto d = dp::Dataplane::create(o);
    EXPECT_TRUE(d.ok()) << d.error().message;
    return d.ok() ? std::move(*d) : nullptr;
  };
  auto a = make(pa->a, 1, false);
  auto b = make(pb->b, 2, true);
  if (!a || !b) return f;
  if (receiver == Receiver::SlowPoller) b->worker(0).set_rx_burst(kPollFrames);
  a->learn(rdma::IpAddress::ipv4({10, 0, 0, 2}), {2, 0, 0, 0, 0, 2});
  b->learn(rdma::IpAddress::ipv4({10, 0, 0, 1}), {2, 0, 0, 0, 0, 1});
  QpOptions qo;
  std::vector<std::pair<Endpoint, Endpoint>> qps;
  std::vector<std::byte> src(kMessage, std::byte{7}), dst(kMessage);
  std::vector<const rdma::MemoryRegion*> smr, dmr;
  for (unsigned i = 0; i < kQps; ++i) {
    Endpoint ea = make_endpoint(a->worker(0).engine(), qo), eb = make_endpoint(b->worker(0).engine(), qo);
    connect_pair(ea, eb, qo);
    qps.emplace_back(ea, eb);
    smr.push_back(reg(*ea.engine, ea.pd, src, IBV_ACCESS_LOCAL_WRITE));
    dmr.push_back(reg(*eb.engine, eb.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  }
  std::vector<unsigned> posted(kQps, 0), done(kQps, 0);
  const auto post_more = [&] {
    for (unsigned i = 0; i < kQps; ++i)
      while (posted[i] < messages && posted[i] - done[i] < kDepth) {
        ibv_sge g = sge(src.data(), kMessage, smr[i]);
        EXPECT_EQ(post(qps[i].first, IBV_WR_RDMA_WRITE, posted[i]++, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()),
                       dmr[i]->rkey()),
                  0);
      }
  };
  // The wire: everything a sent goes to the receive ring, what does not fit is b's drop; the
  // ring empties into b's port at kReceiverGbps (a byte budget, at most 4 KiB saved up); b's
  // frames go back to a (a's ring of 4096 never fills: a is polled every round).
  std::array<void*, 64> moving;
  std::deque<rte_mbuf*> ring;
  const double bytes_per_ns = kReceiverGbps / 8;
  double budget = 0;
  Nanos last = a->now();
  const auto wire = [&](Nanos now) {
    unsigned n = rte_ring_sc_dequeue_burst(a_tx, moving.data(), moving.size(), nullptr);
    if (receiver == Receiver::SlowPoller) {  // b's own ring is the queue; poll_b is the budget
      const unsigned in = rte_ring_sp_enqueue_burst(b_rx, moving.data(), n, nullptr);
      for (unsigned i = in; i < n; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(moving[i]));
      dropped += n - in;
    } else {
      for (unsigned i = 0; i < n; ++i) {
        if (ring.size() < kRingSlots) {
          ring.push_back(static_cast<rte_mbuf*>(moving[i]));
        } else {
          rte_pktmbuf_free(static_cast<rte_mbuf*>(moving[i]));
          ++dropped;
        }
      }
      budget = std::min(budget + static_cast<double>(now - last) * bytes_per_ns, 4096.0);
      last = now;
      while (!ring.empty() && budget >= ring.front()->pkt_len && rte_ring_sp_enqueue(b_rx, ring.front()) == 0) {
        budget -= ring.front()->pkt_len;
        ring.pop_front();
      }
    }
    n = rte_ring_sc_dequeue_burst(b_tx, moving.data(), moving.size(), nullptr);
    const unsigned back = rte_ring_sp_enqueue_burst(a_rx, moving.data(), n, nullptr);
    for (unsigned i = back; i < n; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(moving[i]));
  };
  f.min_rate_gbps = kLineGbps;
  const Nanos start = a->now(), limit = start + 60 * kSecond;
  b->poll_once();  // b's first reading of the drop count, the baseline: 0
  post_more();
  const auto poll_b = [&] {
    if (receiver == Receiver::Nic) return b->poll_once();
    budget = std::min(budget + static_cast<double>(a->now() - last) * bytes_per_ns, kPollFrames * 1100.0);
    last = a->now();
    if (budget < kPollFrames * 1024.0) return;  // b is still busy with what it read
    const std::uint64_t before = b->worker(0).stats().rx_bytes;
    b->poll_once();
    budget -= static_cast<double>(b->worker(0).stats().rx_bytes - before);
  };
  while (a->now() < limit) {
    a->poll_once();
    wire(a->now());
    poll_b();
    wire(a->now());
    for (unsigned i = 0; i < kQps; ++i) {
      for (const ibv_wc& wc : drain(qps[i].first)) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
        ++done[i];
      }
      if (const auto* cc = qps[i].first.qp->congestion())
        f.min_rate_gbps = std::min(f.min_rate_gbps, cc->reaction_point().rc_bps() / 1e9);
    }
    post_more();
    if (std::all_of(done.begin(), done.end(), [&](unsigned d) { return d == messages; })) break;
  }
  f.elapsed = a->now() - start;
  for (rte_mbuf* m : ring) rte_pktmbuf_free(m);
  for (unsigned i = 0; i < kQps; ++i) EXPECT_EQ(done[i], messages) << "QP " << i << " did not finish in 60 s";
  f.ring_drops = dropped;
  for (auto& [ea, eb] : qps) {
    f.retransmitted += ea.qp->counters().get(rdma::Counter::RetransmittedPkts);
    f.cnps += ea.qp->counters().get(rdma::Counter::CnpReceived);
    f.timeouts += ea.qp->counters().get(rdma::Counter::RetransmitTimeouts);
    f.early += ea.qp->counters().get(rdma::Counter::EarlyRetransmits);
    f.naks += ea.qp->counters().get(rdma::Counter::NaksReceived);
    if (const auto* cc = ea.qp->congestion()) f.rate_cuts += cc->reaction_point().counters().rate_decreases;
  }
  f.sent = a->worker(0).stats().tx_packets;
  f.ce_marks = b->worker(0).stats().rx_overrun_ce_marks;
  f.counted = b->worker(0).stats().rx_overrun_frames;
  f.backlog_marks = b->worker(0).stats().rx_backlog_ce_marks;
  return f;
}

void print(const char* what, const Figures& f) {
  std::printf("%-9s ring drops %5llu  resent %5llu / sent %5llu (timeouts %llu, early %llu, NAKs %llu)  CE marks %4llu"
              "  backlog marks %4llu  CNPs %4llu  rate cuts %4llu  min rate %.3f Gb/s  %.0f ms\n",
              what, static_cast<unsigned long long>(f.ring_drops), static_cast<unsigned long long>(f.retransmitted),
              static_cast<unsigned long long>(f.sent), static_cast<unsigned long long>(f.timeouts),
              static_cast<unsigned long long>(f.early), static_cast<unsigned long long>(f.naks),
              static_cast<unsigned long long>(f.ce_marks), static_cast<unsigned long long>(f.backlog_marks),
              static_cast<unsigned long long>(f.cnps),
              static_cast<unsigned long long>(f.rate_cuts), f.min_rate_gbps, static_cast<double>(f.elapsed) / 1e6);
}

// The same WRITEs with b's marks off, then on. Off: the ring overflows and nothing tells the
// sender's DCQCN (no CE, no CNP, its rate stays at the line rate). On: every drop is owed a
// mark, the marks reach b's QPs as CE, b's notification points answer with CNPs and a's reaction
// points cut the rate. Whether that lowers the drops is printed, not asserted: it did not
// (docs/loss.md, "Do the overrun marks help?").
TEST(OverrunDcqcn, AnOverflowingRingsDropsAreMarkedAndCutTheSendersRate) {
  constexpr unsigned kMessages = 4;
  const Figures off = run(kMessages, dp::OverrunConfig{kMilli, 256, false});
  ASSERT_FALSE(HasFailure());
  const Figures on = run(kMessages, dp::OverrunConfig{});
  ASSERT_FALSE(HasFailure());
  print("marks off", off);
  print("marks on", on);
  EXPECT_GT(off.ring_drops, 0u) << "the ring did not overflow";
  EXPECT_GT(off.counted, 0u) << "marks off, the drops are still counted";
  EXPECT_LE(off.counted, off.ring_drops);
  EXPECT_EQ(off.ce_marks + off.cnps + off.rate_cuts, 0u);
  EXPECT_EQ(off.min_rate_gbps, kLineGbps);
  ASSERT_GT(on.ring_drops, 0u) << "the ring did not overflow";
  // Each drop is owed a mark; what is owed when the last frames have arrived stays unpaid.
  EXPECT_GT(on.ce_marks, 0u);
  EXPECT_LE(on.ce_marks, on.ring_drops);
  EXPECT_GT(on.cnps, 0u);
  EXPECT_LE(on.cnps, on.ce_marks) << "at most one CNP per mark";
  EXPECT_EQ(on.rate_cuts, on.cnps) << "the paper profile cuts on every CNP";
  EXPECT_LT(on.min_rate_gbps, 0.9 * kLineGbps) << "the sender's rate was not cut";
}

// A receiver whose poller cannot keep up, its own ring the queue: the overrun marks on in every
// arm, the backlog marks (Kmin 32, Kmax 96 of a 128-slot ring, Pmax 0.5) off, then on; first
// with the paper profile's 55 us reaction point timers, then with 1 ms ones. Asserted: with the
// marks on, the backlog is seen and marked, and the marks come back as CNPs that cut the
// sender's rate. Whether the ring then drops less is printed (docs/loss.md, "Marks from the
// receive queue's backlog"), not asserted: with 55 us timers it did not (the rate recovers
// between two polls of the slow receiver, so between two CNPs), with 1 ms ones it did.
TEST(OverrunDcqcn, ASlowPollersBacklogIsMarkedBeforeItsRingOverflows) {
  constexpr unsigned kMessages = 4;
  dp::BacklogConfig backlog;
  backlog.mark = true;
  backlog.kmin_frames = 32;
  backlog.kmax_frames = 96;
  backlog.pmax = 0.5;
  for (const Nanos timers : {Nanos{0}, kMilli}) {
    const Figures off = run(kMessages, dp::OverrunConfig{}, Receiver::SlowPoller, {}, timers);
    ASSERT_FALSE(HasFailure());
    const Figures on = run(kMessages, dp::OverrunConfig{}, Receiver::SlowPoller, backlog, timers);
    ASSERT_FALSE(HasFailure());
    print(timers ? "backlog off, 1 ms RP timers" : "backlog off", off);
    print(timers ? "backlog on, 1 ms RP timers" : "backlog on", on);
    EXPECT_EQ(off.backlog_marks, 0u);
    EXPECT_GT(on.backlog_marks, 0u) << "the slow poller's backlog was not marked";
    EXPECT_GT(on.cnps, 0u);
    EXPECT_LT(on.min_rate_gbps, 0.9 * kLineGbps) << "the sender's rate was not cut";
  }
}

}  // namespace
}  // namespace roce::test::overrun_dcqcn_test
