// A timer toward a starved peer costs one probe, not a window (docs/loss.md, "A timer sends one
// probe"; TransportTuning::timer_probes), on virtual time, in go-back-N and selective repeat: the
// peer's poller is descheduled (nothing it is sent arrives, nothing it owes goes out) for a
// while, then it answers everything. Every request packet on the wire is counted by PSN and
// time, and every byte checked.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "tests/lib/rdma/frame_look.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::timer_probe_test {
namespace {

using namespace roce::proto;

constexpr std::uint32_t kMessage = 32 * 1024;  // 32 packets at the 1 KiB MTU, as 8 WRITEs of 4
constexpr std::uint32_t kWrites = 8;
constexpr Nanos kDelay = 2 * kMicro;
constexpr Nanos kDrain = 20 * kMicro;  // a poller back from a stall reads a frame per kDrain

bool is_write(std::uint8_t op) { return op >= 0x06 && op <= 0x0B; }

enum class Mode { GoBackN, SelectiveRepeat };

class TimerProbe : public ::testing::TestWithParam<Mode> {
 protected:
  void build(bool probes = true) {
    net_ = std::make_unique<SimNetwork>(37);
    rdma::EngineConfig cfg;
    cfg.tuning.timer_probes = probes;
    net_->add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
    net_->add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
    LinkFaults fa, fb;
    fa.drop_if = [this](std::span<const std::byte> f, std::uint64_t) {
      const Frame x = look(f);
      return x.ok && is_write(x.opcode) && lose_.contains(x.psn) && first_copy_.insert(x.psn).second;
    };
    net_->connect("a", "b", fa, fb);
    net_->on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos t) {
      // A starved poller: what it sends moves when it runs again; what is sent to it waits in
      // its receive ring (in order, nothing lost), which it then drains a frame per kDrain.
      if (from == "b") {
        net_->faults(from).delay = t < stall_end_ ? stall_end_ - t + kDelay : kDelay;
      } else if (t < stall_end_ || ring_free_ > t) {
        ring_free_ = std::max({t, stall_end_, ring_free_}) + kDrain;
        net_->faults(from).delay = ring_free_ - t;
      } else {
        net_->faults(from).delay = kDelay;
      }
      const Frame x = look(f);
      if (x.ok && from == "a" && is_write(x.opcode)) {
        if (++sent_[x.psn] > 1) resent_at_.push_back(t);
      }
    };
    a_ = make_endpoint(net_->host("a"), o_);
    b_ = make_endpoint(net_->host("b"), o_);
    if (GetParam() == Mode::SelectiveRepeat) {
      ASSERT_TRUE(a_.qp->set_selective_repeat(64).ok());
      ASSERT_TRUE(b_.qp->set_selective_repeat(64).ok());
    }
    connect_pair(a_, b_, o_);
    mem_.make(a_, b_, 2 * kMessage, 11);
  }
  // kWrites WRITEs together kMessage long at `off`, run until they complete.
  void write(std::size_t off) {
    constexpr std::uint32_t each = kMessage / kWrites;
    for (std::uint32_t i = 0; i < kWrites; ++i) {
      ibv_sge g = sge(mem_.src.data() + off + i * each, each, mem_.smr);
      ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, i, &g, 1, reinterpret_cast<std::uint64_t>(mem_.dst.data() + off + i * each), mem_.dmr->rkey()), 0);
    }
    std::vector<ibv_wc> done;
    net_->run_until(
        [&] {
          for (const ibv_wc& wc : drain(a_)) done.push_back(wc);
          return done.size() == kWrites;
        },
        net_->now() + 10 * kSecond);
    ASSERT_EQ(done.size(), kWrites);
    for (const ibv_wc& wc : done) EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(std::memcmp(mem_.src.data() + off, mem_.dst.data() + off, kMessage), 0);
  }
  // The first WRITE goes through untouched (an RTT sample); b is starved for `stall` from the
  // moment the second is posted. Returns how long the second took.
  Nanos run_second(Nanos stall) {
    write(0);
    resent_at_.clear();
    const Nanos t0 = net_->now();
    stall_end_ = t0 + stall;
    write(kMessage);
    return net_->now() - t0;
  }
  std::uint32_t psn(std::uint32_t i) const { return o_.sq_psn + i; }
  std::uint64_t count(rdma::Counter c) const { return a_.qp->counters().get(c); }
  std::uint64_t probes() const { return count(rdma::Counter::TailProbes) + count(rdma::Counter::OldestProbes); }
  // Each timer sent one packet: never two resends at the same instant.
  void expect_one_packet_per_timer() const {
    for (std::size_t i = 1; i < resent_at_.size(); ++i) EXPECT_LT(resent_at_[i - 1], resent_at_[i]) << "resend " << i;
  }

  QpOptions o_{};
  std::unique_ptr<SimNetwork> net_;
  Endpoint a_, b_;
  WriteBuffers mem_;
  std::set<std::uint32_t> lose_, first_copy_;
  std::map<std::uint32_t, int> sent_;
  std::vector<Nanos> resent_at_;
  Nanos stall_end_ = 0;
  Nanos ring_free_ = 0;  // when b's receive ring has been read up to the latest frame
};

// Starved for 20 ms (below the 67 ms local ACK timeout): the early timer fires again and again,
// each time one packet (its wait doubling), and the answer after the stall covers everything.
TEST_P(TimerProbe, AStarvedPeerCostsOneProbePerTimerNotAGoBack) {
  build();
  const Nanos took = run_second(20 * kMilli);
  EXPECT_GE(took, 20 * kMilli);
  EXPECT_LT(took, 20 * kMilli + 2 * kMilli);  // answered once it has read its ring
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::RetransmittedPkts), probes());
  EXPECT_GE(probes(), 3u);   // 250 us doubling to 20 ms: a handful of timers ...
  EXPECT_LE(probes(), 10u);  // ... not one per round trip
  expect_one_packet_per_timer();
}

// Starved for 200 ms, past three local ACK timeouts: each uses a retry (the QP lives: progress
// gives them back) and sends one packet; nothing goes back.
TEST_P(TimerProbe, APeerStarvedPastTheLocalAckTimeoutCostsOneProbePerRetry) {
  build();
  const Nanos took = run_second(200 * kMilli);
  EXPECT_LT(took, 200 * kMilli + 2 * kMilli);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 2u);  // at 67 and 134 ms (the next, 201 ms, after the answer)
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_EQ(count(rdma::Counter::WindowCuts), 0u);
  EXPECT_EQ(count(rdma::Counter::RetransmittedPkts), probes());
  EXPECT_LE(probes(), 12u);
  expect_one_packet_per_timer();
}

// The same stall with session 9's timers: the local ACK timeout resends the window.
TEST_P(TimerProbe, WithoutTimerProbesTheLocalAckTimeoutResendsTheWindow) {
  build(false);
  run_second(200 * kMilli);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 2u);
  EXPECT_GE(count(rdma::Counter::RetransmittedPkts), 32u);
}

// A stall and a real loss: the message's last four packets never arrived. The probes' answer
// after the stall shows the hole (a NAK, or a SACK naming it), and only those four go again.
TEST_P(TimerProbe, ALostTailBehindAStarvedPeerIsResentOnceTheProbeIsAnswered) {
  build();
  lose_ = {psn(60), psn(61), psn(62), psn(63)};
  const Nanos took = run_second(20 * kMilli);
  EXPECT_LT(took, 20 * kMilli + 2 * kMilli);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_LE(count(rdma::Counter::RetransmittedPkts), probes() + 4);
  for (std::uint32_t i = 60; i < 64; ++i) EXPECT_GE(sent_[psn(i)], 2) << "PSN +" << i;
  for (std::uint32_t i = 33; i < 60; ++i) EXPECT_EQ(sent_[psn(i)], 1) << "PSN +" << i;
}

// A real loss of the tail with the peer awake is found by the first probe, soon.
TEST_P(TimerProbe, ALostTailIsRecoveredByTheFirstProbe) {
  build();
  lose_ = {psn(62), psn(63)};
  const Nanos took = run_second(0);
  EXPECT_LT(took, 2 * kMilli);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_LE(count(rdma::Counter::RetransmittedPkts), 3u);
}

INSTANTIATE_TEST_SUITE_P(Modes, TimerProbe, ::testing::Values(Mode::GoBackN, Mode::SelectiveRepeat),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return i.param == Mode::GoBackN ? std::string("GoBackN") : std::string("SelectiveRepeat");
                         });

}  // namespace
}  // namespace roce::test::timer_probe_test
