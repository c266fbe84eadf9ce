// A QP's transmit turn ends with the frame that leaves it nothing to send: Engine::transmit asks
// QueuePair::nothing_left after each frame instead of a build_next that would find nothing
// (docs/perf-changes.md section 37). The turn still sends every packet the QP has, and the WQE
// whose last packet went, which the requester's cursor now rests on, counts as in flight (not
// drained) until its ACK.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::transmit_turn_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBD};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 11};
constexpr std::uint32_t kPeerQpn = 0x130;
constexpr std::uint32_t kS = 0x900;  // the requester's first PSN

class TransmitTurn : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = std::make_unique<rdma::Engine>(raw_peer_target(kPeerMac), mrs_);
    ep_ = make_endpoint(*engine_, QpOptions{});
    to_rtr(*engine_, ep_.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
    to_rts(*engine_, ep_.qp, kS, 1);
    peer_ = std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn, ep_.qp->qpn());
    src_.assign(4096, std::byte{5});
    mr_ = reg(*engine_, ep_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
  }
  void write(std::uint64_t id, std::uint32_t len) {
    ibv_sge g = sge(src_.data(), len, mr_);
    ASSERT_EQ(post(ep_, IBV_WR_RDMA_WRITE, id, &g, 1, 0x10000, 0x1234), 0);
  }
  std::vector<std::uint32_t> sent() {
    std::vector<std::uint32_t> psns;
    for (const Reply& r : peer_->collect()) psns.push_back(r.pkt.psn());
    return psns;
  }
  void ack(std::uint32_t psn) {
    ExtHeaders e;
    e.aeth = Aeth{Syndrome::ack().raw, Be24::of(0)};
    peer_->send(peer_->frame(Opcode::RcAck, psn, e, {}, false));
  }
  bool drained() const { return ep_.qp->requester().drained(ep_.qp->context()); }

  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
  std::vector<std::byte> src_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST_F(TransmitTurn, TheLastWqeSentStaysInFlightUntilItsAck) {
  write(1, 64);
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS}));
  EXPECT_FALSE(engine_->has_tx_work());
  EXPECT_FALSE(drained()) << "the WRITE under the cursor is in flight";
  EXPECT_TRUE(drain(ep_).empty());
  ack(kS);
  EXPECT_TRUE(drained());
  const auto wcs = drain(ep_);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  // The cursor moved on with the retired WQE: the next WRITE takes the next PSN.
  write(2, 64);
  EXPECT_EQ(sent(), (std::vector<std::uint32_t>{kS + 1}));
  EXPECT_FALSE(drained());
}

TEST_F(TransmitTurn, ATurnSendsEveryPacketOfEveryWqe) {
  write(1, 64);
  write(2, 3000);  // three packets at a 1 KiB MTU
  write(3, 64);
  EXPECT_EQ(sent(), (std::vector<std::uint32_t>{kS, kS + 1, kS + 2, kS + 3, kS + 4}));
  EXPECT_FALSE(engine_->has_tx_work());
  EXPECT_TRUE(sent().empty());
  ack(kS + 3);
  EXPECT_FALSE(drained()) << "the last WRITE is still in flight";
  EXPECT_EQ(drain(ep_).size(), 2u);
  ack(kS + 4);
  EXPECT_TRUE(drained());
  EXPECT_EQ(drain(ep_).size(), 1u);
}

// Engine::post_send activates the QP and updates its window share but leaves its timer as it is:
// a post moves none of the QP's deadlines. The engine's timer must still be the QP's own after a
// post, with a retransmit timer armed and with none (and in ERR, where the post is flushed).
TEST_F(TransmitTurn, APostLeavesTheQpsTimerWhereItWas) {
  EXPECT_EQ(engine_->next_deadline(), kNever);
  write(1, 64);
  EXPECT_TRUE(engine_->has_tx_work()) << "the post activates the QP";
  EXPECT_EQ(engine_->next_deadline(), kNever) << "nothing sent yet: no timer";
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS}));
  const Nanos armed = engine_->next_deadline();
  ASSERT_NE(armed, kNever) << "the WRITE in flight arms the retransmit timer";
  EXPECT_EQ(armed, ep_.qp->deadline());
  write(2, 64);
  EXPECT_TRUE(engine_->has_tx_work());
  EXPECT_EQ(engine_->next_deadline(), armed);
  EXPECT_EQ(ep_.qp->deadline(), armed);
  EXPECT_EQ(sent(), (std::vector<std::uint32_t>{kS + 1}));
  ack(kS + 1);
  EXPECT_EQ(drain(ep_).size(), 2u);
  EXPECT_EQ(engine_->next_deadline(), kNever);
  EXPECT_EQ(ep_.qp->deadline(), kNever);
  // In ERR a post is flushed at once: no send work, no timer.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_TRUE(engine_->modify_qp(ep_.qp, a, IBV_QP_STATE));
  write(3, 64);
  EXPECT_FALSE(engine_->has_tx_work());
  EXPECT_EQ(engine_->next_deadline(), kNever);
  const auto wcs = drain(ep_);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR) << describe(wcs[0]);
}

// Requester::can_send answers without the send queue walk where nothing is past the cursor, or
// a WQE not yet started is under it with nothing in flight (a post at queue depth 1): the engine
// asks it after every post of an idle QP and after the ACK that empties the send queue. Its
// answer must be the walk's in every state, and the engine's send work must follow it: active
// exactly when the walk says the QP can send (the raw peer sends no requests, so the QP owes no
// responses). A WQE whose last packet went, left under the cursor and acknowledged, is no work:
// a shortcut that took any WQE under the cursor with nothing in flight as sendable gets that
// step wrong.
TEST_F(TransmitTurn, CanSendWithoutTheWalkIsTheWalksAnswer) {
  const rdma::Requester& req = ep_.qp->requester();
  const rdma::QpContext& ctx = ep_.qp->context();
  const auto agree = [&](const char* step, bool expected) {
    EXPECT_EQ(req.can_send_walk(ctx), expected) << step;
    EXPECT_EQ(req.can_send(ctx), expected) << step;
    EXPECT_EQ(engine_->has_tx_work(), expected) << step;
  };
  agree("nothing posted", false);
  write(1, 64);
  agree("a WRITE posted, nothing in flight", true);
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS}));
  agree("the WRITE in flight, the cursor past it", false);
  write(2, 64);
  agree("a second WRITE posted behind one in flight", true);
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS + 1}));
  ack(kS + 1);
  EXPECT_EQ(drain(ep_).size(), 2u);
  agree("both acknowledged", false);
  write(3, 3000);  // three packets: frame by frame, and the cursor stays on it
  agree("a three-packet WRITE posted", true);
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS + 2, kS + 3, kS + 4}));
  agree("its last packet sent, the WQE under the cursor", false);
  ack(kS + 4);
  EXPECT_EQ(drain(ep_).size(), 1u);
  agree("it is acknowledged and retired, still under the cursor", false);
  write(4, 64);
  agree("a WRITE posted after it", true);
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS + 5}));
  ack(kS + 5);
  EXPECT_EQ(drain(ep_).size(), 1u);
  // A READ in flight takes the one READ/atomic credit (to_rts: max_rd_atomic 1): a fenced WRITE
  // waits for it, and so does everything behind it.
  ibv_sge g = sge(src_.data(), 64, mr_);
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_READ, 5, &g, 1, 0x10000, 0x1234), 0);
  agree("a READ posted", true);
  ASSERT_EQ(sent(), (std::vector<std::uint32_t>{kS + 6}));
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_WRITE, 6, &g, 1, 0x10000, 0x1234, IBV_SEND_SIGNALED | IBV_SEND_FENCE), 0);
  agree("a fenced WRITE behind the READ in flight", false);
  write(7, 64);
  agree("a WRITE behind the fenced one", false);
  // In ERR the QP sends nothing and a post is flushed at once.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_TRUE(engine_->modify_qp(ep_.qp, a, IBV_QP_STATE));
  agree("in ERR", false);
  write(8, 64);
  agree("a post in ERR", false);
}

// With an in-flight cap of 0 nothing may go, not even with nothing in flight: can_send's
// shortcut does not take such a WQE as sendable.
TEST(TransmitTurnCanSend, AnInFlightCapOfZeroSendsNothing) {
  rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
  cfg.tuning.max_inflight_packets = 0;
  rdma::MrTable mrs;
  rdma::Engine engine(cfg, mrs);
  Endpoint ep = make_endpoint(engine, QpOptions{});
  to_rtr(engine, ep.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
  to_rts(engine, ep.qp, kS, 1);
  std::vector<std::byte> src(64, std::byte{5});
  const rdma::MemoryRegion* mr = reg(engine, ep.pd, src, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(src.data(), 64, mr);
  ASSERT_EQ(post(ep, IBV_WR_RDMA_WRITE, 1, &g, 1, 0x10000, 0x1234), 0);
  EXPECT_FALSE(ep.qp->requester().can_send_walk(ep.qp->context()));
  EXPECT_FALSE(ep.qp->requester().can_send(ep.qp->context()));
  EXPECT_FALSE(engine.has_tx_work());
}

// QueuePair::begin_turn skips Requester::note_turn and turn_limit while neither split is on (the
// default): the turn then has no limit, as turn_limit says. With either split on it still asks
// them: a cap of 4 in halves gives turns of at most 2 (the shortcut taken regardless would give
// none).
TEST(TransmitTurnLimit, ATurnIsLimitedOnlyWhenASplitIsOn) {
  struct Case {
    const char* name;
    bool split_small_window;
    bool bdp_cap_split;
    bool limited;
  };
  for (const Case& c : {Case{"defaults", false, false, false}, Case{"split_small_window", true, false, true},
                        Case{"bdp_cap_split (the BDP cap not holding)", false, true, false}}) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.max_inflight_packets = 4;
    cfg.tuning.split_small_window = c.split_small_window;
    cfg.tuning.window.bdp_cap_split = c.bdp_cap_split;
    rdma::MrTable mrs;
    rdma::Engine engine(cfg, mrs);
    Endpoint ep = make_endpoint(engine, QpOptions{});
    to_rtr(engine, ep.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
    to_rts(engine, ep.qp, kS, 1);
    const std::uint32_t limit = ep.qp->turn_limit();
    if (c.limited) {
      EXPECT_GE(limit, 1u) << c.name;
      EXPECT_LE(limit, 2u) << c.name;
    } else {
      EXPECT_EQ(limit, UINT32_MAX) << c.name;
    }
    EXPECT_EQ(ep.qp->begin_turn(), limit) << c.name;
  }
}

}  // namespace
}  // namespace roce::test::transmit_turn_test
