// A plain ACK waits while the receive queue stays busy (TransportTuning::ack_hold) and then
// covers every request that arrived meanwhile; anything that needs an answer now (a NAK, a
// READ response, an atomic ACK, the answer to a duplicate, a request of the QP's own) is never
// held, and neither is an ACK when the queue is not busy. A hand-driven peer sends the requests.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/sack.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::ack_hold_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBB};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kPeerQpn = 0x99;
constexpr std::uint32_t kPsn = 0x500;  // the peer's first request PSN

struct Sent {
  std::uint8_t opcode = 0;
  std::uint32_t psn = 0;
  std::uint8_t syndrome = 0;
  std::uint32_t qpn = 0;  // the destination QP
};

class AckHoldTest : public ::testing::Test {
 protected:
  // An engine whose QPs answer the raw peer; `qps` of them, each with its own peer QPN; with
  // selective repeat's reorder window `selective` (0: go-back-N).
  void start(rdma::AckHold hold, unsigned qps = 1, std::uint32_t selective = 0, std::uint32_t inflight_cap = 0) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.ack_hold = hold;
    if (inflight_cap != 0) cfg.tuning.max_inflight_packets = inflight_cap;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    mem_.assign(1 << 16, std::byte{7});
    for (unsigned i = 0; i < qps; ++i) {
      Endpoint ep = make_endpoint(*engine_, QpOptions{}, i ? eps_[0].pd : 0);
      if (selective != 0) {
        ASSERT_TRUE(ep.qp->set_selective_repeat(selective).ok());
      }
      to_rtr(*engine_, ep.qp,
             RawPeerPath{kPeerIp, kPeerQpn + i, kPsn, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC});
      to_rts(*engine_, ep.qp, 0x100, 1);
      eps_.push_back(ep);
      peers_.push_back(std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn + i, ep.qp->qpn()));
    }
    mr_ = reg(*engine_, eps_[0].pd, mem_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                              IBV_ACCESS_REMOTE_ATOMIC);
  }
  std::uint64_t va(std::uint64_t offset = 0) const { return reinterpret_cast<std::uint64_t>(mem_.data()) + offset; }
  // A 64 B WRITE_ONLY asking for an ACK, from peer `q`.
  void write(std::uint32_t psn, unsigned q = 0) {
    const std::vector<std::byte> payload(64, std::byte{1});
    peers_[q]->send(peers_[q]->frame(Opcode::RcWriteOnly, psn, reth(va(64 * q), mr_->rkey(), 64), payload), now_);
  }
  void read(std::uint32_t psn, std::uint32_t len, unsigned q = 0) {
    peers_[q]->send(peers_[q]->frame(Opcode::RcReadRequest, psn, reth(va(), mr_->rkey(), len)), now_);
  }
  // One transmit call, as the worker makes it: `busy` when its RX burst came back full, with
  // its last iteration `iteration_` long.
  std::vector<Sent> transmit(bool busy) {
    std::vector<std::vector<std::byte>> bufs(8, std::vector<std::byte>(8192));
    std::vector<rdma::TxFrame> frames(bufs.size());
    for (std::size_t i = 0; i < bufs.size(); ++i) frames[i] = rdma::TxFrame{bufs[i].data(), 8192, 0};
    const std::size_t n = engine_->transmit(frames, now_, busy ? iteration_ : kNever);
    std::vector<Sent> out;
    for (std::size_t i = 0; i < n; ++i) {
      Packet p;
      const ByteSpan f{frames[i].data, frames[i].length};
      ParseError err = parse_frame(f, {}, p);
      if (err == ParseError::UnknownOpcode && p.opcode() == kSackOpcode) err = parse_sack(f, {}, p);  // selective repeat
      EXPECT_EQ(err, ParseError::None);
      out.push_back({p.opcode(), p.psn(), p.ext.aeth.syndrome, p.dest_qp()});
    }
    return out;
  }
  std::uint64_t acks(unsigned q = 0) const { return eps_[q].qp->counters().get(rdma::Counter::AcksSent); }

  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  std::vector<Endpoint> eps_;
  std::vector<std::unique_ptr<RawPeer>> peers_;
  std::vector<std::byte> mem_;
  const rdma::MemoryRegion* mr_ = nullptr;
  Nanos now_ = 1000;
  Nanos iteration_ = kMicro;
};

constexpr std::uint8_t kAck = raw(Opcode::RcAck);

TEST_F(AckHoldTest, APlainAckWaitsItsTurnsThenCoversEverythingReceived) {
  start(rdma::AckHold{3, kMilli});
  for (std::uint32_t i = 0; i < 3; ++i) {
    write(kPsn + i);
    EXPECT_TRUE(transmit(true).empty()) << "turn " << i;
    now_ += kMicro;
  }
  EXPECT_TRUE(engine_->has_tx_work()) << "a held ACK is still owed";
  const auto sent = transmit(true);  // the fourth turn: held three already
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kAck);
  EXPECT_EQ(sent[0].psn, kPsn + 2) << "one ACK for the three WRITEs";
  EXPECT_EQ(sent[0].syndrome, Syndrome::ack().raw);
  EXPECT_EQ(acks(), 1u);
  EXPECT_FALSE(engine_->has_tx_work());
  // The next ACK starts a new wait.
  write(kPsn + 3);
  EXPECT_TRUE(transmit(true).empty());
}

TEST_F(AckHoldTest, AnIdleReceiveQueueGetsItsAckAtOnce) {
  start(rdma::AckHold{3, kMilli});
  write(kPsn);
  EXPECT_TRUE(transmit(true).empty());
  write(kPsn + 1);
  const auto sent = transmit(false);  // the RX burst came back short: no more is coming
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].psn, kPsn + 1);
  write(kPsn + 2);
  ASSERT_EQ(transmit(false).size(), 1u);
}

TEST_F(AckHoldTest, TheAgeBoundsTheWait) {
  start(rdma::AckHold{1000, 10 * kMicro});
  iteration_ = 4 * kMicro;
  write(kPsn);
  EXPECT_TRUE(transmit(true).empty());  // held from now_; the next call is due 4 us later
  now_ += 4 * kMicro;
  write(kPsn + 1);
  EXPECT_TRUE(transmit(true).empty());  // held 4 us, the next call due at 8 us
  now_ += 4 * kMicro;
  auto sent = transmit(true);  // held 8 us: the next call, at 12 us, would be past the age
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].psn, kPsn + 1);
  // With iterations as long as the age (a loaded host), no ACK is held even once.
  iteration_ = 10 * kMicro;
  write(kPsn + 2);
  sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].psn, kPsn + 2);
}

// Selective repeat: the requester keeps at most a reorder window in flight. An ACK held until
// the window filled was the only one for it, and its loss stopped the QP until the timer; at
// half a window unacknowledged the ACK goes at once, so a second one is always coming.
TEST_F(AckHoldTest, SelectiveRepeatNeverHoldsHalfAWindowUnacknowledged) {
  start(rdma::AckHold{1000, kMilli}, 1, 8);
  for (std::uint32_t round = 0; round < 2; ++round) {
    for (std::uint32_t i = 0; i < 3; ++i) {
      write(kPsn + 4 * round + i);
      EXPECT_TRUE(transmit(true).empty()) << "round " << round << " write " << i;
    }
    write(kPsn + 4 * round + 3);  // four PSNs since the last ACK: half the window
    const auto sent = transmit(true);
    ASSERT_EQ(sent.size(), 1u) << "round " << round;
    EXPECT_EQ(sent[0].opcode, kAck);
    EXPECT_EQ(sent[0].psn, kPsn + 4 * round + 3);
  }
  EXPECT_EQ(eps_[0].qp->responder().run_writes(), 8u) << "in sequence, nothing held: the run's straight path";
}

// A reorder window larger than the in-flight cap (room for holes beyond it): the requester
// keeps at most the cap in its network, so half the cap, not half the window, goes
// unacknowledged; half the window would be one ACK per cap-full.
TEST_F(AckHoldTest, SelectiveRepeatNeverHoldsHalfTheInFlightCapUnacknowledged) {
  start(rdma::AckHold{1000, kMilli}, 1, 16, 8);
  for (std::uint32_t round = 0; round < 2; ++round) {
    for (std::uint32_t i = 0; i < 3; ++i) {
      write(kPsn + 4 * round + i);
      EXPECT_TRUE(transmit(true).empty()) << "round " << round << " write " << i;
    }
    write(kPsn + 4 * round + 3);  // four PSNs since the last ACK: half the cap of 8
    const auto sent = transmit(true);
    ASSERT_EQ(sent.size(), 1u) << "round " << round;
    EXPECT_EQ(sent[0].psn, kPsn + 4 * round + 3);
  }
}

// Selective repeat's in-sequence WRITEs take the responder run's straight path
// (responder_run.cpp) while its reorder buffer holds nothing, and the walk while it holds
// something (the request that fills a hole must drain it; the held WRITEs the drain then runs
// take the straight path again, responder_reorder.cpp); the ACKs the straight path queues
// or coalesces keep queue_ack's rule: half the window unacknowledged goes out at once, also
// when the run coalesced the WRITEs' ACKs into one (settled at the run's end).
TEST_F(AckHoldTest, SelectiveRepeatTakesTheStraightPathWhileNothingIsHeldAndKeepsThePromptRule) {
  start(rdma::AckHold{1000, kMilli}, 1, 8);
  const auto straight = [&] { return eps_[0].qp->responder().run_writes(); };
  write(kPsn);
  EXPECT_EQ(straight(), 1u);
  EXPECT_TRUE(transmit(true).empty()) << "one PSN of a window of 8: held";
  write(kPsn + 2);  // kPsn + 1 lost: held behind the hole, a SACK goes out
  write(kPsn + 3);
  EXPECT_EQ(straight(), 1u);
  auto sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kSackOpcode);
  write(kPsn + 1);  // fills the hole: the walk runs it, the drain takes the two held straight
  EXPECT_EQ(straight(), 3u);
  sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u) << "the ACK after a hole fills is prompt";
  EXPECT_EQ(sent[0].opcode, kAck);
  EXPECT_EQ(sent[0].psn, kPsn + 3);
  // Nothing held: one burst of four in-sequence WRITEs, straight, their ACKs coalesced into
  // one. Four PSNs since the last ACK is half the window: it goes at once.
  const auto write_burst = [&](std::uint32_t from, std::uint32_t to) {
    engine_->begin_receive_burst();
    for (std::uint32_t i = from; i < to; ++i) write(kPsn + i);
    engine_->end_receive_burst();
  };
  write_burst(4, 8);
  EXPECT_EQ(straight(), 7u);
  sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kAck);
  EXPECT_EQ(sent[0].psn, kPsn + 7);
  // Three more in one burst: below half a window, held.
  write_burst(8, 11);
  EXPECT_EQ(straight(), 10u);
  EXPECT_TRUE(transmit(true).empty());
  std::vector<std::byte> want(64, std::byte{1});
  EXPECT_TRUE(std::equal(want.begin(), want.end(), mem_.begin())) << "every WRITE landed";
}

TEST_F(AckHoldTest, NoHoldByDefaultTurnsZero) {
  start(rdma::AckHold{0, kMilli});
  write(kPsn);
  ASSERT_EQ(transmit(true).size(), 1u);
}

TEST_F(AckHoldTest, ANakBehindAHeldAckSendsBothAtOnce) {
  start(rdma::AckHold{3, kMilli});
  write(kPsn);
  EXPECT_TRUE(transmit(true).empty());
  write(kPsn + 2);  // kPsn + 1 lost: a PSN sequence error NAK
  const auto sent = transmit(true);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].psn, kPsn);
  EXPECT_EQ(sent[0].syndrome, Syndrome::ack().raw);
  EXPECT_EQ(sent[1].psn, kPsn + 1);
  EXPECT_EQ(sent[1].syndrome, Syndrome::nak(NakCode::PsnSequenceError).raw);
}

TEST_F(AckHoldTest, TheAnswerToADuplicateIsNeverHeld) {
  start(rdma::AckHold{3, kMilli});
  write(kPsn);
  ASSERT_EQ(transmit(false).size(), 1u);
  write(kPsn);  // the requester resent it: it waits for this answer to go on
  const auto sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].psn, kPsn);
  EXPECT_EQ(eps_[0].qp->counters().get(rdma::Counter::DuplicateRequest), 1u);
}

TEST_F(AckHoldTest, ReadResponsesAndAtomicAcksAreNeverHeld) {
  start(rdma::AckHold{3, kMilli});
  read(kPsn, 64);
  auto sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, raw(Opcode::RcReadResponseOnly));
  peers_[0]->send(peers_[0]->frame(Opcode::RcFetchAdd, kPsn + 1, atomic_eth(va(128), mr_->rkey(), 1, 0)), now_);
  sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, raw(Opcode::RcAtomicAck));
  // A WRITE's held ACK goes out ahead of the READ response that follows it, in PSN order.
  write(kPsn + 2);
  EXPECT_TRUE(transmit(true).empty());
  read(kPsn + 3, 64);
  sent = transmit(true);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kAck);
  EXPECT_EQ(sent[0].psn, kPsn + 2);
  EXPECT_EQ(sent[1].opcode, raw(Opcode::RcReadResponseOnly));
}

TEST_F(AckHoldTest, ARequestOfTheQpsOwnLetsItsAckGo) {
  start(rdma::AckHold{3, kMilli});
  write(kPsn);
  EXPECT_TRUE(transmit(true).empty());
  ibv_sge g = sge(mem_.data(), 64, mr_);
  ASSERT_EQ(post(eps_[0], IBV_WR_RDMA_WRITE, 1, &g, 1, 0x10000, 0x1234), 0);
  const auto sent = transmit(true);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kAck);
  EXPECT_EQ(sent[1].opcode, raw(Opcode::RcWriteOnly));
}

TEST_F(AckHoldTest, AHeldQpDoesNotHoldUpTheOthers) {
  start(rdma::AckHold{3, kMilli}, 2);
  write(kPsn, 0);
  read(kPsn, 64, 1);
  auto sent = transmit(true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, raw(Opcode::RcReadResponseOnly));
  EXPECT_EQ(sent[0].qpn, kPeerQpn + 1);
  write(kPsn + 1, 1);
  EXPECT_TRUE(transmit(true).empty()) << "both QPs owe only a plain ACK now";
  sent = transmit(false);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(acks(0) + acks(1), 2u);
}

TEST_F(AckHoldTest, ADestroyedQpLeavesNoHeldAckBehind) {
  start(rdma::AckHold{3, kMilli}, 2);
  write(kPsn, 0);
  write(kPsn, 1);
  EXPECT_TRUE(transmit(true).empty());
  ASSERT_TRUE(engine_->destroy_qp(eps_[0].qp).ok());
  const auto sent = transmit(false);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].qpn, kPeerQpn + 1);
  EXPECT_FALSE(engine_->has_tx_work());
}

}  // namespace
}  // namespace roce::test::ack_hold_test
