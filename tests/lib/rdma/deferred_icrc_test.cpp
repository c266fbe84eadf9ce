// Packets of 1 KiB and more have their ICRC settled by the QP: a corrupted one must leave the
// responder as if it never came (no ACK, no NAK, the expected PSN unchanged), be counted as
// corrupted, and be replaced by its resend. MIDDLE packets, and LAST packets but for their last
// bytes, are placed while their ICRC is settled (payload.hpp); nothing that completes a message
// or writes the bytes a poller watches reaches memory before its ICRC holds.
#include <gtest/gtest.h>

#include "lib/rdma/payload.hpp"
#include "protocol/aeth.hpp"
#include "protocol/parser.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/raw_peer_test.hpp"

namespace roce::test::deferred_icrc_test {
namespace {

using namespace roce::proto;
using namespace roce::test::frame_edit;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xAB};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 8};
constexpr std::uint32_t kPeerQpn = 0x78;
constexpr std::uint32_t kEpsn = 0x2000;
constexpr std::uint32_t kMtu = 4096;
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

class DeferredIcrc : public RawPeerTest {
 protected:
  void SetUp() override {
    RawPeerSetup s{kPeerMac, kPeerIp, kPeerQpn, kEpsn, kAll};
    s.mtu = IBV_MTU_4096;
    bring_up(s);
    mem_.assign(4 * kMtu, std::byte{0});
    mr_ = reg(*engine_, ep_.pd, mem_, kAll);
    data_.resize(3 * kMtu);
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<std::byte>(i * 13 + 5);
  }
  std::span<const std::byte> part(unsigned i) const { return std::span(data_).subspan(i * kMtu, kMtu); }
  std::uint64_t icrc_bad() const { return engine_->drops(rdma::EngineDrop::IcrcBad); }
  // Where the engine would place this frame's payload, and what it would ask for ahead.
  rdma::PayloadDest target_of(const std::vector<std::byte>& frame) const { return payload_dest_of(*ep_.qp, frame); }

  std::vector<std::byte> mem_, data_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST_F(DeferredIcrc, CorruptedWriteMiddleChangesNothingAndItsResendCompletesTheWrite) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(reinterpret_cast<std::uint64_t>(mem_.data()), mr_->rkey(), 3 * kMtu),
                           part(0), false));
  const auto middle = peer_->frame(Opcode::RcWriteMiddle, kEpsn + 1, {}, part(1), false);
  // A payload byte and a BTH byte (the PSN: it would otherwise ask for a sequence NAK).
  peer_->send(corrupted(middle, middle.size() - 100));
  peer_->send(corrupted(middle, 14 + 20 + 8 + 11));
  EXPECT_EQ(icrc_bad(), 2u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_EQ(ep_.qp->responder().expected_psn(), kEpsn + 1);
  peer_->send(middle);
  peer_->send(peer_->frame(Opcode::RcWriteLast, kEpsn + 2, {}, part(2), true));
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(Syndrome{out[0].pkt.ext.aeth.syndrome}.is_ack());
  EXPECT_EQ(out[0].pkt.psn(), kEpsn + 2);
  EXPECT_TRUE(std::equal(data_.begin(), data_.end(), mem_.begin()));
  EXPECT_EQ(icrc_bad(), 2u);
}

TEST_F(DeferredIcrc, CorruptedSendLastLeavesTheReceiveOpenAndItsResendCompletesIt) {
  ibv_sge g = sge(mem_.data(), static_cast<std::uint32_t>(mem_.size()), mr_);
  ASSERT_EQ(post_recv(ep_, 9, &g, 1), 0);
  peer_->send(peer_->frame(Opcode::RcSendFirst, kEpsn, {}, part(0), false));
  peer_->send(peer_->frame(Opcode::RcSendMiddle, kEpsn + 1, {}, part(1), false));
  const auto last = peer_->frame(Opcode::RcSendLast, kEpsn + 2, {}, part(2), true);
  peer_->send(corrupted(last, last.size() - 5));  // the last payload byte
  EXPECT_EQ(icrc_bad(), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(drain(ep_).empty());
  peer_->send(last);
  ASSERT_EQ(peer_->collect().size(), 1u);
  const auto wcs = drain(ep_);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[0].byte_len, 3 * kMtu);
  EXPECT_TRUE(std::equal(data_.begin(), data_.end(), mem_.begin()));
}

// A LAST is placed while its ICRC is settled but for its last kHeldTailBytes, which wait for the
// verdict; an ONLY (its RETH steers it) is not placed at all before it.
TEST_F(DeferredIcrc, CorruptedLastNeverWritesItsTailAndCorruptedOnlyNothing) {
  const auto va = reinterpret_cast<std::uint64_t>(mem_.data());
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va, mr_->rkey(), 3 * kMtu), part(0), false));
  peer_->send(peer_->frame(Opcode::RcWriteMiddle, kEpsn + 1, {}, part(1), false));
  const auto last = peer_->frame(Opcode::RcWriteLast, kEpsn + 2, {}, part(2), true);
  for (const std::size_t at : {last.size() - 100, last.size() - 5}) {  // before the tail, in it
    peer_->send(corrupted(last, at));
    // An application polling the last bytes of the buffer (perftest's write latency polls the
    // last one) sees nothing of the corrupted LAST, and no completion or ACK comes of it.
    EXPECT_TRUE(std::all_of(mem_.begin() + 3 * kMtu - rdma::kHeldTailBytes, mem_.end(), [](std::byte b) { return b == std::byte{0}; }));
    EXPECT_TRUE(peer_->collect().empty());
    EXPECT_EQ(ep_.qp->responder().expected_psn(), kEpsn + 2);
  }
  EXPECT_EQ(icrc_bad(), 2u);
  peer_->send(last);
  EXPECT_TRUE(std::equal(data_.begin(), data_.end(), mem_.begin()));
  EXPECT_EQ(peer_->collect().size(), 1u);

  const auto only = peer_->frame(Opcode::RcWriteOnly, kEpsn + 3, reth(va + 3 * kMtu, mr_->rkey(), kMtu), part(1), true);
  peer_->send(corrupted(only, only.size() - 100));
  EXPECT_EQ(icrc_bad(), 3u);
  EXPECT_TRUE(std::all_of(mem_.begin() + 3 * kMtu, mem_.end(), [](std::byte b) { return b == std::byte{0}; }));
}

// A MIDDLE is placed while its ICRC is settled, so a corrupted one leaves its bytes behind; they
// lie where its resend goes, and go-back-N brings that resend before anything after it is taken.
TEST_F(DeferredIcrc, ACorruptedMiddlePlacedAheadIsRewrittenBeforeItsMessageCompletes) {
  std::vector<std::byte> rbuf(64);
  const rdma::MemoryRegion* rmr = reg(*engine_, ep_.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(rbuf.data(), 64, rmr);
  ASSERT_EQ(post_recv(ep_, 5, &g, 1), 0);
  ExtHeaders imm;
  imm.imm.bytes = {0, 0, 0, 7};
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn,
                           reth(reinterpret_cast<std::uint64_t>(mem_.data()), mr_->rkey(), 3 * kMtu), part(0), false));
  const auto middle = peer_->frame(Opcode::RcWriteMiddle, kEpsn + 1, {}, part(1), false);
  const std::size_t flipped = middle.size() - 4 - 100;  // a payload byte
  peer_->send(corrupted(middle, flipped));
  EXPECT_EQ(icrc_bad(), 1u);
  const auto middle_bytes = std::span(mem_).subspan(kMtu, kMtu);
  EXPECT_FALSE(std::equal(middle_bytes.begin(), middle_bytes.end(), part(1).begin()));  // placed, corrupted
  // The LAST comes next: ahead of the expected PSN, it is refused (one sequence NAK) and
  // nothing completes.
  const auto last = peer_->frame(Opcode::RcWriteLastImm, kEpsn + 2, imm, part(2), true);
  peer_->send(last);
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Syndrome{out[0].pkt.ext.aeth.syndrome}, Syndrome::nak(NakCode::PsnSequenceError));
  EXPECT_EQ(out[0].pkt.psn(), kEpsn + 1);
  EXPECT_TRUE(drain(ep_).empty());
  EXPECT_TRUE(std::all_of(mem_.begin() + 2 * kMtu, mem_.end(), [](std::byte b) { return b == std::byte{0}; }));
  // The requester goes back: the good MIDDLE rewrites the bytes, then the message completes.
  peer_->send(middle);
  peer_->send(last);
  out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(Syndrome{out[0].pkt.ext.aeth.syndrome}.is_ack());
  const auto wcs = drain(ep_);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_TRUE(std::equal(data_.begin(), data_.end(), mem_.begin()));
}

// The placement of each continuing packet asks for the lines of the next one (the reads for
// ownership then run during this copy): exactly where that packet lands, as long as the
// message goes on, and nothing after its last packet.
TEST_F(DeferredIcrc, EachPlacementAsksAheadForWhereTheNextPacketLands) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(reinterpret_cast<std::uint64_t>(mem_.data()), mr_->rkey(), 3 * kMtu),
                           part(0), false));
  const auto middle = peer_->frame(Opcode::RcWriteMiddle, kEpsn + 1, {}, part(1), false);
  const auto last = peer_->frame(Opcode::RcWriteLast, kEpsn + 2, {}, part(2), true);
  const rdma::PayloadDest m = target_of(middle);
  EXPECT_EQ(m.dst, mem_.data() + kMtu);
  EXPECT_EQ(m.next.at, mem_.data() + 2 * kMtu);
  EXPECT_EQ(m.next.len, kMtu);
  peer_->send(middle);
  const rdma::PayloadDest l = target_of(last);
  EXPECT_EQ(l.dst, m.next.at);
  EXPECT_EQ(l.next.len, 0u);
  peer_->send(last);
  EXPECT_TRUE(std::equal(data_.begin(), data_.end(), mem_.begin()));

  // A SEND into two segments: ahead stops at the end of the segment the next packet starts in.
  ibv_sge g[2] = {sge(mem_.data(), 2 * kMtu + kMtu / 2, mr_), sge(mem_.data() + 3 * kMtu, kMtu, mr_)};
  ASSERT_EQ(post_recv(ep_, 9, g, 2), 0);
  peer_->send(peer_->frame(Opcode::RcSendFirst, kEpsn + 3, {}, part(0), false));
  const auto send_middle = peer_->frame(Opcode::RcSendMiddle, kEpsn + 4, {}, part(1), false);
  const rdma::PayloadDest sm = target_of(send_middle);
  EXPECT_EQ(sm.dst, mem_.data() + kMtu);
  EXPECT_EQ(sm.next.at, mem_.data() + 2 * kMtu);
  EXPECT_EQ(sm.next.len, kMtu / 2);
  peer_->send(send_middle);
  // The last packet straddles the two segments: it takes the usual way, no target.
  EXPECT_EQ(target_of(peer_->frame(Opcode::RcSendLast, kEpsn + 5, {}, part(2), true)).dst, nullptr);
}

TEST_F(DeferredIcrc, CorruptedMiddleNobodyExpectsIsStillCountedAsCorrupted) {
  // No message open: the usual way would NAK it; corrupted, it is only counted.
  const auto middle = peer_->frame(Opcode::RcWriteMiddle, kEpsn, {}, part(1), true);
  peer_->send(corrupted(middle, middle.size() - 100));
  EXPECT_EQ(icrc_bad(), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(std::all_of(mem_.begin(), mem_.end(), [](std::byte b) { return b == std::byte{0}; }));
}

}  // namespace
}  // namespace roce::test::deferred_icrc_test
