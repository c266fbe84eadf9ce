// Each responder rule on its own: a hand-built request in, the exact answer out.
#include <gtest/gtest.h>

#include "protocol/aeth.hpp"
#include "tests/support/raw_peer_test.hpp"

namespace roce::test::responder_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xAA};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kPeerQpn = 0x77;
constexpr std::uint32_t kEpsn = 0x1000;
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

class Responder : public RawPeerTest {
 protected:
  void SetUp() override { bring_up_at(kEpsn); }

  // `selective_repeat`: the QP's reorder window (0: go-back-N).
  void bring_up_at(std::uint32_t epsn, std::uint32_t selective_repeat = 0) {
    RawPeerSetup s{kPeerMac, kPeerIp, kPeerQpn, epsn, kAll};
    s.selective_repeat = selective_repeat;
    bring_up(s);
    mem_.assign(64 * 1024, std::byte{0});
    for (std::size_t i = 0; i < mem_.size(); ++i) mem_[i] = static_cast<std::byte>(i * 7);
    mr_ = reg(*engine_, ep_.pd, mem_, kAll);
  }

  std::uint64_t va(std::size_t off = 0) const { return reinterpret_cast<std::uint64_t>(mem_.data() + off); }
  static Syndrome syn(const Reply& r) { return Syndrome{r.pkt.ext.aeth.syndrome}; }
  std::vector<std::byte> bytes(std::size_t n, std::uint8_t v) const { return std::vector<std::byte>(n, std::byte{v}); }

  std::vector<std::byte> mem_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

TEST_F(Responder, WriteOnlyIsExecutedAndAcknowledgedWithMsn) {
  const auto data = bytes(100, 0xAB);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(10), mr_->rkey(), 100), data));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcAck));
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(out[0].pkt.dest_qp(), kPeerQpn);
  EXPECT_TRUE(syn(out[0]).is_ack());
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 1u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), mem_.begin() + 10));
}

TEST_F(Responder, AcksForPacketsReceivedTogetherAreCoalesced) {
  for (std::uint32_t i = 0; i < 5; ++i)
    peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + i, reth(va(i * 8), mr_->rkey(), 8), bytes(8, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.psn(), kEpsn + 4);
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 5u);
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::AckDeferred), 4u);
}

TEST_F(Responder, GapGetsOneSequenceNakThenSilenceUntilTheExpectedPsn) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 3, reth(va(), mr_->rkey(), 4), bytes(4, 9)));
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 4, reth(va(), mr_->rkey(), 4), bytes(4, 9)));
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 1000, reth(va(), mr_->rkey(), 4), bytes(4, 9)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x60);
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);  // the PSN it expects
  EXPECT_EQ(mem_[0], std::byte{0});    // nothing executed
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 5, reth(va(), mr_->rkey(), 4), bytes(4, 9)));
  EXPECT_TRUE(peer_->collect().empty());
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(), mr_->rkey(), 4), bytes(4, 9)));
  out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(syn(out[0]).is_ack());
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::OutOfSeqRequest), 4u);
}

TEST_F(Responder, DuplicateWriteIsReacknowledgedNotReexecuted) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(), mr_->rkey(), 4), bytes(4, 1)));
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 1, reth(va(4), mr_->rkey(), 4), bytes(4, 2)));
  peer_->collect();
  mem_[0] = std::byte{0x55};
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(), mr_->rkey(), 4), bytes(4, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(syn(out[0]).is_ack());
  EXPECT_EQ(out[0].pkt.psn(), kEpsn + 1);  // the most recent PSN, as C9-105 asks
  EXPECT_EQ(mem_[0], std::byte{0x55});
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::DuplicateRequest), 1u);
}

TEST_F(Responder, ReadIsSegmentedWithAethOnFirstAndLast) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(5), mr_->rkey(), 2500)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcReadResponseFirst));
  EXPECT_EQ(out[1].pkt.opcode(), raw(Opcode::RcReadResponseMiddle));
  EXPECT_EQ(out[2].pkt.opcode(), raw(Opcode::RcReadResponseLast));
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(out[2].pkt.psn(), kEpsn + 2);
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 1u);
  EXPECT_EQ(out[2].pkt.ext.aeth.msn.get(), 1u);
  EXPECT_EQ(out[2].pkt.payload_length, 2500u - 2048u);
  std::vector<std::byte> got;
  for (auto& r : out) {
    auto p = r.payload();
    got.insert(got.end(), p.begin(), p.end());
  }
  EXPECT_TRUE(std::equal(got.begin(), got.end(), mem_.begin() + 5));
  // The next request PSN follows the READ's three PSNs.
  EXPECT_EQ(ep_.qp->responder().expected_psn(), kEpsn + 3);
}

TEST_F(Responder, DuplicateReadIsReexecutedFromTheRequestedPacket) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(), mr_->rkey(), 3000)));
  ASSERT_EQ(peer_->collect().size(), 3u);
  mem_[1024] = std::byte{0xEE};  // re-execution reads memory as it is now
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + 1, reth(va(1024), mr_->rkey(), 3000 - 1024)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcReadResponseFirst));
  EXPECT_EQ(out[0].pkt.psn(), kEpsn + 1);
  EXPECT_EQ(out[0].payload()[0], std::byte{0xEE});
  EXPECT_EQ(out[1].pkt.psn(), kEpsn + 2);
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::DuplicateReadReexecuted), 1u);
}

// A requester that takes a READ's responses in order (go-back-N, or a go-back-N READ on a
// selective repeat QP) asks again for the rest of it after each lost response. Between
// selective repeat endpoints queued answers stay (they may be holes asked for), but requests
// for the rest of one READ share one stream, moved back to the packet asked for: before,
// each ran to the READ's end, one after the other (ROCE_FAULT_SEED=34000 sent 65,356 READ
// responses for 1,065 requests and starved the QP's other answers).
TEST_F(Responder, RequestsForTheRestOfOneReadShareOneStream) {
  for (const std::uint32_t window : {0u, 64u}) {
    SCOPED_TRACE(window ? "selective repeat" : "go-back-N");
    bring_up_at(kEpsn, window);
    constexpr std::uint32_t kLen = 40 * 1024;  // 40 responses, +0 .. +39
    peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(), mr_->rkey(), kLen)));
    ASSERT_EQ(peer_->collect().size(), 40u);
    // The rest from +5, then from +10 and +15 (go-back-N: each newer request supersedes),
    // then from +8 again (before where the stream stands: it moves back there).
    for (const std::uint32_t from : {5u, 10u, 15u, 8u})
      peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + from, reth(va(from * 1024), mr_->rkey(), kLen - from * 1024)));
    const auto out = peer_->collect();
    EXPECT_EQ(count(rdma::Counter::DuplicateReadReexecuted), 4u);
    // Selective repeat keeps the stream where it stands (+5, before every later request);
    // go-back-N restarts it at each newer request.
    const std::uint32_t first = window ? 5 : 8;
    ASSERT_EQ(out.size(), 40u - first);
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].pkt.psn(), kEpsn + first + i) << i;
      EXPECT_EQ(out[i].payload()[0], mem_[(first + i) * 1024]) << i;
    }
    EXPECT_EQ(out.front().pkt.opcode(), raw(Opcode::RcReadResponseFirst));
    EXPECT_EQ(out.back().pkt.opcode(), raw(Opcode::RcReadResponseLast));
  }
}

TEST_F(Responder, DuplicateAtomicIsReplayedNeverExecutedTwice) {
  std::uint64_t* word = reinterpret_cast<std::uint64_t*>(mem_.data() + 64);
  *word = 100;
  const auto req = peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(64), mr_->rkey(), 5, 0));
  peer_->send(req);
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcAtomicAck));
  EXPECT_EQ(out[0].pkt.ext.atomic_ack.original_data.get(), 100u);
  EXPECT_EQ(*word, 105u);
  peer_->send(req);
  out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.ext.atomic_ack.original_data.get(), 100u);
  EXPECT_EQ(*word, 105u);
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::DuplicateAtomicReplayed), 1u);
}

// Every response carries the MSN the responder holds when it sends it (rxe does the same):
// a duplicate answered after later messages completed counts them too.
TEST_F(Responder, DuplicateReadCarriesTheCurrentMsnNotTheOriginals) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(), mr_->rkey(), 100)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 1u);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 1, reth(va(200), mr_->rkey(), 4), bytes(4, 3)));
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(), mr_->rkey(), 100)));
  out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcReadResponseOnly));
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 2u);
}

TEST_F(Responder, DuplicateAtomicCarriesTheCurrentMsnAndTheOriginalValue) {
  std::uint64_t* word = reinterpret_cast<std::uint64_t*>(mem_.data() + 64);
  *word = 40;
  const auto req = peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(64), mr_->rkey(), 2, 0));
  peer_->send(req);
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + 1, reth(va(200), mr_->rkey(), 4), bytes(4, 3)));
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(req);
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 2u);
  EXPECT_EQ(out[0].pkt.ext.atomic_ack.original_data.get(), 40u);
  EXPECT_EQ(*word, 42u);
}

TEST_F(Responder, CompareAndSwapSwapsOnlyOnEqual) {
  std::uint64_t* word = reinterpret_cast<std::uint64_t*>(mem_.data() + 128);
  *word = 7;
  peer_->send(peer_->frame(Opcode::RcCmpSwap, kEpsn, atomic_eth(va(128), mr_->rkey(), 9, 8)));
  peer_->send(peer_->frame(Opcode::RcCmpSwap, kEpsn + 1, atomic_eth(va(128), mr_->rkey(), 11, 7)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].pkt.ext.atomic_ack.original_data.get(), 7u);
  EXPECT_EQ(out[1].pkt.ext.atomic_ack.original_data.get(), 7u);
  EXPECT_EQ(*word, 11u);
}

TEST_F(Responder, VaPlusLengthOverflowIsRemoteAccessErrorAndWritesNothing) {
  const auto before = mem_;
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(UINT64_MAX - 16, mr_->rkey(), 64), bytes(64, 0xCC)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x62);
  EXPECT_EQ(mem_, before);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Err);
}

TEST_F(Responder, LengthBeyondTheRegionIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(mem_.size() - 10), mr_->rkey(), 11), bytes(11, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x62);
}

TEST_F(Responder, BadRkeyIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(), mr_->rkey() ^ 0x100, 16)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcAck));
  EXPECT_EQ(syn(out[0]).raw, 0x62);
  EXPECT_EQ(ep_.qp->counters().get(rdma::Counter::RemoteAccessErrors), 1u);
}

TEST_F(Responder, WriteToReadOnlyRegionIsRemoteAccessError) {
  std::vector<std::byte> ro(256);
  const rdma::MemoryRegion* ro_mr = reg(*engine_, ep_.pd, ro, IBV_ACCESS_REMOTE_READ);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(reinterpret_cast<std::uint64_t>(ro.data()), ro_mr->rkey(), 4),
                           bytes(4, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x62);
  EXPECT_EQ(ro[0], std::byte{0});
}

TEST_F(Responder, RkeyOfAnotherProtectionDomainIsRemoteAccessError) {
  std::vector<std::byte> other(256);
  const rdma::MemoryRegion* other_mr = reg(*engine_, engine_->alloc_pd(), other, kAll);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn,
                           reth(reinterpret_cast<std::uint64_t>(other.data()), other_mr->rkey(), 4), bytes(4, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x62);
  EXPECT_EQ(other[0], std::byte{0});
}

TEST_F(Responder, MisalignedAtomicIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(4), mr_->rkey(), 1, 0)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x61);
}

TEST_F(Responder, SendWithoutPostedReceiveIsRnrNakWithTheQpTimer) {
  peer_->send(peer_->frame(Opcode::RcSendOnly, kEpsn, {}, bytes(10, 1)));
  peer_->send(peer_->frame(Opcode::RcSendOnly, kEpsn + 1, {}, bytes(10, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(syn(out[0]).is_rnr_nak());
  EXPECT_EQ(syn(out[0]).value(), 14);
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(ep_.qp->responder().expected_psn(), kEpsn);
  // Once a receive is posted the retried SEND lands.
  std::vector<std::byte> buf(64);
  const rdma::MemoryRegion* m = reg(*engine_, ep_.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf.data(), 64, m);
  ASSERT_EQ(post_recv(ep_, 1, &g, 1), 0);
  peer_->send(peer_->frame(Opcode::RcSendOnly, kEpsn, {}, bytes(10, 3)));
  out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(syn(out[0]).is_ack());
  auto wcs = drain(ep_);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].byte_len, 10u);
  EXPECT_EQ(buf[0], std::byte{3});
}

TEST_F(Responder, MiddleWithoutFirstIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteMiddle, kEpsn, {}, bytes(1024, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x61);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Err);
}

TEST_F(Responder, FirstPacketShorterThanPmtuIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(), mr_->rkey(), 4096), bytes(512, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x61);
}

TEST_F(Responder, WriteLongerThanItsRethIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(), mr_->rkey(), 1500), bytes(1024, 1), false));
  peer_->send(peer_->frame(Opcode::RcWriteLast, kEpsn + 1, {}, bytes(1000, 1)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]).raw, 0x61);
  EXPECT_EQ(out[0].pkt.psn(), kEpsn + 1);
}

TEST_F(Responder, ZeroLengthWriteDoesNotCheckTheRkey) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(0, 0, 0)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(syn(out[0]).is_ack());
}

TEST_F(Responder, PsnWrapsAroundAt2To24) {
  bring_up_at(0xFFFFFE);
  const auto data = bytes(4096, 0x3C);
  const std::uint32_t psns[] = {0xFFFFFE, 0xFFFFFF, 0x000000, 0x000001};
  const Opcode ops[] = {Opcode::RcWriteFirst, Opcode::RcWriteMiddle, Opcode::RcWriteMiddle, Opcode::RcWriteLast};
  for (int i = 0; i < 4; ++i)
    peer_->send(peer_->frame(ops[i], psns[i], i == 0 ? reth(va(), mr_->rkey(), 4096) : ExtHeaders{},
                             std::span{data}.subspan(static_cast<std::size_t>(i) * 1024, 1024), i == 3));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(syn(out[0]).is_ack());
  EXPECT_EQ(out[0].pkt.psn(), 0x000001u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), mem_.begin()));
  EXPECT_EQ(ep_.qp->responder().expected_psn(), 2u);
}

TEST_F(Responder, TooManyOutstandingReadsIsInvalidRequest) {
  // max_dest_rd_atomic is 4: a fifth READ while four answers are still queued is refused.
  for (std::uint32_t i = 0; i < 5; ++i)
    peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + i, reth(va(), mr_->rkey(), 8)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[4].pkt.opcode(), raw(Opcode::RcAck));
  EXPECT_EQ(syn(out[4]).raw, 0x61);
}

TEST_F(Responder, NewReadRecyclesTheOldestResourceDespiteItsQueuedRetryAnswer) {
  // Four READs answered; the requester's timer fires and it asks for all four again; the first
  // original answer then reaches it, so it starts a fifth READ. The replay of the first is
  // stale and yields: no NAK, the three other replays and the new READ are answered.
  for (std::uint32_t i = 0; i < 4; ++i)
    peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + i, reth(va(), mr_->rkey(), 8)));
  ASSERT_EQ(peer_->collect().size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i)
    peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + i, reth(va(), mr_->rkey(), 8)));
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + 4, reth(va(), mr_->rkey(), 8)));
  auto out = peer_->collect();
  ASSERT_EQ(out.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i].pkt.opcode(), raw(Opcode::RcReadResponseOnly));
    EXPECT_EQ(out[i].pkt.psn(), kEpsn + 1 + i);
  }
}

TEST_F(Responder, CorruptedFrameIsDroppedAndCounted) {
  auto f = peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(), mr_->rkey(), 4), bytes(4, 1));
  f[f.size() - 6] ^= std::byte{1};
  peer_->send(f);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::IcrcBad), 1u);
  EXPECT_EQ(mem_[0], std::byte{0});
}

TEST_F(Responder, UnknownQpIsDroppedAndCounted) {
  RawPeer stranger(*engine_, kPeerMac, kPeerIp, kPeerQpn, 0x999);
  stranger.send(stranger.frame(Opcode::RcWriteOnly, kEpsn, reth(va(), mr_->rkey(), 4), bytes(4, 1)));
  EXPECT_TRUE(stranger.collect().empty());
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 1u);
}

}  // namespace
}  // namespace roce::test::responder_test
