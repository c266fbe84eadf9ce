// Go-back-N with a small in-flight cap (TransportTuning::split_small_window, docs/loss.md part 1,
// "Session 14"): at most half the cap per transmit call and an ACK asked for every half, so that
// two poll-mode cores each work on one half while the other works on the other. Counted on
// virtual time: both hosts run as poll-mode loops with a cost per iteration and per frame
// (SimNetwork::set_poller), one RC QP keeps eight 64 KiB WRITEs (4 KiB MTU) outstanding, and
// every completed WRITE's bytes are checked.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/lib/rdma/frame_look.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"
#include "tests/support/write_stream.hpp"

namespace roce::test::small_window_test {
namespace {

constexpr std::uint32_t kMessage = 64 * 1024;
constexpr int kOutstanding = 8;

// The two-lcore loss rig's shape, roughly (perf_suite --loss-lcores 2, busy cycles per 4 KiB
// delivered at 2.6 GHz): the requester builds a 4 KiB frame (copy and ICRC) in about 0.45 us, the
// responder checks and places one in about 0.3 us, an iteration with work has a fixed cost, and
// a frame takes 0.2 us from one loop to the other (rings and the emulator's poll: a lone
// packet's round trip there is 1.2 us at the least).
constexpr PollCost kRequesterCpu{150, 50, 450, 32};
constexpr PollCost kResponderCpu{150, 300, 50, 32};

struct Pipe {
  std::uint64_t completed = 0, failed = 0, corrupt = 0;
  std::uint64_t lost = 0, resent = 0;
  std::uint64_t requests = 0, longest_without_ack_req = 0;
  std::size_t max_tx = 0;  // most frames one requester iteration sent
  Nanos elapsed = 0;
  PollStats a, b;
  double per_lost() const { return lost ? static_cast<double>(resent) / static_cast<double>(lost) : 0; }
  double gbits() const { return static_cast<double>(completed) * kMessage * 8 / static_cast<double>(elapsed); }
};

Pipe pipe_with(const rdma::EngineConfig& cfg, double loss, std::uint64_t writes, std::uint64_t seed) {
  SimNetwork net(seed);
  net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
  net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
  LinkFaults f;
  f.loss = loss;
  f.delay = 200;
  net.connect("a", "b", f, f);
  net.set_poller("a", kRequesterCpu);
  net.set_poller("b", kResponderCpu);
  Pipe r;
  std::uint64_t since_ack_req = 0;
  net.on_transmit = [&](const std::string& from, std::span<const std::byte> frame, Nanos) {
    if (from != "a") return;
    const Frame x = look(frame);
    if (!x.ok) return;
    ++r.requests;
    since_ack_req = x.ack_req ? 0 : since_ack_req + 1;
    r.longest_without_ack_req = std::max(r.longest_without_ack_req, since_ack_req);
  };
  QpOptions o;
  o.mtu = IBV_MTU_4096;
  o.depth = kOutstanding + 4;
  Endpoint a = make_endpoint(net.host("a"), o);
  Endpoint b = make_endpoint(net.host("b"), o);
  connect_pair(a, b, o);
  const Nanos t0 = net.now();
  const WriteStream s = stream_writes(net, a, b, kMessage, kOutstanding, writes, seed, net.now() + 60 * kSecond);
  r.completed = s.completed;
  r.failed = s.failed;
  r.corrupt = s.corrupt;
  r.elapsed = net.now() - t0;
  r.lost = net.stats("a").lost + net.stats("b").lost;
  r.resent = a.qp->counters().get(rdma::Counter::RetransmittedPkts);
  r.a = net.poll_stats("a");
  r.b = net.poll_stats("b");
  r.max_tx = r.a.max_tx;
  return r;
}

// A static cap of `cap` packets, split or not. The BDP cap is off unless `bdp_cap`: these tests
// are about a cap that holds from the start (since session 15 the BDP cap holds after losses at
// 0.1 % too, and would cap the uncapped run at 5 after its first loss).
Pipe pipe(std::uint32_t cap, bool split, double loss, std::uint64_t writes, std::uint64_t seed = 1401, std::uint32_t parts = 2,
          bool bdp_cap = false) {
  rdma::EngineConfig cfg;
  cfg.tuning.max_inflight_packets = cap;
  cfg.tuning.split_small_window = split;
  cfg.tuning.small_window_parts = parts;
  cfg.tuning.window.bdp_cap = bdp_cap;
  return pipe_with(cfg, loss, writes, seed);
}

void print(const char* name, std::uint32_t cap, const Pipe& r) {
  const auto idle = [&](const PollStats& p) { return 1 - static_cast<double>(p.busy) / static_cast<double>(r.elapsed); };
  std::printf("[%s] cap %u: %.2f Gbit/s (virtual), %llu lost, %llu resent (%.2f per lost), at most %zu frames a requester "
              "iteration, at most %llu requests in a row without AckReq, idle share A %.2f B %.2f, B sent %.2f frames per request\n",
              name, cap, r.gbits(), static_cast<unsigned long long>(r.lost), static_cast<unsigned long long>(r.resent), r.per_lost(),
              r.max_tx, static_cast<unsigned long long>(r.longest_without_ack_req), idle(r.a), idle(r.b),
              static_cast<double>(r.b.tx) / static_cast<double>(std::max<std::uint64_t>(r.requests, 1)));
}

void expect_whole(const Pipe& r, std::uint64_t writes) {
  EXPECT_EQ(r.completed, writes);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(r.corrupt, 0u);
}

// A turn never sends more than half the cap (a third, in thirds), and no more than that goes
// without an ACK asked for; without the split a turn sends the whole cap.
TEST(SmallWindow, ATurnSendsAtMostHalfTheCapAndAsksForAnAckEveryHalf) {
  for (const std::uint32_t cap : {4u, 5u, 6u, 8u}) {
    const Pipe on = pipe(cap, true, 0, 200);
    const Pipe off = pipe(cap, false, 0, 200);
    print("split", cap, on);
    print("whole", cap, off);
    expect_whole(on, 200);
    expect_whole(off, 200);
    const std::uint32_t half = (cap + 1) / 2;
    EXPECT_LE(on.max_tx, half) << "cap " << cap;
    EXPECT_LE(on.longest_without_ack_req, half - 1) << "cap " << cap;
    EXPECT_EQ(off.max_tx, cap) << "cap " << cap;
    // In thirds (TransportTuning::small_window_parts 3).
    const Pipe thirds = pipe(cap, true, 0, 200, 1401, 3);
    expect_whole(thirds, 200);
    EXPECT_LE(thirds.max_tx, (cap + 2) / 3) << "cap " << cap;
    EXPECT_LE(thirds.longest_without_ack_req, (cap + 2) / 3 - 1) << "cap " << cap;
  }
}

// A large cap is left alone: half of it is not below tx_quantum (16), so a turn sends as before.
TEST(SmallWindow, ALargeCapIsLeftAlone) {
  const Pipe on = pipe(64, true, 0, 100);
  const Pipe off = pipe(64, false, 0, 100);
  expect_whole(on, 100);
  EXPECT_EQ(on.max_tx, off.max_tx);
  EXPECT_EQ(on.requests, off.requests);
}

// Two busy cores: with the whole small window built in one turn and answered by one ACK, each
// side idles while the other works, and a cap of 6 gets half the goodput of the uncapped 64;
// split, the requester's core stays busy and most of it comes back (the model's goodput, on
// virtual time; what is left is the fixed cost of three times the iterations and ACKs).
TEST(SmallWindow, TwoPollersStayBusyWithASplitSmallWindow) {
  const Pipe big = pipe(64, false, 0, 400);
  const Pipe whole = pipe(6, false, 0, 400);
  const Pipe split = pipe(6, true, 0, 400);
  print("uncapped", 64, big);
  print("whole", 6, whole);
  print("split", 6, split);
  for (const Pipe* r : {&big, &whole, &split}) expect_whole(*r, 400);
  const auto idle = [](const Pipe& r) { return 1 - static_cast<double>(r.a.busy) / static_cast<double>(r.elapsed); };
  EXPECT_LT(whole.gbits(), 0.6 * big.gbits());
  EXPECT_GT(split.gbits(), 0.8 * big.gbits());
  EXPECT_GT(idle(whole), 0.4);
  EXPECT_LT(idle(split), 0.2);
}

// Seeded 0.1 % loss both ways, four seeds: go-back-N resends what was in flight behind each loss,
// at most 4 per lost frame with a split cap of 5.
TEST(SmallWindow, ResentPerLostStaysWithinFourAtASplitCapOfFive) {
  Pipe all;
  for (std::uint64_t seed = 1401; seed < 1405; ++seed) {
    const Pipe r = pipe(5, true, 0.001, 1500, seed);
    expect_whole(r, 1500);
    all.lost += r.lost;
    all.resent += r.resent;
    all.completed += r.completed;
    all.elapsed += r.elapsed;
    all.requests += r.requests;
  }
  const Pipe uncapped = pipe(64, false, 0.001, 1500, 1401);
  print("split, four seeds", 5, all);
  print("uncapped", 64, uncapped);
  ASSERT_GT(all.lost, 0u);
  EXPECT_LE(all.per_lost(), 4.0);
  EXPECT_GT(uncapped.per_lost(), 2 * all.per_lost());
}

// Issue 21's go-back-N bound with session 15's held cap (interval 8192, floor 5, thirds; not the
// defaults: on the suite's one-lcore rig it cost a third of the goodput at 0.1 %, docs/loss.md,
// part 1, "Session 15"): at 0.1 % random loss both ways
// the BDP cap holds (loss events come a few hundred packets apart, under bdp_cap_loss_interval),
// at its floor of 5 on this model (a lone packet's round trip times the rate is under that), sent
// in thirds (bdp_cap_split, bdp_cap_parts): at most 4 resent per lost frame, four seeds, counted
// (the first loss of each run still costs the uncapped window, about 45). Session 14's
// defaults (interval 256: the cap held only at 1 % and more; floor 6; no split) resent what was in
// flight behind each loss. Without loss the held cap sends exactly what the uncapped QP sends.
TEST(SmallWindow, HeldCapResendsAtMostFourPerLostFrameAtOnePerMille) {
  rdma::EngineConfig defaults;  // session 15's proposed defaults (WindowTuning: not the defaults yet)
  defaults.tuning.window.bdp_cap_loss_interval = 8192;
  defaults.tuning.window.bdp_cap_floor = 5;
  defaults.tuning.window.bdp_cap_split = true;
  const rdma::EngineConfig session14;  // the defaults
  Pipe all;
  for (std::uint64_t seed = 1501; seed < 1505; ++seed) {
    const Pipe r = pipe_with(defaults, 0.001, 3000, seed);
    expect_whole(r, 3000);
    all.lost += r.lost;
    all.resent += r.resent;
    all.completed += r.completed;
    all.elapsed += r.elapsed;
    all.requests += r.requests;
  }
  const Pipe before = pipe_with(session14, 0.001, 1500, 1501);
  print("held cap in thirds, four seeds", 0, all);
  print("the defaults (session 14's)", 0, before);
  expect_whole(before, 1500);
  ASSERT_GT(all.lost, 0u);
  EXPECT_LE(all.per_lost(), 4.0);
  EXPECT_GT(before.per_lost(), 2 * all.per_lost());
  // Lossless: the cap never engages, so the defaults build the same frames, as many per turn, as a QP without it.
  const Pipe clean = pipe_with(defaults, 0, 400, 1501);
  const Pipe no_cap = pipe(256, false, 0, 400, 1501);
  expect_whole(clean, 400);
  EXPECT_EQ(clean.requests, no_cap.requests);
  EXPECT_EQ(clean.max_tx, no_cap.max_tx);
  EXPECT_EQ(clean.a.tx, no_cap.a.tx);
}

}  // namespace
}  // namespace roce::test::small_window_test
