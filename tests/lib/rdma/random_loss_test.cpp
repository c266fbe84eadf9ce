// Resent packets per lost frame under random loss both ways (data and ACKs), counted on virtual
// time: one RC QP keeps eight 64 KiB WRITEs (4 KiB MTU) outstanding over a 25 Gbit/s link that
// drops frames at random. Go-back-N resends what was in flight behind each loss; issue 21 asks
// for at most 4 resent per lost frame. The defaults meet it at every rate: the BDP cap
// (WindowTuning::bdp_cap) holds while the path's loss events come less than
// bdp_cap_loss_interval packets apart (1 and 5 %), and at 0.1 % because here it is free
// (bdp_cap_when_free: this link's round trip is the wire's, and the rate with the cap is the
// rate without it; on the single-threaded software path it cost a quarter of the goodput and
// stays off there, docs/loss.md, part 1). The cap held after every loss (bdp_cap_loss_interval 0)
// and the full window meet the bound too. Every completed WRITE's bytes are checked.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"
#include "tests/support/write_stream.hpp"

namespace roce::test::random_loss_test {
namespace {

constexpr std::uint32_t kMessage = 64 * 1024;
constexpr int kOutstanding = 8;
std::uint64_t writes_for(double loss) { return loss < 0.005 ? 3000 : 600; }

struct LossRun {
  std::uint64_t lost = 0;       // frames the links dropped, both ways
  std::uint64_t resent = 0;     // retransmitted_pkts of the requester
  std::uint64_t completed = 0, failed = 0, corrupt = 0;
  std::uint64_t early = 0, timeouts = 0, cuts = 0, probes = 0, oldest = 0, holes = 0;
  std::uint32_t trials_free = 0, trials_costly = 0;  // of the BDP cap where it is free
  std::uint32_t trials_unjudged = 0;  // ended before a full reference (the QP's start-up): no verdict
  Nanos elapsed = 0;
  double loss_interval = 0;  // the window's average packets between loss events at the end
  double ratio() const { return lost ? static_cast<double>(resent) / static_cast<double>(lost) : 0; }
};

// Defaults: the BDP cap while losses are frequent or where it is free, the tail probe.
// AlwaysCap: the cap after any loss (session 7's). Before: no BDP cap, no tail probe (the
// defaults before session 8). NotWhenFree: the cap only while losses are frequent (session 8's).
enum class Tuning { Defaults, AlwaysCap, FullWindow, Before, NotWhenFree };

LossRun run(double loss, Tuning t, std::uint64_t seed) {
  SimNetwork net(seed);
  rdma::EngineConfig cfg;
  cfg.tuning.window.enabled = t == Tuning::FullWindow;
  cfg.tuning.window.bdp_cap = t == Tuning::Defaults || t == Tuning::AlwaysCap || t == Tuning::NotWhenFree;
  if (t == Tuning::AlwaysCap) cfg.tuning.window.bdp_cap_loss_interval = 0;
  if (t == Tuning::NotWhenFree) cfg.tuning.window.bdp_cap_when_free = false;
  if (t == Tuning::Before) cfg.tuning.tail_probe_min = 0;
  net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
  net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
  LinkFaults f;
  f.loss = loss;
  f.bandwidth_bps = 25e9;
  net.connect("a", "b", f, f);
  QpOptions o;
  o.mtu = IBV_MTU_4096;
  o.depth = kOutstanding + 4;
  Endpoint a = make_endpoint(net.host("a"), o);
  Endpoint b = make_endpoint(net.host("b"), o);
  connect_pair(a, b, o);
  LossRun r;
  const WriteStream s = stream_writes(net, a, b, kMessage, kOutstanding, writes_for(loss), seed, 60 * kSecond);
  r.completed = s.completed;
  r.failed = s.failed;
  r.corrupt = s.corrupt;
  r.lost = net.stats("a").lost + net.stats("b").lost;
  const rdma::Counters& c = a.qp->counters();
  r.resent = c.get(rdma::Counter::RetransmittedPkts);
  r.early = c.get(rdma::Counter::EarlyRetransmits);
  r.timeouts = c.get(rdma::Counter::RetransmitTimeouts);
  r.cuts = c.get(rdma::Counter::WindowCuts);
  r.probes = c.get(rdma::Counter::TailProbes);
  r.oldest = c.get(rdma::Counter::OldestProbes);
  r.holes = c.get(rdma::Counter::ProbedHoles);
  r.elapsed = net.now();
  r.loss_interval = a.qp->completer().window().loss_interval();
  r.trials_free = a.qp->completer().window().bdp_trials_free();
  r.trials_unjudged = a.qp->completer().window().bdp_trials_unjudged();
  r.trials_costly = a.qp->completer().window().bdp_trials_costly();
  return r;
}

void print(const char* name, double loss, const LossRun& r) {
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("[%s] loss %.1f %%: lost %llu, resent %llu (%.2f per lost), early %llu, tail probes %llu (then oldest %llu, holes %llu), timeouts %llu, window cuts %llu, "
              "WRITEs %llu (failed %llu, corrupt %llu) in %.1f ms, loss interval %.0f packets, BDP cap trials %u free %u costly %u unjudged\n",
              name, loss * 100, u(r.lost), u(r.resent), r.ratio(), u(r.early), u(r.probes), u(r.oldest), u(r.holes), u(r.timeouts), u(r.cuts),
              u(r.completed), u(r.failed), u(r.corrupt), static_cast<double>(r.elapsed) / 1e6, r.loss_interval, r.trials_free,
              r.trials_costly, r.trials_unjudged);
}

class RandomLoss : public ::testing::TestWithParam<double> {};

TEST_P(RandomLoss, GoBackNResendsAtMostFourPacketsPerLostFrame) {
  const double loss = GetParam();
  const rdma::WindowTuning defaults;
  const bool frequent = loss >= 0.01;
  // The defaults over four seeds (one seed's figure varies by +-0.3 around the mean at 1 %).
  LossRun def;
  for (std::uint64_t seed = 2101; seed < 2105; ++seed) {
    const LossRun r = run(loss, Tuning::Defaults, seed);
    def.lost += r.lost;
    def.resent += r.resent;
    def.completed += r.completed;
    def.failed += r.failed;
    def.corrupt += r.corrupt;
    def.early += r.early;
    def.timeouts += r.timeouts;
    def.probes += r.probes;
    def.oldest += r.oldest;
    def.holes += r.holes;
    def.elapsed += r.elapsed;
    def.loss_interval = std::max(def.loss_interval, r.loss_interval);  // the cap's decision: the least frequent
    def.trials_free += r.trials_free;
    def.trials_costly += r.trials_costly;
    def.trials_unjudged += r.trials_unjudged;
    if (frequent) {
      EXPECT_LT(r.loss_interval, defaults.bdp_cap_loss_interval) << "seed " << seed;
    } else {
      EXPECT_GT(r.loss_interval, defaults.bdp_cap_loss_interval) << "seed " << seed;
    }
  }
  const LossRun always = run(loss, Tuning::AlwaysCap, 2101);
  const LossRun full = run(loss, Tuning::FullWindow, 2101);
  const LossRun before = run(loss, Tuning::Before, 2101);
  const LossRun not_free = run(loss, Tuning::NotWhenFree, 2101);
  print("random_loss defaults, four seeds", loss, def);
  print("random_loss BDP cap after any loss", loss, always);
  print("random_loss full window", loss, full);
  print("random_loss no BDP cap, no probe", loss, before);
  print("random_loss BDP cap while losses are frequent only", loss, not_free);
  for (const LossRun* r : {static_cast<const LossRun*>(&def), &always, &full}) {
    EXPECT_EQ(r->completed, writes_for(loss) * (r == &def ? 4 : 1));
    EXPECT_EQ(r->failed, 0u);
    EXPECT_EQ(r->corrupt, 0u);
    ASSERT_GT(r->lost, 0u);
    EXPECT_LE(r->ratio(), 4.0);
  }
  // The bound is the cap's doing: without it each loss costs what was in flight.
  EXPECT_GT(before.ratio(), 2 * always.ratio());
  EXPECT_GT(before.ratio(), 2 * def.ratio());
  if (!frequent) {
    // At 0.1 % the interval alone leaves the cap off: it holds because a trial found it free,
    // and it costs no time (the same WRITEs finish as soon as without it, within 2 %).
    EXPECT_GT(not_free.ratio(), 2 * def.ratio());
    EXPECT_GT(def.trials_free, def.trials_costly);
    EXPECT_LT(static_cast<double>(def.elapsed) / 4, 1.02 * static_cast<double>(not_free.elapsed));
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, RandomLoss, ::testing::Values(0.001, 0.01, 0.05),
                         [](const ::testing::TestParamInfo<double>& i) {
                           return "loss_" + std::to_string(static_cast<int>(i.param * 1000)) + "_permille";
                         });

}  // namespace
}  // namespace roce::test::random_loss_test
