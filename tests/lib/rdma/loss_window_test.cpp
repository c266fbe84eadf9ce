// The send window cuts once per window of data: a
// hand-driven peer NAKs and ACKs a requester on the injected clock and every PSN the requester
// sends is checked.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::loss_window_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBB};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kPeerQpn = 0x99;
constexpr std::uint32_t kS = 0x4000;  // first PSN of the requester
constexpr std::uint32_t kPackets = 16;

class LossWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.max_inflight_packets = 8;  // the window starts here
    cfg.tuning.max_inflight_bytes = 0;
    cfg.tuning.window = window_;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    ep_ = make_endpoint(*engine_, QpOptions{});
    to_rtr(*engine_, ep_.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
    to_rts(*engine_, ep_.qp, kS, 1);
    peer_ = std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn, ep_.qp->qpn());
    src_.assign(kPackets * 1024, std::byte{3});
    mr_ = reg(*engine_, ep_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge g = sge(src_.data(), static_cast<std::uint32_t>(src_.size()), mr_);
    ASSERT_EQ(post(ep_, IBV_WR_RDMA_WRITE, 1, &g, 1, 0x10000, 0x1234), 0);
  }
  std::vector<std::uint32_t> sent_psns(Nanos now) {
    std::vector<std::uint32_t> out;
    for (const Reply& r : peer_->collect(now)) out.push_back(r.pkt.psn());
    return out;
  }
  void answer(Syndrome s, std::uint32_t psn, Nanos now) {
    ExtHeaders e;
    e.aeth = Aeth{s.raw, Be24::of(0)};
    peer_->send(peer_->frame(Opcode::RcAck, psn, e, {}, false), now);
  }
  void nak(std::uint32_t psn, Nanos now) { answer(Syndrome::nak(NakCode::PsnSequenceError), psn, now); }
  void ack(std::uint32_t psn, Nanos now) { answer(Syndrome::ack(), psn, now); }
  std::uint64_t count(rdma::Counter c) const { return ep_.qp->counters().get(c); }
  static std::vector<std::uint32_t> psns(std::uint32_t from, std::uint32_t to) {  // [from, to)
    std::vector<std::uint32_t> v;
    for (std::uint32_t p = from; p < to; ++p) v.push_back(p);
    return v;
  }

  // The first window, then a NAK for kS + 2: the window halves (8 -> 4) and the resend starts
  // at kS + 2 with what the window holds; an ACK of kS + 2 lets one more packet go.
  void lose_the_third_packet() {
    ASSERT_EQ(sent_psns(0), psns(kS, kS + 8));
    nak(kS + 2, 10 * kMicro);
    EXPECT_EQ(sent_psns(10 * kMicro), psns(kS + 2, kS + 6));
    EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
    EXPECT_EQ(count(rdma::Counter::WindowCuts), 1u);
    EXPECT_EQ(ep_.qp->completer().window().packets(), 4.0);
    ack(kS + 2, 20 * kMicro);
    EXPECT_EQ(sent_psns(20 * kMicro), psns(kS + 6, kS + 7));
  }

  // The cuts themselves: every loss halves the window, whatever the path's need (the hand-driven
  // peer's pace would make it a couple of packets).
  static rdma::WindowTuning halving() {
    rdma::WindowTuning t;
    t.enabled = true;
    t.random_loss_floor = 0;
    t.random_decrease = 0.5;
    t.need_headroom = 1000;
    return t;
  }
  rdma::WindowTuning window_ = halving();
  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
  std::vector<std::byte> src_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST_F(LossWindow, NakForAPsnTheResendHasNotReachedStartsNothing) {
  lose_the_third_packet();
  // kS + 7 was sent once, before the loss, and the resend has not reached it: a NAK for it
  // (duplicated or reordered by the network, or from a peer that NAKs every packet out of
  // order) acknowledges kS + 6 and starts no second go-back-N: the requester carries on at kS + 7.
  nak(kS + 7, 30 * kMicro);
  const auto next = sent_psns(30 * kMicro);
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), kS + 7);
  EXPECT_EQ(next, psns(kS + 7, kS + 7 + static_cast<std::uint32_t>(next.size())));
  EXPECT_EQ(count(rdma::Counter::DuplicateLossSignals), 1u);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 1u);  // one retry used, not two
  EXPECT_EQ(count(rdma::Counter::WindowCuts), 1u);
  EXPECT_EQ(count(rdma::Counter::RetransmittedPkts), 6u);  // kS + 2 .. kS + 7, each once
}

TEST_F(LossWindow, ARepeatedNakBeforeAnyProgressStartsNothing) {
  ASSERT_EQ(sent_psns(0), psns(kS, kS + 8));
  nak(kS + 2, 10 * kMicro);
  EXPECT_EQ(sent_psns(10 * kMicro), psns(kS + 2, kS + 6));
  nak(kS + 2, 11 * kMicro);  // the same NAK again
  EXPECT_TRUE(sent_psns(11 * kMicro).empty());
  EXPECT_EQ(count(rdma::Counter::DuplicateLossSignals), 1u);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
  EXPECT_EQ(count(rdma::Counter::RetransmittedPkts), 4u);
}

TEST_F(LossWindow, AResentPacketLostAgainIsResentButTheWindowIsNotCutTwice) {
  lose_the_third_packet();
  // kS + 4 was resent at 10 us; a NAK for it now means that copy was lost too: go back to it,
  // within the same loss event (no second cut).
  nak(kS + 4, 30 * kMicro);
  const auto next = sent_psns(30 * kMicro);
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), kS + 4);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 2u);
  EXPECT_EQ(count(rdma::Counter::WindowCuts), 1u);
  EXPECT_EQ(count(rdma::Counter::DuplicateLossSignals), 0u);
}

TEST_F(LossWindow, ALossAfterTheRecoveredWindowCutsAgain) {
  lose_the_third_packet();
  ack(kS + 6, 30 * kMicro);  // everything up to the end of the first window: the event is over
  auto more = sent_psns(30 * kMicro);
  ASSERT_FALSE(more.empty());
  EXPECT_EQ(more.front(), kS + 7);
  const double before = ep_.qp->completer().window().packets();
  nak(kS + 8, 40 * kMicro);
  EXPECT_EQ(sent_psns(40 * kMicro).front(), kS + 8);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 2u);
  EXPECT_EQ(count(rdma::Counter::WindowCuts), 2u);
  // Halved (after the NAK's implicit ACK of kS + 7 grew it by a fraction of a packet).
  EXPECT_LT(ep_.qp->completer().window().packets(), 0.6 * before);
}

// The default tuning: the round trips showed no queue, so the second loss looks random; it cuts
// by a fifth at least, never below half, and never below the four packets per QP that let the
// next loss draw a NAK instead of a timer.
class LossWindowDefaultTuning : public LossWindow {
 protected:
  LossWindowDefaultTuning() {
    window_ = rdma::WindowTuning{};
    window_.enabled = true;
  }
};

TEST_F(LossWindowDefaultTuning, ARandomLossKeepsFourPacketsInFlight) {
  ASSERT_EQ(sent_psns(0), psns(kS, kS + 8));
  nak(kS + 2, 10 * kMicro);
  const auto resent = sent_psns(10 * kMicro);
  ASSERT_FALSE(resent.empty());
  // ACK everything until a packet past the first loss event's range (kS + 8) goes out.
  std::vector<std::uint32_t> more = resent;
  Nanos t = 20 * kMicro;
  while (more.back() < kS + 8) {
    ack(more.back(), t);
    more = sent_psns(t);
    ASSERT_FALSE(more.empty());
    t += 10 * kMicro;
  }
  ack(more.front() - 1, t);
  (void)sent_psns(t);
  const rdma::SendWindow& w = ep_.qp->completer().window();
  ASSERT_GT(w.min_rtt(), 0);
  EXPECT_FALSE(w.queue_high());
  const double before = w.packets();
  nak(std::max(more.front(), kS + 8), t + 10 * kMicro);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 2u);
  EXPECT_EQ(count(rdma::Counter::WindowCuts), 2u);
  EXPECT_GE(w.packets(), 4.0);
  EXPECT_GE(w.packets(), std::min(before, 0.5 * before));
  EXPECT_LE(w.packets(), std::max(4.0, 0.8 * before));
  EXPECT_EQ(w.ack_spacing(), std::max<std::uint32_t>(1, w.limit() / 2));
}

TEST_F(LossWindow, WithTheWindowOffAGoBackResendsEverythingInFlight) {
  rdma::WindowTuning off;
  off.enabled = false;
  off.bdp_cap = false;  // the BDP cap after a loss (off by default) would bound the resend
  rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
  cfg.tuning.max_inflight_packets = 8;
  cfg.tuning.max_inflight_bytes = 0;
  cfg.tuning.window = off;
  engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
  ep_ = make_endpoint(*engine_, QpOptions{});
  to_rtr(*engine_, ep_.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
  to_rts(*engine_, ep_.qp, kS, 1);
  peer_ = std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn, ep_.qp->qpn());
  mr_ = reg(*engine_, ep_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(src_.data(), static_cast<std::uint32_t>(src_.size()), mr_);
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_WRITE, 1, &g, 1, 0x10000, 0x1234), 0);
  ASSERT_EQ(sent_psns(0), psns(kS, kS + 8));
  nak(kS + 2, 10 * kMicro);
  EXPECT_EQ(sent_psns(10 * kMicro), psns(kS + 2, kS + 10));
  EXPECT_EQ(count(rdma::Counter::WindowCuts), 0u);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
}

}  // namespace
}  // namespace roce::test::loss_window_test
