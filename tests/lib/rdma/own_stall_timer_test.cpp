// A local ACK timer that expires while our own worker stands still (Engine::note_stall; the
// lcore descheduled on a busy host) was not waiting for the path: it moves on by the stall, once
// per start, and uses no retry; a peer that really stopped still times out and exhausts retry_cnt
// (docs/loss.md part 1, "Session 20 (gbn20)"). A raw peer answers on virtual time; what is
// checked is what the engine sends and counts, and when its timers are due.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/psn.hpp"
#include "tests/support/raw_peer_test.hpp"

namespace roce::test::own_stall_timer_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xC1};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 14};
constexpr std::uint32_t kPeerQpn = 0x170;
constexpr std::uint32_t kS = 0x200;  // the requester's first PSN
constexpr std::uint64_t kRemote = 0x10000;
constexpr std::uint32_t kRkey = 0x1234;
constexpr Nanos kRto = Nanos{4096} << 14;  // timeout 14 (perftest's): 67.1 ms
constexpr std::uint8_t kRetries = 7;       // retry_cnt (perftest's)
constexpr Nanos kRtt = 4 * kMicro;

class OwnStallTimer : public RawPeerTest {
 protected:
  void SetUp() override {
    RawPeerSetup s;
    s.peer_mac = kPeerMac;
    s.peer_ip = kPeerIp;
    s.peer_qpn = kPeerQpn;
    s.rts = true;
    s.sq_psn = kS;
    s.max_rd_atomic = 4;
    bring_up(s);
    buf_.assign(4096, std::byte{6});
    mr_ = reg(*engine_, ep_.pd, buf_, IBV_ACCESS_LOCAL_WRITE);
    // A few exchanges at a 4 us round trip: an RTT sample, so the early timer and probes run.
    for (int i = 0; i < 12; ++i) {
      EXPECT_EQ(send(2), 2u);
      now_ += kRtt;
      acknowledge_all();
    }
    EXPECT_EQ(ep_.qp->completer().srtt(), kRtt);
    wcs_.clear();
  }
  // `n` one-packet WRITEs posted and sent now; returns the frames sent.
  std::size_t send(unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      ibv_sge g = sge(buf_.data(), 64, mr_);
      EXPECT_EQ(post(ep_, IBV_WR_RDMA_WRITE, next_psn_, &g, 1, kRemote, kRkey, IBV_SEND_SIGNALED), 0);
      ++next_psn_;
    }
    return peer_->collect(now_).size();
  }
  // Our worker comes back at `t` from a stall that began at `from`, as dp::Worker::poll does:
  // the engine hears of it (if `noted`), the receive queue is empty (the peer has not answered:
  // it shares the stall, or its answer is still on the way), and the timers due then run.
  // Returns the frames the engine sends.
  std::size_t wake(Nanos from, Nanos t, bool noted) {
    now_ = t;
    if (noted) engine_->note_stall(from, now_);
    engine_->advance(now_);
    return peer_->collect(now_).size();
  }
  std::size_t at(Nanos t) {
    now_ = t;
    engine_->advance(now_);
    return peer_->collect(now_).size();
  }
  void acknowledge_all() {
    ExtHeaders e;
    e.aeth = Aeth{Syndrome::ack().raw, Be24::of(0)};
    peer_->send(peer_->frame(Opcode::RcAck, psn_add(kS, next_psn_ - 1), e, {}, false), now_);
    resent_after_ack_ += peer_->collect(now_).size();
    for (const ibv_wc& wc : drain(ep_)) wcs_.push_back(wc);
  }
  Nanos due() const { return ep_.qp->completer().deadline(); }

  Nanos now_ = 0;
  std::uint32_t next_psn_ = 0;
  std::size_t resent_after_ack_ = 0;
  std::vector<ibv_wc> wcs_;
  std::vector<std::byte> buf_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

// Two WRITEs go, then our worker stands still for 100 ms (longer than the 67 ms timeout) and
// wakes, its queue read and empty, with the local ACK timer and the tail probe's timer both due;
// the ACK (its peer stalled with us, or its answer still on the link) comes 3 us later. Noted:
// the timeout is ours, not the path's: moved on, no retry used, no window cut; the early timer
// does what it would have done before the stall, one tail probe (the newest WRITE alone), and
// the ACK completes both WRITEs with nothing else resent. Not noted (sessions 18-19, the test
// below): the ACK timer goes first, a timeout and a retry.
TEST_F(OwnStallTimer, AStallLongerThanTheTimeoutIsNoTimeout) {
  const std::uint64_t resent0 = count(rdma::Counter::RetransmittedPkts);
  const std::uint64_t cuts0 = count(rdma::Counter::WindowCuts);
  const Nanos t0 = now_;
  ASSERT_EQ(send(2), 2u);
  ASSERT_LT(due(), t0 + 20 * kMicro);  // the tail probe's wait: a few round trips
  EXPECT_EQ(wake(t0 + 1 * kMicro, t0 + 100 * kMilli, true), 1u);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 0u);
  EXPECT_EQ(count(rdma::Counter::AckTimeoutsDeferred), 1u);
  EXPECT_EQ(count(rdma::Counter::TailProbes), 1u);
  EXPECT_EQ(count(rdma::Counter::OldestProbes), 0u);
  now_ += 3 * kMicro;
  acknowledge_all();
  ASSERT_EQ(wcs_.size(), 2u);
  for (const ibv_wc& wc : wcs_) EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(count(rdma::Counter::RetransmittedPkts), resent0 + 1);  // the probe
  EXPECT_EQ(resent_after_ack_, 0u);
  EXPECT_EQ(count(rdma::Counter::WindowCuts), cuts0);
  EXPECT_EQ(due(), kNever);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 0u);
}

TEST_F(OwnStallTimer, WithoutTheNoteTheSameStallIsATimeout) {
  const Nanos t0 = now_;
  ASSERT_EQ(send(2), 2u);
  EXPECT_EQ(wake(t0 + 1 * kMicro, t0 + 100 * kMilli, false), 1u);  // the timeout's probe
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 1u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 1u);
  EXPECT_EQ(count(rdma::Counter::AckTimeoutsDeferred), 0u);
}

// The stall ends before the timer would have expired but ran through part of it: the timer gets
// the whole timeout of our running time, not a nanosecond more. Here the peer never answers:
// the first timeout comes at t0 + rto + the stall, the next ones an rto apart, and the QP fails
// RETRY_EXC_ERR after retry_cnt timeouts, as without stalls.
TEST_F(OwnStallTimer, APeerThatStoppedStillExhaustsItsRetries) {
  const Nanos t0 = now_;
  ASSERT_EQ(send(2), 2u);
  const Nanos stall = 30 * kMilli;
  wake(t0 + 2 * kMicro, t0 + 2 * kMicro + stall, true);
  // Probes of the tail and then the oldest packet, doubling, until the timer.
  while (due() < t0 + kRto + stall) at(due());
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(rdma::Counter::AckTimeoutsDeferred), 1u);  // at t0 + rto: moved on by the stall
  EXPECT_EQ(due(), t0 + kRto + stall);
  at(due());
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 1u);
  for (int guard = 0; guard < 10000 && wcs_.empty() && due() != kNever; ++guard) {
    at(due());
    for (const ibv_wc& wc : drain(ep_)) wcs_.push_back(wc);
  }
  ASSERT_EQ(wcs_.size(), 2u);
  EXPECT_EQ(wcs_[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(wcs_[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), kRetries);
  EXPECT_EQ(count(rdma::Counter::RetryExceededErr), 1u);
  EXPECT_EQ(now_, t0 + stall + (1 + kRetries) * kRto);
  EXPECT_EQ(count(rdma::Counter::AckTimeoutsDeferred), 1u);  // the later timers started after the stall
}

// A loop whose every poll is a stall (it polls this worker only every 50 ms): each local ACK timer
// is moved on once, by at most one such stall, then counts. A dead peer still exhausts retry_cnt,
// at most a stall later per retry.
TEST_F(OwnStallTimer, EveryPollAStallStillTimesOutADeadPeer) {
  constexpr Nanos kGap = 50 * kMilli;
  const Nanos t0 = now_;
  ASSERT_EQ(send(2), 2u);
  Nanos t = t0;
  for (int polls = 0; polls < 1000 && wcs_.empty(); ++polls) {
    wake(t, t + kGap, true);
    t += kGap;
    for (const ibv_wc& wc : drain(ep_)) wcs_.push_back(wc);
  }
  ASSERT_EQ(wcs_.size(), 2u);
  EXPECT_EQ(wcs_[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), kRetries);
  EXPECT_EQ(count(rdma::Counter::RetryExceededErr), 1u);
  EXPECT_GE(count(rdma::Counter::AckTimeoutsDeferred), 1u);
  EXPECT_LE(count(rdma::Counter::AckTimeoutsDeferred), kRetries + 1u);
  EXPECT_LE(now_ - t0, (1 + kRetries) * (kRto + 2 * kGap));
}

// Once per start: a second stall over the moved timer does not move it again. The first stall
// (100 ms) moves it to 100 ms + what was left; a second stall from there on finds it moved and
// the timeout counts (the peer may have stopped: only one stall per retry is forgiven).
TEST_F(OwnStallTimer, TheTimerMovesOncePerStart) {
  const Nanos t0 = now_;
  ASSERT_EQ(send(2), 2u);
  EXPECT_EQ(wake(t0 + 1 * kMicro, t0 + 100 * kMilli, true), 1u);  // the tail probe, no timeout
  ASSERT_EQ(count(rdma::Counter::AckTimeoutsDeferred), 1u);
  ASSERT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  const Nanos t1 = now_;
  wake(t1, t1 + 200 * kMilli, true);
  EXPECT_EQ(count(rdma::Counter::AckTimeoutsDeferred), 1u);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 1u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 1u);
}

}  // namespace
}  // namespace roce::test::own_stall_timer_test
