// SIGINT/SIGTERM stop a running dataplane gracefully: its loop sees the flag, flushes what it
// buffered, publishes its final counters and returns; the owner reports and frees.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <csignal>
#include <thread>

#include "dataplane/signals.hpp"
#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/json.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::signals_test {
namespace {

using dp::StopSignals;

void (*current_handler(int sig))(int) {
  struct sigaction sa {};
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler;
}

TEST(StopSignals, SigintAndSigtermSetTheFlagAndRestoreGivesThePreviousHandlersBack) {
  const auto before_int = current_handler(SIGINT), before_term = current_handler(SIGTERM);
  ASSERT_TRUE(StopSignals::install().ok());
  ASSERT_TRUE(StopSignals::install().ok());  // idempotent
  StopSignals::clear();
  EXPECT_FALSE(StopSignals::requested());
  EXPECT_EQ(StopSignals::last_signal(), 0);
  std::raise(SIGINT);
  EXPECT_TRUE(StopSignals::requested());
  EXPECT_EQ(StopSignals::last_signal(), SIGINT);
  StopSignals::clear();
  std::raise(SIGTERM);
  EXPECT_TRUE(StopSignals::flag().load());
  EXPECT_EQ(StopSignals::last_signal(), SIGTERM);
  StopSignals::clear();
  StopSignals::restore();
  EXPECT_EQ(current_handler(SIGINT), before_int);
  EXPECT_EQ(current_handler(SIGTERM), before_term);
}

TEST(StopSignalsDeathTest, ASecondSignalWhileStoppingEndsTheProcess) {
  EXPECT_EXIT(
      {
        (void)StopSignals::install();
        std::raise(SIGINT);  // graceful request
        std::raise(SIGINT);  // impatient: the default action
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(GracefulStop, SigtermStopsALaunchedDataplaneThatFlushesAndPublishesItsFinalCounters) {
  const unsigned lcore = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
  if (lcore >= RTE_MAX_LCORE) GTEST_SKIP() << "needs a worker lcore besides the main one; the EAL has " << rte_lcore_count();
  auto pair = DataplanePair::create("sig", {});
  ASSERT_NE(pair, nullptr);
  QpOptions qo;
  Endpoint a = make_endpoint(pair->a->worker(0).engine(), qo);
  Endpoint b = make_endpoint(pair->b->worker(0).engine(), qo);
  connect_pair(a, b, qo);
  std::vector<std::byte> mem(1 << 20), src(1 << 20, std::byte{0x3C}), back(1 << 20);
  auto* am = reg(*a.engine, a.pd, mem, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  auto* sm = reg(*b.engine, b.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*b.engine, b.pd, back, IBV_ACCESS_LOCAL_WRITE);

  ASSERT_TRUE(StopSignals::install().ok());
  StopSignals::clear();
  pair->a->watch_stop_flag(&StopSignals::flag());
  ASSERT_TRUE(pair->a->launch({lcore}).ok());
  ASSERT_TRUE(pair->a->running());

  // b (stepped here) writes 1 MiB into a and reads it back; a answers from its own lcore.
  ibv_sge g = sge(src.data(), 1 << 20, sm);
  ASSERT_EQ(post(b, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(mem.data()), am->rkey()), 0);
  ibv_sge r = sge(back.data(), 1 << 20, bm);
  ASSERT_EQ(post(b, IBV_WR_RDMA_READ, 2, &r, 1, reinterpret_cast<std::uint64_t>(mem.data()), am->rkey()), 0);
  std::vector<ibv_wc> wcs;
  const Nanos limit = pair->b->now() + 30 * kSecond;
  while (wcs.size() < 2 && pair->b->now() < limit) {
    pair->b->poll_once();
    for (const ibv_wc& w : drain(b)) wcs.push_back(w);
  }
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& w : wcs) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
  EXPECT_EQ(back, src);

  std::raise(SIGTERM);
  pair->a->run_on_this_thread();  // every loop is on the worker lcore: this waits for it
  EXPECT_FALSE(pair->a->running());
  EXPECT_EQ(StopSignals::last_signal(), SIGTERM);
  StopSignals::clear();
  StopSignals::restore();

  // The loop published its final counters from its own lcore on the way out: they are the
  // live ones, now that nothing runs.
  const dp::WorkerSnapshot last = pair->a->worker(0).published_stats();
  const dp::WorkerStats& live = pair->a->worker(0).stats();
  EXPECT_EQ(last.lcore, static_cast<int>(lcore));
  EXPECT_EQ(last.stats.rx_packets, live.rx_packets);
  EXPECT_EQ(last.stats.tx_packets, live.tx_packets);
  EXPECT_EQ(last.stats.iterations, live.iterations);
  ASSERT_EQ(last.qps.size(), 1u);
  EXPECT_EQ(last.qps[0].counters.values(), a.qp->counters().values());
  EXPECT_GT(last.qps[0].counters.get(rdma::Counter::ReadResponsesSent), 0u);
  // Flushed: everything the worker queued for transmission is on the port, none buffered.
  rte_eth_stats st{};
  ASSERT_EQ(rte_eth_stats_get(pair->a->port().id, &st), 0);
  EXPECT_EQ(st.opackets, live.tx_packets - live.tx_dropped);

  const Json report = parse_json(pair->a->report_json());
  EXPECT_EQ(report["workers"]["0"]["rx_packets"].u64(), live.rx_packets);
  EXPECT_EQ(report["qps"][std::to_string(a.qp->qpn())]["counters"]["rcvd_pkts"].u64(), a.qp->counters().get(rdma::Counter::RcvdPkts));
  pair->expect_no_mbuf_leak();
}

TEST(GracefulStop, SigintStopsAPipelineWhoseIoLoopDrainsTheWorkersLastFrames) {
  const unsigned lcore = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
  if (lcore >= RTE_MAX_LCORE) GTEST_SKIP() << "needs a worker lcore besides the main one; the EAL has " << rte_lcore_count();
  PairOptions po;
  po.mode = dp::Mode::Pipeline;
  auto pair = DataplanePair::create("sigp", po);
  ASSERT_NE(pair, nullptr);
  QpOptions qo;
  Endpoint a = make_endpoint(pair->a->worker(0).engine(), qo);
  Endpoint b = make_endpoint(pair->b->worker(0).engine(), qo);
  connect_pair(a, b, qo);
  std::vector<std::byte> mem(1 << 20), src(1 << 20, std::byte{0x5C}), back(1 << 20);
  auto* am = reg(*a.engine, a.pd, mem, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  auto* sm = reg(*b.engine, b.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*b.engine, b.pd, back, IBV_ACCESS_LOCAL_WRITE);

  ASSERT_TRUE(StopSignals::install().ok());
  StopSignals::clear();
  pair->a->watch_stop_flag(&StopSignals::flag());
  // Two loops, one worker lcore: the IO loop goes there, the worker loop runs on this thread.
  ASSERT_TRUE(pair->a->launch({lcore}).ok());

  // b is stepped from a plain thread, which raises SIGINT once its work is done.
  std::size_t good = 0;
  std::size_t seen = 0;
  std::string first_error;
  std::thread peer([&] {
    ibv_sge g = sge(src.data(), 1 << 20, sm);
    ibv_sge r = sge(back.data(), 1 << 20, bm);
    if (post(b, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(mem.data()), am->rkey()) == 0 &&
        post(b, IBV_WR_RDMA_READ, 2, &r, 1, reinterpret_cast<std::uint64_t>(mem.data()), am->rkey()) == 0) {
      const Nanos limit = pair->b->now() + 30 * kSecond;
      while (seen < 2 && pair->b->now() < limit) {
        pair->b->poll_once();
        for (const ibv_wc& w : drain(b)) {
          ++seen;
          good += w.status == IBV_WC_SUCCESS;
          if (w.status != IBV_WC_SUCCESS && first_error.empty()) first_error = describe(w);
        }
      }
    }
    std::raise(SIGINT);
  });
  pair->a->run_on_this_thread();  // the worker loop, until SIGINT; then waits for the IO loop
  peer.join();
  EXPECT_FALSE(pair->a->running());
  EXPECT_EQ(StopSignals::last_signal(), SIGINT);
  StopSignals::clear();
  StopSignals::restore();
  // A failure says whether the completions came late or in error, and what each side counted.
  auto counted = [](const Endpoint& e) {
    std::string out;
    const rdma::Counters& c = e.qp->counters();
    for (std::size_t k = 0; k < rdma::kCounterCount; ++k)
      if (c.values()[k])
        out += " " + std::string(rdma::counter_name(static_cast<rdma::Counter>(k))) + "=" + std::to_string(c.values()[k]);
    return out;
  };
  EXPECT_EQ(good, 2u) << seen << " completions in 30 s; first error: " << first_error << "\na:" << counted(a)
                      << "\nb:" << counted(b);
  EXPECT_TRUE(back == src);

  // Both loops published on their way out, each from its own lcore.
  const dp::WorkerSnapshot w = pair->a->worker(0).published_stats();
  const dp::DataplaneSnapshot snap = pair->a->snapshot();
  ASSERT_TRUE(snap.io.has_value());
  EXPECT_EQ(w.lcore, static_cast<int>(rte_get_main_lcore()));
  EXPECT_EQ(snap.io->lcore, static_cast<int>(lcore));
  EXPECT_EQ(snap.io->stats.rx_packets, pair->a->io_stats()->rx_packets);
  EXPECT_EQ(w.stats.tx_packets, pair->a->worker(0).stats().tx_packets);
  // Drained: every frame the worker queued left through the IO loop, none was left in the ring.
  const dp::IoStats& io = *pair->a->io_stats();
  EXPECT_EQ(w.stats.tx_packets - w.stats.tx_dropped, io.tx_packets + io.tx_dropped);
  EXPECT_EQ(io.tx_dropped, 0u);
  rte_eth_stats st{};
  ASSERT_EQ(rte_eth_stats_get(pair->a->port().id, &st), 0);
  EXPECT_EQ(st.opackets, io.tx_packets);  // ARP replies too: worker 0 answers, the IO loop sends
  pair->expect_no_mbuf_leak();
}

}  // namespace
}  // namespace roce::test::signals_test
