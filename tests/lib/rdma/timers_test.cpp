// Retransmission and RNR timers to the nanosecond on the injected clock.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/parser.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test {
namespace {

using namespace roce::proto;

struct Timed {
  Nanos at;
  std::uint8_t opcode;
  std::uint32_t psn;
  std::uint8_t syndrome;
};

class Timers : public ::testing::Test {
 protected:
  void start(const QpOptions& o, LinkFaults a_to_b, LinkFaults b_to_a = {}) {
    net_.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});
    net_.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    a_to_b.delay = b_to_a.delay = kDelay;
    net_.connect("a", "b", a_to_b, b_to_a);
    net_.on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos t) {
      Packet p;
      if (parse_frame(f, {}, p) != ParseError::None) return;
      (from == "a" ? a_out_ : b_out_).push_back({t, p.opcode(), p.psn(), p.ext.aeth.syndrome});
    };
    a_ = make_endpoint(net_.host("a"), o);
    b_ = make_endpoint(net_.host("b"), o);
    connect_pair(a_, b_, o);
    buf_.assign(4096, std::byte{1});
    a_mr_ = reg(*a_.engine, a_.pd, buf_, IBV_ACCESS_LOCAL_WRITE);
    remote_.assign(4096, std::byte{0});
    b_mr_ = reg(*b_.engine, b_.pd, remote_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  std::vector<ibv_wc> run_for_completion(Nanos limit) {
    std::vector<ibv_wc> got;
    net_.run_until([&] {
      auto more = drain(a_);
      got.insert(got.end(), more.begin(), more.end());
      return !got.empty();
    }, limit);
    return got;
  }

  static constexpr Nanos kDelay = 3 * kMicro;
  SimNetwork net_{42};
  Endpoint a_, b_;
  std::vector<std::byte> buf_, remote_;
  const MemoryRegion *a_mr_ = nullptr, *b_mr_ = nullptr;
  std::vector<Timed> a_out_, b_out_;
};

TEST_F(Timers, RetransmissionEveryLocalAckTimeoutThenRetryExceeded) {
  QpOptions o;
  o.timeout = 10;  // 4.096 us * 2^10 = 4.194304 ms
  o.retry_cnt = 3;
  LinkFaults blackhole;
  blackhole.loss = 1.0;
  start(o, blackhole);
  ibv_sge g = sge(buf_.data(), 100, a_mr_);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 9, &g, 1, reinterpret_cast<std::uint64_t>(remote_.data()), b_mr_->rkey()), 0);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 10, &g, 1, reinterpret_cast<std::uint64_t>(remote_.data()), b_mr_->rkey()), 0);
  auto wcs = run_for_completion(10 * kSecond);
  const Nanos rto = 4096LL << 10;
  // The first transmission carries both WRs; each retry resends both.
  ASSERT_EQ(a_out_.size(), 2u * (1 + o.retry_cnt));
  for (std::size_t i = 0; i < a_out_.size(); i += 2) EXPECT_EQ(a_out_[i].at, static_cast<Nanos>(i / 2) * rto) << i;
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(wcs[0].wr_id, 9u);
  EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(net_.now(), (1 + o.retry_cnt) * rto);
  EXPECT_EQ(a_.qp->state(), QpState::Err);
  EXPECT_EQ(a_.qp->counters().get(Counter::RetryExceededErr), 1u);
  EXPECT_EQ(a_.qp->counters().get(Counter::RetransmitTimeouts), 3u);
  // Work posted in ERR is flushed at once.
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 11, &g, 1, 0, 0), 0);
  auto flushed = drain(a_);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(Timers, TimeoutZeroMeansNoRetransmission) {
  QpOptions o;
  o.timeout = 0;
  LinkFaults blackhole;
  blackhole.loss = 1.0;
  start(o, blackhole);
  ibv_sge g = sge(buf_.data(), 100, a_mr_);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(remote_.data()), b_mr_->rkey()), 0);
  auto wcs = run_for_completion(100 * kSecond);
  EXPECT_TRUE(wcs.empty());
  EXPECT_EQ(a_out_.size(), 1u);
}

class RnrTimers : public Timers, public ::testing::WithParamInterface<int> {};

TEST_P(RnrTimers, RnrNakWaitFollowsTheTimerCodeThenRnrRetryExceeded) {
  QpOptions o;
  o.min_rnr_timer = static_cast<std::uint8_t>(GetParam());
  o.rnr_retry = 2;
  start(o, {});
  ibv_sge g = sge(buf_.data(), 10, a_mr_);
  ASSERT_EQ(post(a_, IBV_WR_SEND, 1, &g, 1), 0);
  auto wcs = run_for_completion(100 * kSecond);
  const Nanos wait = static_cast<Nanos>(kRnrTimerNs[o.min_rnr_timer]);
  ASSERT_EQ(a_out_.size(), 3u);  // first try + rnr_retry retries
  ASSERT_EQ(b_out_.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(Syndrome{b_out_[i].syndrome}.is_rnr_nak());
    EXPECT_EQ(Syndrome{b_out_[i].syndrome}.value(), o.min_rnr_timer);
    if (i > 0) {
      EXPECT_EQ(a_out_[i].at, b_out_[i - 1].at + kDelay + wait) << "retry " << i;
    }
  }
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(a_.qp->counters().get(Counter::RcvdRnrErr), 3u);
  EXPECT_EQ(b_.qp->counters().get(Counter::SendRnrErr), 3u);
}

INSTANTIATE_TEST_SUITE_P(TimerCodes, RnrTimers, ::testing::Values(1, 5, 12, 18, 0));

TEST_F(Timers, RnrRetrySevenRetriesForeverUntilAReceiveIsPosted) {
  QpOptions o;
  o.min_rnr_timer = 1;  // 10 us
  o.rnr_retry = 7;
  start(o, {});
  ibv_sge g = sge(buf_.data(), 10, a_mr_);
  ASSERT_EQ(post(a_, IBV_WR_SEND, 1, &g, 1), 0);
  net_.run_until([&] { return a_out_.size() >= 50; }, kSecond);
  EXPECT_TRUE(drain(a_).empty());
  std::vector<std::byte> rbuf(64);
  const MemoryRegion* rmr = reg(*b_.engine, b_.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rg = sge(rbuf.data(), 64, rmr);
  ASSERT_EQ(post_recv(b_, 5, &rg, 1), 0);
  auto wcs = run_for_completion(kSecond);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
}

TEST_F(Timers, RnrExponentialBackoffDoublesTheWait) {
  QpOptions o;
  o.min_rnr_timer = 1;
  o.rnr_retry = 4;
  EngineConfig cfg;
  cfg.tuning.rnr_exponential_backoff = true;
  net_.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
  net_.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
  LinkFaults f;
  f.delay = kDelay;
  net_.connect("a", "b", f, f);
  net_.on_transmit = [this](const std::string& from, std::span<const std::byte> fr, Nanos t) {
    Packet p;
    if (parse_frame(fr, {}, p) == ParseError::None) (from == "a" ? a_out_ : b_out_).push_back({t, p.opcode(), p.psn(), 0});
  };
  a_ = make_endpoint(net_.host("a"), o);
  b_ = make_endpoint(net_.host("b"), o);
  connect_pair(a_, b_, o);
  buf_.assign(64, std::byte{1});
  a_mr_ = reg(*a_.engine, a_.pd, buf_, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf_.data(), 10, a_mr_);
  ASSERT_EQ(post(a_, IBV_WR_SEND, 1, &g, 1), 0);
  run_for_completion(kSecond);
  ASSERT_EQ(a_out_.size(), 5u);
  for (std::size_t i = 1; i < a_out_.size(); ++i)
    EXPECT_EQ(a_out_[i].at - b_out_[i - 1].at - kDelay, Nanos{10'000} << (i - 1)) << i;
}

TEST_F(Timers, SequenceNakTriggersImmediateGoBackN) {
  QpOptions o;
  LinkFaults drop_second;
  drop_second.drop_if = [](std::span<const std::byte>, std::uint64_t index) { return index == 1; };
  start(o, drop_second);
  std::vector<std::byte> big(5000, std::byte{7});
  std::vector<std::byte> dst(5000);
  const MemoryRegion* bm = reg(*a_.engine, a_.pd, big, IBV_ACCESS_LOCAL_WRITE);
  const MemoryRegion* dm = reg(*b_.engine, b_.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge g = sge(big.data(), 5000, bm);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  auto wcs = run_for_completion(kSecond);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst, big);
  // Exactly one NAK, and the retransmission starts right at the lost PSN, well before any RTO.
  std::size_t naks = 0;
  for (const Timed& t : b_out_) naks += Syndrome{t.syndrome}.is_nak();
  EXPECT_EQ(naks, 1u);
  EXPECT_EQ(a_out_.size(), 5u + 4u);  // 5 packets, then packets 2..5 again
  EXPECT_EQ(a_out_[5].psn, a_out_[1].psn);
  EXPECT_LT(net_.now(), 100 * kMicro);
  EXPECT_EQ(a_.qp->counters().get(Counter::RcvdSeqErr), 1u);
  EXPECT_EQ(a_.qp->counters().get(Counter::RetransmittedPkts), 4u);
}

}  // namespace
}  // namespace roce::test
