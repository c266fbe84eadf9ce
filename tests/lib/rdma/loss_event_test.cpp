// Go-back-N resends once per loss event: a hand-driven peer NAKs and ACKs a requester on the
// injected clock and every PSN the requester sends is counted. DCQCN paces the requester (one
// 1 KiB packet about every 9 us at 1 Gbit/s), so a resend is still under way when the next
// signal comes, as it is on a loaded path.
#include <gtest/gtest.h>

#include <map>

#include "lib/cc/params.hpp"
#include "protocol/aeth.hpp"
#include "protocol/psn.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::loss_event_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBB};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kPeerQpn = 0x99;
constexpr std::uint32_t kS = 0x4000;  // first PSN of the requester
constexpr std::uint32_t kPackets = 16;

class LossEvent : public ::testing::Test {
 protected:
  void SetUp() override {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.max_inflight_packets = 8;
    cfg.tuning.max_inflight_bytes = 0;
    cfg.tuning.window.enabled = false;  // go-back-N alone (loss_window_test.cpp: with the window)
    cfg.tuning.window.bdp_cap = false;  // ... and without the BDP cap after a loss (off by default; random_loss_test.cpp)
    cfg.tuning.congestion.enabled = true;
    cfg.tuning.congestion.rp = cc::paper_params(1e9);
    cfg.tuning.congestion.burst_bytes = 1;  // strict pacing
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
  // Every PSN the requester sends from now_ until `until`, polled each microsecond.
  std::vector<std::uint32_t> run_until(Nanos until) {
    std::vector<std::uint32_t> out;
    for (; now_ <= until; now_ += kMicro) {
      engine_->advance(now_);
      for (const Reply& r : peer_->collect(now_)) {
        out.push_back(r.pkt.psn());
        ++sends_[r.pkt.psn()];
      }
    }
    now_ = until;
    return out;
  }
  void answer(Syndrome s, std::uint32_t psn) {
    ExtHeaders e;
    e.aeth = Aeth{s.raw, Be24::of(0)};
    peer_->send(peer_->frame(Opcode::RcAck, psn, e, {}, false), now_);
  }
  void nak(std::uint32_t psn) { answer(Syndrome::nak(NakCode::PsnSequenceError), psn); }
  void ack(std::uint32_t psn) { answer(Syndrome::ack(), psn); }
  std::uint64_t count(rdma::Counter c) const { return ep_.qp->counters().get(c); }
  static std::vector<std::uint32_t> psns(std::uint32_t from, std::uint32_t to) {  // [from, to)
    std::vector<std::uint32_t> v;
    for (std::uint32_t p = from; p < to; ++p) v.push_back(p);
    return v;
  }
  // The first window went out; the peer lost kS + 2 and NAKs it: the paced resend starts there.
  void lose_the_third_packet() {
    ASSERT_EQ(run_until(200 * kMicro), psns(kS, kS + 8));
    nak(kS + 2);
    const auto resent = run_until(215 * kMicro);
    ASSERT_FALSE(resent.empty());
    ASSERT_LT(resent.size(), 4u) << "the pacer should hold the resend back";
    EXPECT_EQ(resent, psns(kS + 2, kS + 2 + static_cast<std::uint32_t>(resent.size())));
    EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
  }

  Nanos now_ = 0;
  std::map<std::uint32_t, int> sends_;  // PSN -> times sent
  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
  std::vector<std::byte> src_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST_F(LossEvent, ARepeatedNakBeforeAnyProgressStartsNothing) {
  lose_the_third_packet();
  nak(kS + 2);  // the same NAK again (duplicated by the network)
  const auto next = run_until(400 * kMicro);
  ASSERT_FALSE(next.empty());
  EXPECT_GT(next.front(), kS + 2);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
  EXPECT_EQ(count(rdma::Counter::DuplicateLossSignals), 1u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 1u);
  for (std::uint32_t p = kS + 2; p < kS + 8; ++p) EXPECT_EQ(sends_[p], 2) << "PSN " << p - kS;
  EXPECT_EQ(sends_[kS], 1);
  EXPECT_EQ(sends_[kS + 1], 1);
}

TEST_F(LossEvent, ANakForAPsnTheResendHasNotReachedStartsNothing) {
  lose_the_third_packet();
  ack(kS + 2);  // progress: the resend's first packet arrived
  // A NAK for kS + 6 (duplicated or reordered by the network) while the resend has not got
  // there: it acknowledges up to kS + 5, so the resend skips to kS + 6, and no second go-back-N
  // starts (no retry used, nothing resent twice).
  nak(kS + 6);
  const auto next = run_until(400 * kMicro);
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), kS + 6);
  EXPECT_EQ(next, psns(kS + 6, kS + 6 + static_cast<std::uint32_t>(next.size())));
  EXPECT_EQ(count(rdma::Counter::DuplicateLossSignals), 1u);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
  EXPECT_EQ(count(rdma::Counter::CompleterRetryErr), 1u);
  for (std::uint32_t p = kS + 6; p < kS + 8; ++p) EXPECT_EQ(sends_[p], 2) << "PSN " << p - kS;
  for (std::uint32_t p = kS + 8; p < kS + 14; ++p) EXPECT_EQ(sends_[p], 1) << "PSN " << p - kS;
}

TEST_F(LossEvent, AResentPacketLostAgainIsResentAgain) {
  lose_the_third_packet();
  ack(kS + 2);
  const auto more = run_until(260 * kMicro);
  ASSERT_GE(more.size(), 2u);
  ASSERT_GT(more.back(), kS + 4) << "the resend should have passed kS + 4";
  // The resent kS + 4 was lost too: a new loss within the same event goes back to it.
  nak(kS + 4);
  const auto again = run_until(300 * kMicro);
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again.front(), kS + 4);
  EXPECT_EQ(count(rdma::Counter::LossEvents), 2u);
  EXPECT_EQ(count(rdma::Counter::DuplicateLossSignals), 0u);
}

TEST_F(LossEvent, EveryPacketIsResentOncePerLossEvent) {
  lose_the_third_packet();
  // The peer acknowledges each resent packet as it comes; the whole message goes through with
  // kS + 2 .. kS + 7 resent exactly once and everything after sent once.
  for (int step = 0; step < 400 && ep_.qp->completer().una() != proto::psn_add(kS, kPackets); ++step) {
    const auto sent = run_until(now_ + 10 * kMicro);
    if (!sent.empty()) ack(sent.back());
  }
  ASSERT_EQ(ep_.qp->completer().una(), proto::psn_add(kS, kPackets));
  EXPECT_EQ(count(rdma::Counter::LossEvents), 1u);
  EXPECT_EQ(count(rdma::Counter::RetransmittedPkts), 6u);
  for (std::uint32_t p = kS; p < kS + kPackets; ++p)
    EXPECT_EQ(sends_[p], p >= kS + 2 && p < kS + 8 ? 2 : 1) << "PSN " << p - kS;
}

}  // namespace
}  // namespace roce::test::loss_event_test
