// Frames of one RX burst (Engine::begin_receive_burst .. end_receive_burst): the refresh after
// each frame (the QP's timer, the active ring) waits until the burst moves on to another QP or
// ends, and what the engine then sends is what it sends for the same frames one at a time.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::receive_burst_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBC};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 10};
constexpr std::uint32_t kPeerQpn = 0x120;
constexpr std::uint32_t kPsn = 0x700;

struct Sent {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint8_t syndrome = 0;
  bool operator==(const Sent&) const = default;
};

// An engine with two RC QPs, each answering a raw peer of its own.
struct World {
  World() {
    engine_ = std::make_unique<rdma::Engine>(raw_peer_target(kPeerMac), mrs_);
    mem_.assign(1 << 14, std::byte{3});
    for (unsigned i = 0; i < 2; ++i) {
      Endpoint ep = make_endpoint(*engine_, QpOptions{}, i ? eps_[0].pd : 0);
      to_rtr(*engine_, ep.qp, RawPeerPath{kPeerIp, kPeerQpn + i, kPsn, IBV_ACCESS_REMOTE_WRITE});
      to_rts(*engine_, ep.qp, 0x100, 1);
      eps_.push_back(ep);
      peers_.push_back(std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn + i, ep.qp->qpn()));
    }
    mr_ = reg(*engine_, eps_[0].pd, mem_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }

  // A 64 B WRITE_ONLY asking for an ACK, from peer `q`.
  void write(unsigned q, std::uint32_t psn) {
    const std::vector<std::byte> payload(64, std::byte{1});
    const auto va = reinterpret_cast<std::uint64_t>(mem_.data()) + 64 * q;
    peers_[q]->send(peers_[q]->frame(Opcode::RcWriteOnly, psn, reth(va, mr_->rkey(), 64), payload), 0);
  }
  std::vector<Sent> transmit() {
    std::vector<std::vector<std::byte>> bufs(8, std::vector<std::byte>(4096));
    std::vector<rdma::TxFrame> frames(bufs.size());
    for (std::size_t i = 0; i < bufs.size(); ++i) frames[i] = rdma::TxFrame{bufs[i].data(), 4096, 0};
    const std::size_t n = engine_->transmit(frames, 0);
    std::vector<Sent> out;
    for (std::size_t i = 0; i < n; ++i) {
      Packet p;
      EXPECT_EQ(parse_frame({frames[i].data, frames[i].length}, {}, p), ParseError::None);
      out.push_back({p.dest_qp(), p.psn(), p.ext.aeth.syndrome});
    }
    return out;
  }

  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  std::vector<Endpoint> eps_;
  std::vector<std::unique_ptr<RawPeer>> peers_;
  std::vector<std::byte> mem_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST(ReceiveBurst, ARunOfOneQpsFramesIsRefreshedWhenTheBurstMovesOnOrEnds) {
  World w;
  w.engine_->begin_receive_burst();
  w.write(0, kPsn);
  w.write(0, kPsn + 1);
  EXPECT_FALSE(w.engine_->has_tx_work()) << "QP 0's ACK is owed, its refresh waits for the run to end";
  w.write(1, kPsn);
  EXPECT_TRUE(w.engine_->has_tx_work()) << "a frame of another QP refreshes QP 0 first";
  w.engine_->end_receive_burst();
  const auto sent = w.transmit();
  const Sent ack0{kPeerQpn, kPsn + 1, Syndrome::ack().raw}, ack1{kPeerQpn + 1, kPsn, Syndrome::ack().raw};
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0], ack0);
  EXPECT_EQ(sent[1], ack1) << "QP 1 refreshed by end_receive_burst";
  EXPECT_FALSE(w.engine_->has_tx_work());
}

// Three of QP 0's WRITEs, two of QP 1's, one more of QP 0's.
TEST(ReceiveBurst, ABurstSendsWhatTheSameFramesOneAtATimeSend) {
  std::vector<Sent> got[2];
  for (const bool burst : {false, true}) {
    World w;
    if (burst) w.engine_->begin_receive_burst();
    for (std::uint32_t i = 0; i < 3; ++i) w.write(0, kPsn + i);
    w.write(1, kPsn);
    w.write(1, kPsn + 1);
    w.write(0, kPsn + 3);
    if (burst) w.engine_->end_receive_burst();
    got[burst] = w.transmit();
  }
  ASSERT_EQ(got[0].size(), 2u);
  EXPECT_EQ(got[1], got[0]);
}

TEST(ReceiveBurst, TransmitAfterABurstLeftOpenRefreshesFirst) {
  World w;
  w.engine_->begin_receive_burst();
  w.write(0, kPsn);
  const auto sent = w.transmit();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].psn, kPsn);
}

// Engine::prefetch_receive_state (a worker asks for a later run's QP state ahead of its frames):
// a QPN no QP of the engine has (the GSI's, one below the first, one past the table, one of the
// 24-bit space's last) is passed over; a known one changes nothing either, in the middle of an open
// run whose refresh is still owed.
TEST(ReceiveBurst, PrefetchingAQpsStateChangesNothingAndPassesOverUnknownQpns) {
  World w;
  w.engine_->begin_receive_burst();
  w.write(0, kPsn);
  const rdma::Counters before = w.engine_->total_counters();
  const std::uint32_t known = w.eps_[1].qp->qpn();
  for (const std::uint32_t qpn : {0u, 1u, known - 2, known + 1, known + 1000, 0xFFFFFFu, 0xFFFFFFFFu}) {
    ASSERT_EQ(w.engine_->find_qp(qpn), nullptr) << qpn;
    w.engine_->prefetch_receive_state(qpn);
  }
  w.engine_->prefetch_receive_state(known);
  w.engine_->prefetch_receive_state(w.eps_[0].qp->qpn());
  EXPECT_EQ(w.engine_->total_counters().values(), before.values());
  EXPECT_FALSE(w.engine_->has_tx_work()) << "the run's refresh is still owed: nothing moved it";
  w.write(0, kPsn + 1);
  w.engine_->end_receive_burst();
  const auto sent = w.transmit();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0], (Sent{kPeerQpn, kPsn + 1, Syndrome::ack().raw})) << "the run went on as if nothing was asked";
}

}  // namespace
}  // namespace roce::test::receive_burst_test
