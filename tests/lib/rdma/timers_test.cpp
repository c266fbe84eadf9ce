// Retransmission and RNR timers to the nanosecond on the injected clock.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/parser.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::timers_test {
namespace {

using namespace roce::proto;

struct Timed {
  Nanos at;
  std::uint8_t opcode;
  std::uint32_t psn;
  std::uint8_t syndrome;
  bool ack_req;
};

class Timers : public ::testing::Test {
 protected:
  void start(const QpOptions& o, LinkFaults a_to_b, LinkFaults b_to_a = {}) {
    net_.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg_);
    net_.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg_);
    a_to_b.delay = b_to_a.delay = kDelay;
    net_.connect("a", "b", a_to_b, b_to_a);
    net_.on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos t) {
      Packet p;
      if (parse_frame(f, {}, p) != ParseError::None) return;
      (from == "a" ? a_out_ : b_out_).push_back({t, p.opcode(), p.psn(), p.ext.aeth.syndrome, p.bth.ack_requested()});
    };
    a_ = make_endpoint(net_.host("a"), o);
    b_ = make_endpoint(net_.host("b"), o);
    connect_pair(a_, b_, o);
    buf_.assign(4096, std::byte{1});
    a_mr_ = reg(*a_.engine, a_.pd, buf_, IBV_ACCESS_LOCAL_WRITE);
    remote_.assign(4096, std::byte{0});
    b_mr_ = reg(*b_.engine, b_.pd, remote_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  // Nothing a sends arrives: only a's timers act.
  void start_blackholed(const QpOptions& o) {
    LinkFaults blackhole;
    blackhole.loss = 1.0;
    start(o, blackhole);
  }
  // A 100-byte WRITE from a into b's region.
  int post_write(std::uint64_t wr_id) {
    ibv_sge g = sge(buf_.data(), 100, a_mr_);
    return post(a_, IBV_WR_RDMA_WRITE, wr_id, &g, 1, reinterpret_cast<std::uint64_t>(remote_.data()), b_mr_->rkey());
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

  // Two WRITEs toward a peer that never answers, the IBA timer alone (timeout 10: 4.194304 ms,
  // retry_cnt 3); `probes`: TransportTuning::timer_probes. Returns their completions.
  std::vector<ibv_wc> run_retries_to_a_dead_peer(bool probes) {
    QpOptions o;
    o.timeout = 10;
    o.retry_cnt = kRetries;
    cfg_.tuning.early_retransmit_min = 0;
    // The congestion window (on by default) would resend one packet after a local ACK timeout
    // whatever the probes do (tested in loss_window_test.cpp).
    cfg_.tuning.window.go_back_n_congestion = false;
    cfg_.tuning.timer_probes = probes;
    start_blackholed(o);
    EXPECT_EQ(post_write(9), 0);
    EXPECT_EQ(post_write(10), 0);
    return run_for_completion(10 * kSecond);
  }
  // The first WRITE fails RETRY_EXC_ERR after the last retry's timeout, the second is flushed.
  void expect_retry_exceeded(const std::vector<ibv_wc>& wcs) {
    ASSERT_EQ(wcs.size(), 2u);
    EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(wcs[0].wr_id, 9u);
    EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(net_.now(), (1 + kRetries) * kRto);
    EXPECT_EQ(a_.qp->state(), rdma::QpState::Err);
    EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RetryExceededErr), 1u);
    EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RetransmitTimeouts), kRetries);
  }

  static constexpr std::uint8_t kRetries = 3;
  static constexpr Nanos kRto = 4096LL << 10;
  static constexpr Nanos kDelay = 3 * kMicro;
  rdma::EngineConfig cfg_;
  SimNetwork net_{42};
  Endpoint a_, b_;
  std::vector<std::byte> buf_, remote_;
  const rdma::MemoryRegion *a_mr_ = nullptr, *b_mr_ = nullptr;
  std::vector<Timed> a_out_, b_out_;
};

TEST_F(Timers, RetransmissionEveryLocalAckTimeoutThenRetryExceeded) {
  // Resending everything each time, as an RNIC does (session 9's timers).
  auto wcs = run_retries_to_a_dead_peer(false);
  // The first transmission carries both WRs; each retry resends both.
  ASSERT_EQ(a_out_.size(), 2u * (1 + kRetries));
  for (std::size_t i = 0; i < a_out_.size(); i += 2) EXPECT_EQ(a_out_[i].at, static_cast<Nanos>(i / 2) * kRto) << i;
  expect_retry_exceeded(wcs);
  ibv_sge g = sge(buf_.data(), 100, a_mr_);
  // Work posted in ERR is flushed at once.
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 11, &g, 1, 0, 0), 0);
  auto flushed = drain(a_);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].status, IBV_WC_WR_FLUSH_ERR);
}

// With timer probes (the default) each local ACK timeout resends the oldest packet alone, asking
// for an ACK, and still uses a retry: a dead peer fails the QP at the same moment.
TEST_F(Timers, EachLocalAckTimeoutProbesTheOldestPacketThenRetryExceeded) {
  auto wcs = run_retries_to_a_dead_peer(true);
  ASSERT_EQ(a_out_.size(), 2u + kRetries);
  for (std::size_t i = 2; i < a_out_.size(); ++i) {
    EXPECT_EQ(a_out_[i].at, static_cast<Nanos>(i - 1) * kRto) << i;
    EXPECT_EQ(a_out_[i].psn, a_out_[0].psn) << i;
    EXPECT_TRUE(a_out_[i].ack_req) << i;
  }
  expect_retry_exceeded(wcs);
}

TEST_F(Timers, TimeoutZeroMeansNoRetransmission) {
  QpOptions o;
  o.timeout = 0;
  start_blackholed(o);
  ASSERT_EQ(post_write(1), 0);
  auto wcs = run_for_completion(100 * kSecond);
  EXPECT_TRUE(wcs.empty());
  EXPECT_EQ(a_out_.size(), 1u);
}

// Requests that reach a QP while its own WRITE waits for an ACK leave its retransmission timer
// where it was: the engine refreshes only the QP's place in the active ring after a request
// (docs/perf-changes.md section 36), so the timeout must still come kRto after the first send.
TEST_F(Timers, RequestsArrivingMeanwhileLeaveTheRetransmissionTimerWhereItWas) {
  QpOptions o;
  o.timeout = 10;
  o.retry_cnt = kRetries;
  cfg_.tuning.early_retransmit_min = 0;
  cfg_.tuning.window.go_back_n_congestion = false;
  start_blackholed(o);  // a's packets (its WRITE, its ACKs to b) are lost; b's reach a
  std::vector<std::byte> a_target(4096), b_src(4096, std::byte{5});
  const rdma::MemoryRegion* target = reg(*a_.engine, a_.pd, a_target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  const rdma::MemoryRegion* src = reg(*b_.engine, b_.pd, b_src, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_EQ(post_write(1), 0);
  constexpr int kRequests = 5;
  for (int i = 0; i < kRequests; ++i) {
    ibv_sge g = sge(b_src.data(), 64, src);
    ASSERT_EQ(post(b_, IBV_WR_RDMA_WRITE, 100 + i, &g, 1, reinterpret_cast<std::uint64_t>(a_target.data()) + 64 * i, target->rkey()), 0);
    net_.run_idle(net_.now() + kRto / (2 * kRequests));
  }
  // Requests (first sends and b's resends) reached a while its timer ran, and were executed.
  EXPECT_GE(a_.qp->counters().get(rdma::Counter::RcvdPkts), static_cast<std::uint64_t>(kRequests));
  EXPECT_EQ(a_target[0], std::byte{5});
  net_.run_idle(kRto + kDelay);
  std::vector<Nanos> writes;
  for (const Timed& t : a_out_)
    if (t.opcode == raw(Opcode::RcWriteOnly)) writes.push_back(t.at);
  // The simulation may step past the limit to the next event (the next timeout): only the first
  // resend is the point.
  ASSERT_GE(writes.size(), 2u);
  EXPECT_EQ(writes[0], 0);
  EXPECT_EQ(writes[1], kRto);
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
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RcvdRnrErr), 3u);
  EXPECT_EQ(b_.qp->counters().get(rdma::Counter::SendRnrErr), 3u);
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
  const rdma::MemoryRegion* rmr = reg(*b_.engine, b_.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
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
  rdma::EngineConfig cfg;
  cfg.tuning.rnr_exponential_backoff = true;
  net_.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
  net_.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
  LinkFaults f;
  f.delay = kDelay;
  net_.connect("a", "b", f, f);
  net_.on_transmit = [this](const std::string& from, std::span<const std::byte> fr, Nanos t) {
    Packet p;
    if (parse_frame(fr, {}, p) == ParseError::None) (from == "a" ? a_out_ : b_out_).push_back({t, p.opcode(), p.psn(), 0, p.bth.ack_requested()});
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
  const rdma::MemoryRegion* bm = reg(*a_.engine, a_.pd, big, IBV_ACCESS_LOCAL_WRITE);
  const rdma::MemoryRegion* dm = reg(*b_.engine, b_.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
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
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RcvdSeqErr), 1u);
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RetransmittedPkts), 4u);
}

TEST_F(Timers, PacketFillingTheWindowAsksForAnAck) {
  // A window shorter than ack_req_every: without AckReq on the packet that fills it, the
  // responder would stay silent and the requester would wait for the local ACK timeout.
  cfg_.tuning.max_inflight_packets = 8;
  cfg_.tuning.max_inflight_bytes = 0;
  cfg_.tuning.ack_req_every = 64;
  start(QpOptions{}, {});
  std::vector<std::byte> big(20 * 1024, std::byte{5}), dst(20 * 1024);
  const rdma::MemoryRegion* bm = reg(*a_.engine, a_.pd, big, IBV_ACCESS_LOCAL_WRITE);
  const rdma::MemoryRegion* dm = reg(*b_.engine, b_.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge g = sge(big.data(), static_cast<std::uint32_t>(big.size()), bm);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  auto wcs = run_for_completion(kSecond);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst, big);
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RetransmittedPkts), 0u);
  EXPECT_LT(net_.now(), 200 * kMicro);
  ASSERT_EQ(a_out_.size(), 20u);
  EXPECT_FALSE(a_out_[6].ack_req);
  EXPECT_TRUE(a_out_[7].ack_req);  // the 8th packet fills the window
  EXPECT_TRUE(a_out_[19].ack_req);
}

// Early retransmission: a go-back-N whose first retransmitted packet is lost again leaves the
// responder silent (it sent its one NAK for that PSN), so only a timer can restart it.
class EarlyRetransmit : public Timers {
 protected:
  // These count the go-back from una the early timer starts: the tail probe that goes first by
  // default (one packet, tail_probe_test.cpp) is off here.
  EarlyRetransmit() { cfg_.tuning.tail_probe_min = 0; }
  // One small WRITE (frame 0) gives the requester its first RTT sample; then a 5-packet WRITE
  // (frames 1-5) loses its second packet (frame 2) and, after the NAK, the retransmission of
  // that packet too (frame 6).
  // The send window on, a 1 us early-timer floor, and a peer that never answers: the IBA timer
  // (timeout 10, one retry) fails the QP after two 4.2 ms expiries.
  void start_windowed_blackholed() {
    cfg_.tuning.early_retransmit_min = kMicro;
    cfg_.tuning.window.enabled = true;
    QpOptions o;
    o.timeout = 10;
    o.retry_cnt = 1;
    start_blackholed(o);
  }
  void run_lost_retransmission(Nanos early_min) {
    cfg_.tuning.early_retransmit_min = early_min;
    LinkFaults faults;
    faults.drop_if = [](std::span<const std::byte>, std::uint64_t index) { return index == 2 || index == 6; };
    start(QpOptions{}, faults);
    ASSERT_EQ(post_write(1), 0);
    auto first = run_for_completion(kSecond);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(first[0].status, IBV_WC_SUCCESS);
    big_.assign(5000, std::byte{7});
    dst_.assign(5000, std::byte{0});
    const rdma::MemoryRegion* bm = reg(*a_.engine, a_.pd, big_, IBV_ACCESS_LOCAL_WRITE);
    const rdma::MemoryRegion* dm = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_sge g = sge(big_.data(), 5000, bm);
    posted_at_ = net_.now();
    ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 2, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dm->rkey()), 0);
    wcs_ = run_for_completion(kSecond);
  }
  std::uint64_t count(rdma::Counter c) const { return a_.qp->counters().get(c); }

  std::vector<std::byte> big_, dst_;
  std::vector<ibv_wc> wcs_;
  Nanos posted_at_ = 0;
};

TEST_F(EarlyRetransmit, LostRetransmissionIsResentAfterTheEarlyTimerNotTheLocalAckTimeout) {
  run_lost_retransmission(kMilli);
  ASSERT_EQ(wcs_.size(), 1u);
  EXPECT_EQ(wcs_[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst_, big_);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 1u);
  EXPECT_EQ(count(rdma::Counter::RcvdSeqErr), 1u);
  // Frames 6-9 are the go-back-N after the NAK; frame 10 restarts at the lost PSN one early
  // timeout (max(1 ms, srtt + 4 rttvar, 2 srtt) = 1 ms here) after it.
  ASSERT_GE(a_out_.size(), 11u);
  EXPECT_EQ(a_out_[6].psn, a_out_[2].psn);
  EXPECT_EQ(a_out_[10].psn, a_out_[2].psn);
  EXPECT_EQ(a_out_[10].at - a_out_[6].at, kMilli);
  EXPECT_LT(net_.now() - posted_at_, 2 * kMilli);  // the local ACK timeout is 67 ms
}

TEST_F(EarlyRetransmit, DisabledTheLostRetransmissionWaitsForTheLocalAckTimeout) {
  run_lost_retransmission(0);
  ASSERT_EQ(wcs_.size(), 1u);
  EXPECT_EQ(wcs_[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst_, big_);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 1u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  ASSERT_GE(a_out_.size(), 11u);
  EXPECT_EQ(a_out_[10].at - a_out_[6].at, Nanos{4096} << 14);
}

TEST_F(EarlyRetransmit, NoRttSampleNoEarlyRetransmission) {
  // Nothing ever came back, so there is no RTT to base an early timer on: only the IBA timer.
  cfg_.tuning.early_retransmit_min = kMicro;
  QpOptions o;
  o.timeout = 10;
  o.retry_cnt = 1;
  start_blackholed(o);
  ASSERT_EQ(post_write(1), 0);
  auto wcs = run_for_completion(10 * kSecond);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(a_out_.size(), 2u);
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::EarlyRetransmits), 0u);
}

TEST_F(EarlyRetransmit, WithTheSendWindowNoAnswerYetTheEarlyTimerWaitsSixteenTimesItsFloor) {
  // With the send window on (a full tail-drop queue can take a QP's whole first window): no RTT
  // to base an early timer on, so it waits 16 times its floor, doubling each time, and the IBA
  // timer still fails the QP on time.
  start_windowed_blackholed();
  ASSERT_EQ(post_write(1), 0);
  auto wcs = run_for_completion(10 * kSecond);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  ASSERT_GE(a_out_.size(), 3u);
  EXPECT_EQ(a_out_[1].at, 16 * kMicro);
  EXPECT_EQ(a_out_[2].at, 16 * kMicro + 32 * kMicro);
  EXPECT_GT(a_.qp->counters().get(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_EQ(net_.now(), 2 * (Nanos{4096} << 10));
}

TEST_F(EarlyRetransmit, ATurnOfPacketsAskingForAnAckArmsTheEarlyTimerOnce) {
  // Four WRITEs posted together leave in one transmit turn, each asking for an ACK; the early
  // timer is armed once at the end of the turn (Completer::end_send_turn), from the turn's time:
  // with the send window and no RTT sample yet, 16 times its floor after the turn, the go-back
  // starting at the oldest. Without that arming the resend would wait for the IBA timer (4.2 ms).
  start_windowed_blackholed();
  for (std::uint64_t id = 1; id <= 4; ++id) ASSERT_EQ(post_write(id), 0);
  net_.run_until([&] { return a_out_.size() >= 5; }, kSecond);
  ASSERT_GE(a_out_.size(), 5u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a_out_[i].at, 0);
    EXPECT_TRUE(a_out_[i].ack_req);
  }
  EXPECT_EQ(a_out_[4].at, 16 * kMicro);
  EXPECT_EQ(a_out_[4].psn, a_out_[0].psn);
  EXPECT_GT(a_.qp->counters().get(rdma::Counter::EarlyRetransmits), 0u);
}

TEST_F(EarlyRetransmit, EarlyRetransmissionsNeitherUseRetriesNorPostponeRetryExceeded) {
  cfg_.tuning.early_retransmit_min = 500 * kMicro;
  QpOptions o;
  o.timeout = 10;  // 4.194304 ms
  o.retry_cnt = 2;
  bool dead = false;
  LinkFaults faults;
  faults.drop_if = [&dead](std::span<const std::byte>, std::uint64_t) { return dead; };
  start(o, faults);
  ASSERT_EQ(post_write(1), 0);
  auto first = run_for_completion(kSecond);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].status, IBV_WC_SUCCESS);
  dead = true;
  const Nanos posted = net_.now();
  ASSERT_EQ(post_write(2), 0);
  auto wcs = run_for_completion(10 * kSecond);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  const Nanos rto = Nanos{4096} << 10;
  EXPECT_EQ(net_.now() - posted, (1 + o.retry_cnt) * rto);
  EXPECT_EQ(a_.qp->counters().get(rdma::Counter::RetransmitTimeouts), 2u);
  // Doubling from 0.5 ms while below the 4.2 ms timeout: 0.5, 1 and 2 ms after the post (the
  // next, 4 ms later, would come after the timeout); after each timeout the doubling goes on.
  EXPECT_GE(a_.qp->counters().get(rdma::Counter::EarlyRetransmits), 3u);
  std::size_t early = 0;
  for (const Timed& t : a_out_)
    if (t.at > posted && t.at < posted + rto) ++early;
  EXPECT_EQ(early, 3u);
}

TEST_F(EarlyRetransmit, ARoundTripGrownPastTheTimerIsLearnedFromTheAckOfTheFirstCopy) {
  // A steady 100 us round trip, then 240 us (a queue builds): the timer, twice srtt after the
  // AckReq, fires before the first message's ACK, which comes back 40 us after the early
  // retransmission, under half a round trip: it answers the first copy. Taking that sample
  // moves the timer past 240 us. Dropping it (plain Karn) left srtt at 100 us and resent every
  // message after.
  cfg_.tuning.early_retransmit_min = 20 * kMicro;
  start(QpOptions{}, {});
  net_.faults("a").delay = net_.faults("b").delay = 50 * kMicro;
  auto write_and_wait = [&](std::uint64_t id) {
    ASSERT_EQ(post_write(id), 0);
    auto wcs = run_for_completion(kSecond);
    ASSERT_EQ(wcs.size(), 1u);
    ASSERT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  };
  for (std::uint64_t id = 1; id <= 30; ++id) write_and_wait(id);
  ASSERT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  net_.faults("a").delay = net_.faults("b").delay = 120 * kMicro;
  for (std::uint64_t id = 31; id <= 50; ++id) write_and_wait(id);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 1u);
  EXPECT_EQ(count(rdma::Counter::SpuriousEarlyRetransmits), 1u);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
}

}  // namespace
}  // namespace roce::test::timers_test
