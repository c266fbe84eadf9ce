// A READ whose responses were partly lost is re-issued from the first missing packet. The peer
// may answer that request as a new READ (FIRST ... LAST, as the IBA describes) or, like Linux
// rxe, by continuing its original response (MIDDLE ... LAST from the re-issued PSN). Found live
// against rxe: our requester took only the first form and retried until the retry count ran out.
// Either way, each response is placed, and the next one asked for ahead, at its own offset.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "protocol/parser.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/raw_peer_test.hpp"

namespace roce::test::read_resume_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBB};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kPeerQpn = 0x99;
constexpr std::uint32_t kSqPsn = 0x4000;
constexpr std::uint32_t kLength = 3000;  // three responses at MTU 1024: 1024 + 1024 + 952

class ReadResume : public RawPeerTest {
 protected:
  void SetUp() override {
    RawPeerSetup s{kPeerMac, kPeerIp, kPeerQpn, 0x100, IBV_ACCESS_LOCAL_WRITE, 1, 12};
    s.rts = true;
    s.sq_psn = kSqPsn;
    bring_up(s);
    local_.assign(kLength, std::byte{0});
    mr_ = reg(*engine_, ep_.pd, local_, IBV_ACCESS_LOCAL_WRITE);
    remote_.resize(kLength);
    for (std::size_t i = 0; i < remote_.size(); ++i) remote_[i] = static_cast<std::byte>(i * 13 + 5);
  }

  // A READ response packet carrying the remote bytes of response packet `index`.
  std::vector<std::byte> response(Opcode op, std::uint32_t index) const {
    ExtHeaders e;
    if (op != Opcode::RcReadResponseMiddle) e.aeth = Aeth{Syndrome::ack().raw, Be24::of(1)};
    const std::size_t off = std::size_t{index} * 1024;
    const std::size_t len = std::min<std::size_t>(1024, kLength - off);
    return peer_->frame(op, kSqPsn + index, e, std::span<const std::byte>(remote_.data() + off, len), false);
  }

  // Posts the READ, answers FIRST, loses MIDDLE, delivers LAST: the requester must re-issue.
  Reply lose_the_middle() {
    ibv_sge sg = sge(local_.data(), kLength, mr_);
    EXPECT_EQ(post(ep_, IBV_WR_RDMA_READ, 7, &sg, 1, 0x10000, 0x1234), 0);
    auto req = peer_->collect();
    EXPECT_EQ(req.size(), 1u);
    peer_->send(response(Opcode::RcReadResponseFirst, 0));
    peer_->send(response(Opcode::RcReadResponseLast, 2));
    auto again = peer_->collect();
    EXPECT_EQ(again.size(), 1u);
    return again.empty() ? Reply{} : again[0];
  }

  void expect_one_good_completion() {
    const auto wcs = drain(ep_);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
    EXPECT_EQ(wcs[0].byte_len, kLength);
    EXPECT_TRUE(std::equal(local_.begin(), local_.end(), remote_.begin()));
  }

  std::vector<std::byte> local_, remote_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST_F(ReadResume, ReissuedReadAsksForTheMissingTail) {
  const Reply r = lose_the_middle();
  EXPECT_EQ(r.pkt.opcode(), raw(Opcode::RcReadRequest));
  EXPECT_EQ(r.pkt.psn(), kSqPsn + 1);
  EXPECT_EQ(r.pkt.ext.reth.va.get(), 0x10000u + 1024);
  EXPECT_EQ(r.pkt.ext.reth.dma_length.get(), kLength - 1024);
}

TEST_F(ReadResume, AnswerAsANewReadCompletes) {
  lose_the_middle();
  peer_->send(response(Opcode::RcReadResponseFirst, 1));
  peer_->send(response(Opcode::RcReadResponseLast, 2));
  expect_one_good_completion();
}

TEST_F(ReadResume, AnswerContinuingTheOriginalResponseCompletes) {
  lose_the_middle();
  peer_->send(response(Opcode::RcReadResponseMiddle, 1));
  peer_->send(response(Opcode::RcReadResponseLast, 2));
  expect_one_good_completion();
}

TEST_F(ReadResume, ContinuedResponsesArePlacedAndAskedAheadAtTheirOffsets) {
  lose_the_middle();
  const auto middle = response(Opcode::RcReadResponseMiddle, 1);
  const rdma::PayloadDest m = payload_dest_of(*ep_.qp, middle);
  EXPECT_EQ(m.dst, local_.data() + 1024);
  EXPECT_EQ(m.next.at, local_.data() + 2048);
  EXPECT_EQ(m.next.len, kLength - 2048);
  peer_->send(middle);
  const auto last = response(Opcode::RcReadResponseLast, 2);
  const rdma::PayloadDest l = payload_dest_of(*ep_.qp, last);
  EXPECT_EQ(l.dst, local_.data() + 2048);
  EXPECT_EQ(l.next.len, 0u);
  peer_->send(last);
  expect_one_good_completion();
}

// The completer places a READ response MIDDLE while it settles its ICRC (the same rule as the
// responder's, payload.hpp): a corrupted one leaves bytes behind, the LAST after it is out of
// order, the requester asks again from the MIDDLE, and the READ completes only once the good
// copy rewrote them. A corrupted LAST never reaches memory.
TEST_F(ReadResume, ACorruptedMiddlePlacedAheadIsRewrittenBeforeTheReadCompletes) {
  ibv_sge sg = sge(local_.data(), kLength, mr_);
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_READ, 7, &sg, 1, 0x10000, 0x1234), 0);
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(response(Opcode::RcReadResponseFirst, 0));
  const auto middle = response(Opcode::RcReadResponseMiddle, 1);
  peer_->send(test::frame_edit::corrupted(middle, middle.size() - 4 - 10));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::IcrcBad), 1u);
  EXPECT_FALSE(std::equal(local_.begin() + 1024, local_.begin() + 2048, remote_.begin() + 1024));  // placed, corrupted
  const auto last = response(Opcode::RcReadResponseLast, 2);
  peer_->send(test::frame_edit::corrupted(last, last.size() - 4 - 10));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::IcrcBad), 2u);
  EXPECT_TRUE(std::all_of(local_.begin() + 2048, local_.end(), [](std::byte b) { return b == std::byte{0}; }));
  peer_->send(last);
  const auto again = peer_->collect();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].pkt.opcode(), raw(Opcode::RcReadRequest));
  EXPECT_EQ(again[0].pkt.psn(), kSqPsn + 1);
  EXPECT_TRUE(drain(ep_).empty());
  peer_->send(middle);
  peer_->send(last);
  expect_one_good_completion();
}

TEST_F(ReadResume, MiddleBeforeAnyFirstIsStillRefused) {
  ibv_sge sg = sge(local_.data(), kLength, mr_);
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_READ, 7, &sg, 1, 0x10000, 0x1234), 0);
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(response(Opcode::RcReadResponseMiddle, 0));
  EXPECT_TRUE(drain(ep_).empty());
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::GhostResponses), 1u);
}

}  // namespace
}  // namespace roce::test::read_resume_test
