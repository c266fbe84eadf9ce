// The rows of docs/robustness.md for ATOMIC_WRITE, FLUSH and memory windows: a hostile frame
// goes into Engine::receive, the test checks the answer (the NAK IBA annex A19 and chapter 10
// give, as rxe sends it) and that no byte changed that the request had no right to change.
#include <gtest/gtest.h>

#include <cstring>

#include "lib/rdma/memory_window.hpp"
#include "lib/rdma/verbs_ext.hpp"
#include "protocol/feth.hpp"
#include "tests/support/raw_peer_test.hpp"

namespace roce::test::hostile_placement_test {
namespace {

using namespace roce::proto;

constexpr std::uint32_t kEpsn = 0x3000;
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::uint8_t kNakInvalidRequest = 0x61;
constexpr std::uint8_t kNakRemoteAccess = 0x62;
constexpr std::size_t kGuard = 256;
constexpr std::size_t kRegionBytes = 4096;
enum Region : std::size_t { Flushable, NoFlush, ReadOnly, kRegions };

class HostilePlacement : public RawPeerTest {
 protected:
  void SetUp() override {
    RawPeerSetup s;
    s.rq_psn = kEpsn;
    s.access = kAll | rdma::kAccessFlushGlobal;
    s.rts = true;
    s.sq_psn = 0x700;
    bring_up(s);
    arena_.resize(kGuard + kRegions * (kRegionBytes + kGuard));
    for (std::size_t i = 0; i < arena_.size(); ++i) arena_[i] = static_cast<std::byte>(0x3C ^ (i * 17));
    const int access[kRegions] = {kAll | rdma::kAccessFlushGlobal | IBV_ACCESS_MW_BIND, kAll, IBV_ACCESS_REMOTE_READ};
    for (std::size_t r = 0; r < kRegions; ++r) {
      auto mr = mrs_.register_region(ep_.pd, region(r), kRegionBytes, access[r]);
      ASSERT_TRUE(mr.ok()) << mr.error().message;
      mr_[r] = *mr;
    }
    before_ = arena_;
  }
  void TearDown() override {
    for (std::size_t g = 0; g <= kRegions; ++g) {
      const std::size_t off = g * (kRegionBytes + kGuard);
      EXPECT_TRUE(std::equal(arena_.begin() + static_cast<std::ptrdiff_t>(off),
                             arena_.begin() + static_cast<std::ptrdiff_t>(off + kGuard),
                             before_.begin() + static_cast<std::ptrdiff_t>(off)))
          << "guard band " << g << " was written";
    }
  }
  std::byte* region(std::size_t r) { return arena_.data() + kGuard + r * (kRegionBytes + kGuard); }
  std::uint64_t va(std::size_t r, std::size_t off = 0) { return reinterpret_cast<std::uint64_t>(region(r) + off); }
  std::uint32_t rkey(std::size_t r) const { return mr_[r]->rkey(); }
  bool memory_untouched() const { return arena_ == before_; }

  std::vector<std::byte> atomic_write(std::uint64_t at, std::uint32_t key, std::uint32_t reth_len = 8,
                                      std::size_t payload = 8, std::uint32_t psn = kEpsn) {
    return peer_->frame(Opcode::RcAtomicWrite, psn, reth(at, key, reth_len), std::vector<std::byte>(payload, std::byte{0xC3}));
  }
  std::vector<std::byte> flush(std::uint64_t at, std::uint32_t key, std::uint32_t len, std::uint32_t feth_bits,
                               std::uint32_t psn = kEpsn) {
    ExtHeaders e = reth(at, key, len);
    e.feth.bits.set(feth_bits);
    return peer_->frame(Opcode::RcFlush, psn, e, {});
  }
  void expect_fatal_nak(std::uint8_t syndrome) {
    const auto out = peer_->collect();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcAck));
    EXPECT_EQ(out[0].pkt.ext.aeth.syndrome, syndrome);
    EXPECT_EQ(out[0].pkt.psn(), kEpsn);
    EXPECT_EQ(ep_.qp->state(), rdma::QpState::Err);
  }
  // The zero-length READ response ONLY that answers an ATOMIC_WRITE or FLUSH.
  static bool is_empty_read_response(const Reply& r, std::uint32_t psn) {
    return r.pkt.opcode() == raw(Opcode::RcReadResponseOnly) && r.pkt.payload_length == 0 && r.pkt.psn() == psn;
  }

  std::vector<std::byte> arena_, before_;
  const rdma::MemoryRegion* mr_[kRegions] = {};
};

TEST_F(HostilePlacement, MisalignedAtomicWriteIsInvalidRequest) {
  peer_->send(atomic_write(va(Flushable, 4), rkey(Flushable)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostilePlacement, AtomicWriteWhoseRethLengthIsNotEightIsInvalidRequest) {
  peer_->send(atomic_write(va(Flushable), rkey(Flushable), 16));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostilePlacement, AtomicWriteCarryingOtherThanEightBytesIsADrop) {
  peer_->send(atomic_write(va(Flushable), rkey(Flushable), 8, 4));
  peer_->send(atomic_write(va(Flushable), rkey(Flushable), 8, 12));
  std::string drops;
  std::uint64_t n = 0;
  for (std::size_t e = 1; e < static_cast<std::size_t>(ParseError::Count); ++e) {
    n += engine_->parse_drops(static_cast<ParseError>(e));
    if (engine_->parse_drops(static_cast<ParseError>(e))) drops += to_string(static_cast<ParseError>(e)) + " ";
  }
  EXPECT_EQ(n, 2u) << drops;
  EXPECT_EQ(engine_->parse_drops(ParseError::PayloadLengthInvalid), 2u) << drops;
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostilePlacement, AtomicWriteJustPastTheRegionOrIntoAReadOnlyOneIsRemoteAccessError) {
  peer_->send(atomic_write(va(Flushable, kRegionBytes), rkey(Flushable)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostilePlacement, FloodOfDuplicateAtomicWritesIsAnsweredNeverWrittenAgain) {
  peer_->send(atomic_write(va(Flushable, 8), rkey(Flushable)));
  auto first = peer_->collect();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(is_empty_read_response(first[0], kEpsn));
  // The application overwrites the word; a replayed ATOMIC_WRITE must not put the old value back.
  std::memset(region(Flushable) + 8, 0x11, 8);
  before_ = arena_;
  std::size_t answers = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 20; ++i) peer_->send(atomic_write(va(Flushable, 8), rkey(Flushable)));
    for (const Reply& r : peer_->collect()) answers += is_empty_read_response(r, kEpsn);
  }
  EXPECT_GT(answers, 0u);
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest) + count(rdma::Counter::ResponderBusyDrops), 1000u);
  EXPECT_EQ(count(rdma::Counter::DuplicateAtomicReplayed), count(rdma::Counter::DuplicateRequest));
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

TEST_F(HostilePlacement, FlushWithNoOrAnUnknownPlacementTypeIsInvalidRequest) {
  peer_->send(flush(va(Flushable), rkey(Flushable), 64, 0x04));  // placement bit 2: reserved
  expect_fatal_nak(kNakInvalidRequest);
}

TEST_F(HostilePlacement, FlushWithAReservedSelectivityLevelIsInvalidRequest) {
  peer_->send(flush(va(Flushable), rkey(Flushable), 64, 0x21));  // selectivity 2
  expect_fatal_nak(kNakInvalidRequest);
}

TEST_F(HostilePlacement, FlushOfAPlacementTheQpDoesNotAllowIsInvalidRequest) {
  peer_->send(flush(va(Flushable), rkey(Flushable), 64, rdma::kFlushPersistent));  // the QP allows global only
  expect_fatal_nak(kNakInvalidRequest);
}

TEST_F(HostilePlacement, FlushOfARegionWithoutFlushAccessIsRemoteAccessError) {
  peer_->send(flush(va(NoFlush), rkey(NoFlush), 64, rdma::kFlushGlobal));
  expect_fatal_nak(kNakRemoteAccess);
}

TEST_F(HostilePlacement, FlushOfARangePastTheRegionIsRemoteAccessError) {
  peer_->send(flush(va(Flushable, 4000), rkey(Flushable), 200, rdma::kFlushGlobal));
  expect_fatal_nak(kNakRemoteAccess);
}

TEST_F(HostilePlacement, FlushOfAWholeRegionThroughAStaleKeyIsRemoteAccessError) {
  peer_->send(flush(0, rkey(Flushable) ^ 0x01, 0, rdma::kFlushGlobal | (rdma::kFlushMr << 4)));
  expect_fatal_nak(kNakRemoteAccess);
}

TEST_F(HostilePlacement, FlushOfAWholeRegionIsAnsweredWhateverItsVaAndLength) {
  // (the RETH length is still held to 2^31, as rxe does for every RETH)
  peer_->send(flush(0xFFFFFFFFFFFFF000ull, rkey(Flushable), 1u << 30, rdma::kFlushGlobal | (rdma::kFlushMr << 4)));
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(is_empty_read_response(out[0], kEpsn));
  EXPECT_EQ(out[0].pkt.ext.aeth.msn.get(), 1u);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostilePlacement, Type2WindowKeyUsedThroughAnotherQpIsRemoteAccessError) {
  // Bound through a second QP of the same engine: only that QP may use it (type 2B).
  auto cq = engine_->create_cq(16);
  ASSERT_TRUE(cq.ok());
  rdma::QpInit init;
  init.send_cq = init.recv_cq = *cq;
  init.cap = ibv_qp_cap{8, 8, 1, 1, 0};
  auto other = engine_->create_qp(ep_.pd, init);
  ASSERT_TRUE(other.ok());
  bring_up_another(*other);
  auto mw = engine_->alloc_mw(ep_.pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(mw.ok());
  ibv_mr h{};
  h.lkey = mr_[Flushable]->lkey();
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_BIND_MW;
  wr.bind_mw.mw = &(*mw)->base;
  wr.bind_mw.rkey = rdma::next_window_key((*mw)->base.rkey);
  wr.bind_mw.bind_info.mr = &h;
  wr.bind_mw.bind_info.addr = va(Flushable);
  wr.bind_mw.bind_info.length = kRegionBytes;
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(engine_->post_send(*other, &wr, &bad), 0);
  (void)peer_->collect();  // the engine runs its send queues: the bind is done
  ASSERT_NE(mrs_.find(wr.bind_mw.rkey), nullptr);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Flushable), wr.bind_mw.rkey, 16),
                           std::vector<std::byte>(16, std::byte{0xEE})));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostilePlacement, SendWithInvalidateOfAType1WindowIsInvalidRequest) {
  auto mw = engine_->alloc_mw(ep_.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok());
  ibv_mr h{};
  h.lkey = mr_[Flushable]->lkey();
  ibv_mw_bind bind{};
  bind.bind_info.mr = &h;
  bind.bind_info.addr = va(Flushable);
  bind.bind_info.length = 64;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(engine_->bind_mw(ep_.qp, *mw, bind), 0);
  (void)peer_->collect();
  ibv_sge s{va(NoFlush), 64, mr_[NoFlush]->lkey()};
  ASSERT_EQ(post_recv(ep_, 5, &s, 1), 0);
  ExtHeaders e;
  e.ieth.rkey.set((*mw)->base.rkey);
  peer_->send(peer_->frame(Opcode::RcSendOnlyInv, kEpsn, e, std::vector<std::byte>(8, std::byte{1})));
  expect_fatal_nak(kNakInvalidRequest);
  ASSERT_NE(mrs_.find((*mw)->base.rkey), nullptr);  // still bound
}

}  // namespace
}  // namespace roce::test::hostile_placement_test
