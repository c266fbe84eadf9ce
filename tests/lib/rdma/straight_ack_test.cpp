// The requester's straight path for a plain ACK (Completer::straight_ack,
// TransportTuning::straight_acks): every scenario is played on two engines built alike, one with
// the straight path and one without (every response through on_response's general path), and
// after every step what each engine sends (byte for byte), its completions, counters, QP state
// and the completer's timers, una and smoothed round trip must be the same.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/psn.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::straight_ack_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBE};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 12};
constexpr std::uint32_t kPeerQpn = 0x150;
constexpr std::uint32_t kS = 0xFFFFFD;  // the requester's first PSN: the scenarios cross the PSN wrap
constexpr std::uint64_t kRemote = 0x10000;
constexpr std::uint32_t kRkey = 0x1234;

std::uint32_t psn(std::int32_t i) { return psn_add(kS, i); }

struct Observed {
  std::vector<std::vector<std::byte>> sent;
  std::vector<std::array<std::uint64_t, 5>> completions;  // wr_id, status, opcode, byte_len, qp_num
  std::array<std::uint64_t, rdma::kCounterCount> counters{};
  rdma::QpState state{};
  std::uint32_t una = 0, sent_end = 0;
  Nanos deadline = 0, retransmit = 0, srtt = 0, rttvar = 0, engine_deadline = 0;
  bool operator==(const Observed&) const = default;
};

// The tuning that differs from the default.
struct Tuned {
  bool window = false;                 // WindowTuning::enabled
  std::uint32_t max_inflight = 256;    // TransportTuning::max_inflight_packets
};

class World {
 public:
  World(bool straight, const Tuned& tuned) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.straight_acks = straight;
    cfg.tuning.window.enabled = tuned.window;
    cfg.tuning.max_inflight_packets = tuned.max_inflight;
    // The BDP cap's parts (WindowTuning::bdp_cap_split, on by default since session 15) would
    // spread a go-back after a NAK over transmit calls; these tests count what one call sends.
    cfg.tuning.window.bdp_cap_split = false;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    ep_ = make_endpoint(*engine_, QpOptions{});
    to_rtr(*engine_, ep_.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
    to_rts(*engine_, ep_.qp, kS, 4);
    peer_ = std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn, ep_.qp->qpn());
    buf_.assign(64 * 1024, std::byte{5});
    mr_ = reg(*engine_, ep_.pd, buf_, IBV_ACCESS_LOCAL_WRITE);
  }

  void post(ibv_wr_opcode op, std::uint64_t wr_id, std::uint32_t len, bool signaled = true) {
    ibv_sge g = sge(buf_.data(), len, mr_);
    ASSERT_EQ(test::post(ep_, op, wr_id, &g, 1, kRemote, kRkey, signaled ? IBV_SEND_SIGNALED : 0), 0);
  }
  void answer(Opcode op, Syndrome s, std::uint32_t p, std::uint32_t payload = 0) {
    ExtHeaders e;
    e.aeth = Aeth{s.raw, Be24::of(0)};
    const std::vector<std::byte> bytes(payload, std::byte{7});
    peer_->send(peer_->frame(op, p, e, bytes, false), now_);
  }
  // Time moves on by `dt`; due timers run, and what the engine then sends is kept.
  void wait(Nanos dt) {
    now_ += dt;
    engine_->advance(now_);
  }

  Observed observe() {
    Observed o;
    for (const Reply& r : peer_->collect(now_)) o.sent.push_back(r.frame);
    for (const ibv_wc& wc : drain(ep_))
      o.completions.push_back({wc.wr_id, static_cast<std::uint64_t>(wc.status), static_cast<std::uint64_t>(wc.opcode), wc.byte_len, wc.qp_num});
    o.counters = ep_.qp->counters().values();
    o.state = ep_.qp->state();
    const rdma::Completer& c = ep_.qp->completer();
    o.una = c.una();
    o.sent_end = ep_.qp->requester().sent_end_psn();
    o.deadline = c.deadline();
    o.retransmit = c.retransmit_deadline();
    o.srtt = c.srtt();
    o.rttvar = c.rttvar();
    o.engine_deadline = engine_->next_deadline();
    return o;
  }
  std::uint64_t count(rdma::Counter k) const { return ep_.qp->counters().get(k); }

 private:
  Nanos now_ = 0;
  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
  std::vector<std::byte> buf_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

// Plays each step on both engines, observing both after every one.
class StraightAck : public ::testing::Test {
 protected:
  // Both worlds afresh (each test starts with the default tuning).
  void build(const Tuned& tuned) {
    straight_ = std::make_unique<World>(true, tuned);
    general_ = std::make_unique<World>(false, tuned);
  }
  template <typename Fn>
  std::vector<Observed> step(Fn&& fn) {
    std::vector<Observed> out;
    for (World* w : {straight_.get(), general_.get()}) {
      fn(*w);
      out.push_back(w->observe());
    }
    EXPECT_EQ(out[0], out[1]) << "step " << steps_;
    ++steps_;
    return out;
  }
  void post(ibv_wr_opcode op, std::uint64_t wr_id, std::uint32_t len, bool signaled = true) {
    step([&](World& w) { w.post(op, wr_id, len, signaled); });
  }
  std::vector<Observed> ack(std::uint32_t p, Nanos dt = 3000) {
    return step([&](World& w) {
      w.wait(dt);
      w.answer(Opcode::RcAck, Syndrome::ack(), p);
    });
  }
  std::vector<Observed> answer(Opcode op, Syndrome s, std::uint32_t p, std::uint32_t payload = 0) {
    return step([&](World& w) {
      w.wait(1000);
      w.answer(op, s, p, payload);
    });
  }
  std::vector<Observed> wait(Nanos dt) {
    return step([&](World& w) { w.wait(dt); });
  }

  std::unique_ptr<World> straight_ = std::make_unique<World>(true, Tuned{});
  std::unique_ptr<World> general_ = std::make_unique<World>(false, Tuned{});
  unsigned steps_ = 0;
};

TEST_F(StraightAck, OneWriteAtATimeCompletesAsTheGeneralPath) {
  for (std::int32_t i = 0; i < 4; ++i) {
    post(IBV_WR_RDMA_WRITE, 10 + i, 64);
    const auto o = ack(psn(i), 2000 + 500 * i);
    ASSERT_EQ(o[0].completions.size(), 1u);
    EXPECT_EQ(o[0].completions[0][0], 10u + i);
    EXPECT_EQ(o[0].una, psn(i + 1));
    EXPECT_EQ(o[0].retransmit, kNever);  // nothing outstanding: the timers stop
  }
  EXPECT_GT(straight_->observe().srtt, 0);
  EXPECT_EQ(straight_->count(rdma::Counter::AcksReceived), 4u);
}

// RFC 6298's estimator (alpha 1/8, beta 1/4) to the nanosecond, with integer division as written
// there and in session 17's completer (signed, toward zero): the completer divides the sums as
// unsigned (they are positive), and must give the same srtt and rttvar after every sample, on
// either path. Round trips above and below srtt, odd ones, so that every division has a remainder;
// all below the tail probe's 20 us floor, so that no probe makes a sample ambiguous.
TEST_F(StraightAck, TheRoundTripEstimateIsRfc6298sToTheNanosecond) {
  const Nanos rtts[] = {2003, 2997, 1001, 7919, 2, 1, 19997, 3001, 2999, 3000, 17, 15013, 4093, 4099, 4097};
  Nanos srtt = 0, rttvar = 0;
  std::int32_t i = 0;
  for (const Nanos r : rtts) {
    post(IBV_WR_RDMA_WRITE, 100 + i, 64);
    const auto o = ack(psn(i), r);  // sent at the post, answered r later: one sample of r
    ++i;
    if (srtt == 0) {
      srtt = r;
      rttvar = r / 2;
    } else {
      const Nanos err = srtt > r ? srtt - r : r - srtt;
      rttvar = (3 * rttvar + err) / 4;
      srtt = (7 * srtt + r) / 8;
    }
    ASSERT_EQ(o[0].srtt, srtt) << "sample " << i;
    ASSERT_EQ(o[0].rttvar, rttvar) << "sample " << i;
  }
}

TEST_F(StraightAck, OneAckCoalescesSeveralWrites) {
  for (std::uint64_t i = 0; i < 5; ++i) post(IBV_WR_RDMA_WRITE, 20 + i, 64, i != 2);  // the third unsignaled
  auto o = ack(psn(3));
  ASSERT_EQ(o[0].completions.size(), 3u);  // 20, 21, 23
  EXPECT_EQ(o[0].completions[2][0], 23u);
  EXPECT_EQ(o[0].una, psn(4));
  EXPECT_NE(o[0].retransmit, kNever);  // the fifth is still out
  o = ack(psn(4));
  ASSERT_EQ(o[0].completions.size(), 1u);
}

TEST_F(StraightAck, AnAckCoveringAMultiPacketWriteInPartMovesUnaOnly) {
  post(IBV_WR_RDMA_WRITE, 30, 4096);  // four packets
  post(IBV_WR_RDMA_WRITE, 31, 64);
  auto o = ack(psn(1));
  EXPECT_TRUE(o[0].completions.empty());
  EXPECT_EQ(o[0].una, psn(2));
  o = ack(psn(1));  // repeated: nothing moves
  EXPECT_EQ(o[0].una, psn(2));
  o = ack(psn(4));
  ASSERT_EQ(o[0].completions.size(), 2u);
}

TEST_F(StraightAck, AnAckBeyondWhatWasSentIsRefusedAndCounted) {
  post(IBV_WR_RDMA_WRITE, 40, 64);
  post(IBV_WR_RDMA_WRITE, 41, 64);
  auto o = ack(psn(2));  // never sent
  EXPECT_TRUE(o[0].completions.empty());
  EXPECT_EQ(o[0].una, psn(0));
  EXPECT_EQ(straight_->count(rdma::Counter::GhostResponses), 1u);
  o = ack(psn(-3));  // far behind una
  EXPECT_EQ(straight_->count(rdma::Counter::GhostResponses), 2u);
  o = ack(psn(1));
  EXPECT_EQ(o[0].completions.size(), 2u);
  o = ack(psn(1));  // nothing outstanding now: unsolicited
  EXPECT_EQ(straight_->count(rdma::Counter::UnsolicitedResponses), 1u);
}

TEST_F(StraightAck, ANakRightAfterAnAckGoesBack) {
  for (std::uint64_t i = 0; i < 6; ++i) post(IBV_WR_RDMA_WRITE, 50 + i, 64);
  ack(psn(1));
  auto o = answer(Opcode::RcAck, Syndrome::nak(NakCode::PsnSequenceError), psn(3));
  ASSERT_EQ(o[0].completions.size(), 1u);  // the NAK acknowledged the third
  EXPECT_EQ(o[0].completions[0][0], 52u);
  ASSERT_EQ(o[0].sent.size(), 3u);  // the go-back from the fourth
  EXPECT_EQ(straight_->count(rdma::Counter::RcvdSeqErr), 1u);
  o = ack(psn(5));
  EXPECT_EQ(o[0].completions.size(), 3u);
  // A fatal NAK after progress: the WQE it names fails, the rest flush.
  post(IBV_WR_RDMA_WRITE, 60, 64);
  post(IBV_WR_RDMA_WRITE, 61, 64);
  ack(psn(6));
  o = answer(Opcode::RcAck, Syndrome::nak(NakCode::RemoteAccessError), psn(7));
  ASSERT_EQ(o[0].completions.size(), 1u);
  EXPECT_EQ(o[0].completions[0][0], 61u);
  EXPECT_EQ(o[0].completions[0][1], static_cast<std::uint64_t>(IBV_WC_REM_ACCESS_ERR));
  EXPECT_EQ(o[0].state, rdma::QpState::Err);
}

TEST_F(StraightAck, AnRnrNakAfterAnAckWaitsAndResends) {
  for (std::uint64_t i = 0; i < 3; ++i) post(IBV_WR_RDMA_WRITE, 70 + i, 64);
  ack(psn(0));
  auto o = answer(Opcode::RcAck, Syndrome::rnr_nak(1), psn(1));
  EXPECT_TRUE(o[0].sent.empty());
  EXPECT_EQ(straight_->count(rdma::Counter::RnrWaits), 1u);
  o = wait(100 * kMicro);  // past the RNR wait
  EXPECT_EQ(o[0].sent.size(), 2u);
  o = ack(psn(2));
  EXPECT_EQ(o[0].completions.size(), 2u);
}

TEST_F(StraightAck, WritesAroundAReadTakeTheGeneralWalkForTheRead) {
  post(IBV_WR_RDMA_WRITE, 80, 64);
  post(IBV_WR_RDMA_READ, 81, 64);
  post(IBV_WR_RDMA_WRITE, 82, 64);
  auto o = ack(psn(0));  // the WRITE before the READ
  EXPECT_EQ(o[0].completions.size(), 1u);
  o = answer(Opcode::RcReadResponseOnly, Syndrome::ack(), psn(1), 64);
  EXPECT_EQ(o[0].completions.size(), 1u);
  o = ack(psn(2));
  EXPECT_EQ(o[0].completions.size(), 1u);
  // An ACK past a READ whose response never came: the READ goes again.
  post(IBV_WR_RDMA_WRITE, 83, 64);
  post(IBV_WR_RDMA_READ, 84, 64);
  post(IBV_WR_RDMA_WRITE, 85, 64);
  o = ack(psn(5));
  EXPECT_EQ(o[0].completions.size(), 1u);  // the WRITE before it only
  EXPECT_FALSE(o[0].sent.empty());         // the READ again
  o = answer(Opcode::RcReadResponseOnly, Syndrome::ack(), psn(4), 64);
  EXPECT_EQ(o[0].completions.size(), 1u);
  o = ack(psn(5));
  EXPECT_EQ(o[0].completions.size(), 1u);
}

TEST_F(StraightAck, AnAckAnsweringTheOldestProbeAloneShowsTheHole) {
  post(IBV_WR_RDMA_WRITE, 90, 64);
  ack(psn(0));  // an RTT sample: the early timer has a round trip to go by
  post(IBV_WR_RDMA_WRITE, 91, 64);
  post(IBV_WR_RDMA_WRITE, 92, 64);
  // No answer: the tail probe (the newest again), then the oldest packet's probe.
  for (int i = 0; i < 20 && straight_->count(rdma::Counter::OldestProbes) == 0; ++i) wait(20 * kMicro);
  ASSERT_EQ(straight_->count(rdma::Counter::TailProbes), 1u);
  ASSERT_EQ(straight_->count(rdma::Counter::OldestProbes), 1u);
  auto o = ack(psn(1));  // the oldest alone: the responder had lost it, and what came after
  EXPECT_EQ(o[0].completions.size(), 1u);
  EXPECT_EQ(straight_->count(rdma::Counter::ProbedHoles), 1u);
  ASSERT_EQ(o[0].sent.size(), 1u);  // the go-back
  o = ack(psn(2));
  EXPECT_EQ(o[0].completions.size(), 1u);
  EXPECT_EQ(o[0].retransmit, kNever);
}

TEST_F(StraightAck, AnAckRightAfterATailProbeIsJudgedSpurious) {
  post(IBV_WR_RDMA_WRITE, 100, 64);
  ack(psn(0), 4000);  // srtt 4 us
  post(IBV_WR_RDMA_WRITE, 101, 64);
  for (int i = 0; i < 20 && straight_->count(rdma::Counter::TailProbes) == 0; ++i) wait(5 * kMicro);
  ASSERT_EQ(straight_->count(rdma::Counter::TailProbes), 1u);
  const auto o = ack(psn(1), 500);  // within half a round trip of the probe: the first copy's answer
  EXPECT_EQ(o[0].completions.size(), 1u);
  EXPECT_EQ(straight_->count(rdma::Counter::SpuriousEarlyRetransmits), 1u);
}

TEST_F(StraightAck, ARepeatedAckBeforeAnyRttSampleTellsTheEarlyTimerThePeerAnswers) {
  build(Tuned{true, 256});  // the send window on: the early timer runs without an RTT sample
  post(IBV_WR_RDMA_WRITE, 110, 64);
  ack(psn(-1));  // una - 1: valid, acknowledges nothing new
  const auto o = step([](World& w) { w.post(IBV_WR_RDMA_WRITE, 111, 64); });  // arms the early timer
  EXPECT_EQ(o[0].srtt, 0);
  EXPECT_LT(o[0].deadline, o[0].retransmit);
  ack(psn(1));
}

TEST_F(StraightAck, AnAckOpensTheInflightLimit) {
  build(Tuned{false, 4});
  for (std::uint64_t i = 0; i < 8; ++i) post(IBV_WR_RDMA_WRITE, 120 + i, 64);
  EXPECT_EQ(straight_->observe().sent_end, psn(4));
  const auto o = ack(psn(1));
  EXPECT_EQ(o[0].sent.size(), 2u);
  EXPECT_EQ(o[0].sent_end, psn(6));
}

}  // namespace
}  // namespace roce::test::straight_ack_test
