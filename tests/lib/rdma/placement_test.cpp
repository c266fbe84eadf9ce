// ATOMIC_WRITE and FLUSH (IBA annex A19, Linux 6.2+ rxe) engine to engine: what lands, the
// completions, the access rules, duplicates, and the frames on the wire against the header
// layout of the spec (FLUSH: BTH | FETH | RETH; ATOMIC_WRITE: BTH | RETH | 8 bytes; both
// answered by a zero-length RDMA READ response ONLY).
#include <gtest/gtest.h>

#include <cstring>

#include "lib/rdma/verbs_ext.hpp"
#include "protocol/feth.hpp"
#include "protocol/parser.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"
#include "tests/support/write_stream.hpp"

namespace roce::test::placement_test {
namespace {

using namespace roce::proto;

constexpr int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct Sent {
  std::string from;
  std::vector<std::byte> frame;
};

struct PlacementPair {
  SimNetwork net{7};
  Endpoint a, b;
  std::vector<Sent> sent;
  explicit PlacementPair(int b_access = kRw | rdma::kAccessFlushGlobal, LinkFaults f = {}) {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    net.connect("a", "b", f, {});
    net.on_transmit = [this](const std::string& from, std::span<const std::byte> fr, Nanos) {
      sent.push_back({from, std::vector<std::byte>(fr.begin(), fr.end())});
    };
    QpOptions oa;
    QpOptions ob;
    ob.access = b_access;
    a = make_endpoint(net.host("a"), oa);
    b = make_endpoint(net.host("b"), ob);
    bring_up(a, b, oa, oa.sq_psn, oa.rq_psn);
    bring_up(b, a, ob, oa.rq_psn, oa.sq_psn);
  }
  std::vector<ibv_wc> wait(Endpoint& ep, std::size_t n) { return wait_completions(net, ep, n); }
  std::vector<Packet> frames_from(const std::string& host) const {
    std::vector<Packet> out;
    for (const Sent& s : sent) {
      Packet p;
      if (s.from == host && parse_frame(ByteSpan{s.frame.data(), s.frame.size()}, {}, p) == ParseError::None)
        out.push_back(p);
    }
    return out;
  }
  int flush(std::uint64_t wr_id, const rdma::MemoryRegion* mr, std::uint64_t va, std::uint32_t len, std::uint8_t placement,
            std::uint8_t level) {
    ibv_send_wr wr = rdma::flush_wr(wr_id, mr->rkey(), va, len, placement, level);
    ibv_send_wr* bad = nullptr;
    return a.engine->post_send(a.qp, &wr, &bad);
  }
};

std::uint64_t va_of(const std::vector<std::byte>& v, std::size_t at = 0) { return reinterpret_cast<std::uint64_t>(v.data() + at); }

TEST(AtomicWrite, WritesTheEightBytesAsTheyCameAndCompletesAsAtomicWrite) {
  PlacementPair p;
  std::vector<std::byte> src(8), dst(64, std::byte{0});
  for (int i = 0; i < 8; ++i) src[i] = static_cast<std::byte>(0xA0 + i);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  ibv_sge s = sge(src.data(), 8, smr);
  ASSERT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, 5, &s, 1, va_of(dst, 16), dmr->rkey()), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_ATOMIC_WRITE);
  EXPECT_EQ(wcs[0].wr_id, 5u);
  EXPECT_EQ(std::memcmp(dst.data() + 16, src.data(), 8), 0);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + 16, [](std::byte x) { return x == std::byte{0}; }));
  EXPECT_TRUE(std::all_of(dst.begin() + 24, dst.end(), [](std::byte x) { return x == std::byte{0}; }));

  // On the wire: BTH | RETH(va, rkey, 8) | 8 payload bytes; answered by a READ response ONLY of 0 bytes.
  const auto req = p.frames_from("a");
  ASSERT_FALSE(req.empty());
  const Packet& aw = req.front();
  EXPECT_EQ(aw.opcode(), 0x1D);
  EXPECT_EQ(aw.payload_offset - aw.bth_offset, 12u + 16u);
  EXPECT_EQ(aw.ext.reth.va.get(), va_of(dst, 16));
  EXPECT_EQ(aw.ext.reth.rkey.get(), dmr->rkey());
  EXPECT_EQ(aw.ext.reth.dma_length.get(), 8u);
  EXPECT_EQ(aw.payload_length, 8u);
  EXPECT_EQ(aw.bth.pad_count(), 0);
  EXPECT_TRUE(aw.bth.ack_requested());
  const auto resp = p.frames_from("b");
  ASSERT_FALSE(resp.empty());
  EXPECT_EQ(resp.front().opcode(), raw(Opcode::RcReadResponseOnly));
  EXPECT_EQ(resp.front().psn(), aw.psn());
  EXPECT_EQ(resp.front().payload_length, 0u);
  EXPECT_EQ(resp.front().ext.aeth.msn.get(), 1u);
}

TEST(AtomicWrite, InlineKeepsItsEightBytesInTheWqeWhateverTheQpsInlineSize) {
  PlacementPair p;
  std::vector<std::byte> dst(64, std::byte{0});
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  std::uint64_t value = 0x0123456789ABCDEFull;
  ibv_sge s{reinterpret_cast<std::uint64_t>(&value), 8, 0};
  ASSERT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, 3, &s, 1, va_of(dst, 8), dmr->rkey(), IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  value = 0;  // the caller's buffer is free once post_send returns
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  std::uint64_t got = 0;
  std::memcpy(&got, dst.data() + 8, 8);
  EXPECT_EQ(got, 0x0123456789ABCDEFull);
}

TEST(AtomicWrite, PostSendRefusesALengthOtherThanEightOrAMisalignedTarget) {
  PlacementPair p;
  std::vector<std::byte> src(16), dst(64);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  ibv_sge s4 = sge(src.data(), 4, smr);
  EXPECT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, 1, &s4, 1, va_of(dst), dmr->rkey()), EINVAL);
  ibv_sge s8 = sge(src.data(), 8, smr);
  EXPECT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, 2, &s8, 1, va_of(dst, 4), dmr->rkey()), EINVAL);
}

TEST(AtomicWrite, WithoutRemoteWriteOnTheQpIsAnInvalidRequest) {
  PlacementPair p(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  std::vector<std::byte> src(8, std::byte{7}), dst(64);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  ibv_sge s = sge(src.data(), 8, smr);
  ASSERT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, 1, &s, 1, va_of(dst), dmr->rkey()), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR) << describe(wcs[0]);
  EXPECT_EQ(dst[0], std::byte{0});
}

TEST(AtomicWrite, IntoAReadOnlyRegionIsARemoteAccessError) {
  PlacementPair p;
  std::vector<std::byte> src(8, std::byte{7}), dst(64);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, IBV_ACCESS_REMOTE_READ);
  ibv_sge s = sge(src.data(), 8, smr);
  ASSERT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, 1, &s, 1, va_of(dst), dmr->rkey()), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << describe(wcs[0]);
  EXPECT_EQ(dst[0], std::byte{0});
}

TEST(AtomicWrite, UnderDuplicationAndLossEachCompletesOnceAndTheLastValueStays) {
  LinkFaults f;
  f.loss = 0.2;
  f.duplicate = 0.2;
  PlacementPair p(kRw | rdma::kAccessFlushGlobal, f);
  std::vector<std::byte> src(8 * 40), dst(64, std::byte{0});
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  for (std::uint64_t i = 0; i < 40; ++i) {
    const std::uint64_t v = 0x1111111100000000ull + i;
    std::memcpy(src.data() + 8 * i, &v, 8);
    ibv_sge s = sge(src.data() + 8 * i, 8, smr);
    ASSERT_EQ(post(p.a, IBV_WR_ATOMIC_WRITE, i, &s, 1, va_of(dst, 8), dmr->rkey()), 0);
  }
  auto wcs = p.wait(p.a, 40);
  ASSERT_EQ(wcs.size(), 40u);
  for (std::size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].status, IBV_WC_SUCCESS) << describe(wcs[i]);
    EXPECT_EQ(wcs[i].wr_id, i);
  }
  std::uint64_t last = 0;
  std::memcpy(&last, dst.data() + 8, 8);
  EXPECT_EQ(last, 0x1111111100000000ull + 39);
  EXPECT_GT(p.net.stats("a").duplicated, 0u);
  EXPECT_GT(p.net.stats("a").lost, 0u);
}

TEST(Flush, GlobalVisibilityOfARangeAfterAWriteCompletesAsFlush) {
  PlacementPair p;
  std::vector<std::byte> src(4096, std::byte{9}), dst(8192);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw | rdma::kAccessFlushGlobal);
  ibv_sge s = sge(src.data(), 4096, smr);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, 1, &s, 1, va_of(dst, 1024), dmr->rkey(), 0), 0);
  ASSERT_EQ(p.flush(2, dmr, va_of(dst, 1024), 4096, rdma::kFlushGlobal, rdma::kFlushRange), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  EXPECT_EQ(wcs[0].opcode, rdma::kWcFlush);
  EXPECT_EQ(wcs[0].wr_id, 2u);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 1024));

  // BTH | FETH | RETH, no payload; FETH placement in bits 3..0, selectivity in 5..4.
  Packet fl;
  for (const Packet& q : p.frames_from("a"))
    if (q.opcode() == 0x1C) fl = q;
  ASSERT_EQ(fl.opcode(), 0x1C);
  EXPECT_EQ(fl.payload_offset - fl.bth_offset, 12u + 4u + 16u);
  EXPECT_EQ(fl.ext.feth.bits.get(), 0x01u);
  EXPECT_EQ(feth_placement(fl.ext.feth), rdma::kFlushGlobal);
  EXPECT_EQ(feth_selectivity(fl.ext.feth), rdma::kFlushRange);
  EXPECT_EQ(fl.ext.reth.va.get(), va_of(dst, 1024));
  EXPECT_EQ(fl.ext.reth.dma_length.get(), 4096u);
  EXPECT_EQ(fl.payload_length, 0u);
  bool answered = false;
  for (const Packet& q : p.frames_from("b"))
    answered |= q.opcode() == raw(Opcode::RcReadResponseOnly) && q.psn() == fl.psn() && q.payload_length == 0;
  EXPECT_TRUE(answered);
}

TEST(Flush, OfAWholeRegionIgnoresTheVaAndLengthAndSetsSelectivityOne) {
  PlacementPair p;
  std::vector<std::byte> dst(4096);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw | rdma::kAccessFlushGlobal);
  ASSERT_EQ(p.flush(1, dmr, 0xDEAD0000, 1u << 30, rdma::kFlushGlobal, rdma::kFlushMr), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  Packet fl;
  for (const Packet& q : p.frames_from("a"))
    if (q.opcode() == 0x1C) fl = q;
  EXPECT_EQ(fl.ext.feth.bits.get(), 0x11u);
}

TEST(Flush, WithoutTheQpsFlushAccessIsAnInvalidRequest) {
  PlacementPair p(kRw);
  std::vector<std::byte> dst(4096);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw | rdma::kAccessFlushGlobal);
  ASSERT_EQ(p.flush(1, dmr, va_of(dst), 64, rdma::kFlushGlobal, rdma::kFlushRange), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR) << describe(wcs[0]);
  EXPECT_EQ(p.b.qp->state(), rdma::QpState::Err);
}

TEST(Flush, OfARegionWithoutFlushAccessOrPastItsEndIsARemoteAccessError) {
  for (int variant = 0; variant < 2; ++variant) {
    PlacementPair p;
    std::vector<std::byte> dst(4096);
    auto* dmr = reg(*p.b.engine, p.b.pd, dst, variant == 0 ? kRw : kRw | rdma::kAccessFlushGlobal);
    ASSERT_EQ(p.flush(1, dmr, va_of(dst, 4000), variant == 0 ? 64 : 200, rdma::kFlushGlobal, rdma::kFlushRange), 0);
    auto wcs = p.wait(p.a, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << "variant " << variant << ": " << describe(wcs[0]);
  }
}

TEST(Flush, PersistenceIsNeverGrantedOrdinaryMemory) {
  PlacementPair p(kRw | rdma::kAccessFlushGlobal | rdma::kAccessFlushPersistent);
  std::vector<std::byte> dst(4096);
  auto refused = p.b.engine->memory().register_region(p.b.pd, dst.data(), dst.size(), kRw | rdma::kAccessFlushPersistent);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not persistent memory"), std::string::npos) << refused.error().message;
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw | rdma::kAccessFlushGlobal);
  ASSERT_EQ(p.flush(1, dmr, va_of(dst), 64, rdma::kFlushPersistent, rdma::kFlushRange), 0);
  auto wcs = p.wait(p.a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << describe(wcs[0]);
}

TEST(Flush, PostSendRefusesUnknownPlacementSelectivityOrAScatterList) {
  PlacementPair p;
  std::vector<std::byte> dst(64);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw | rdma::kAccessFlushGlobal);
  EXPECT_EQ(p.flush(1, dmr, va_of(dst), 8, 0, rdma::kFlushRange), EINVAL);
  EXPECT_EQ(p.flush(2, dmr, va_of(dst), 8, 0x4, rdma::kFlushRange), EINVAL);
  EXPECT_EQ(p.flush(3, dmr, va_of(dst), 8, rdma::kFlushGlobal, 2), EINVAL);
  ibv_send_wr wr = rdma::flush_wr(4, dmr->rkey(), va_of(dst), 8, rdma::kFlushGlobal, rdma::kFlushRange);
  ibv_sge s = sge(dst.data(), 8, dmr);
  wr.sg_list = &s;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(p.a.engine->post_send(p.a.qp, &wr, &bad), EINVAL);
}

TEST(Flush, FethLayoutMatchesTheSpec) {
  const Feth f = make_feth(rdma::kFlushGlobal | rdma::kFlushPersistent, rdma::kFlushMr);
  const auto* b = reinterpret_cast<const std::uint8_t*>(&f);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(b[2], 0);
  EXPECT_EQ(b[3], 0x13);  // big-endian: selectivity 1 << 4 | placement 3
  EXPECT_EQ(feth_placement(f), 3);
  EXPECT_EQ(feth_selectivity(f), 1);
  EXPECT_EQ(feth_reserved(Feth{Be32::of(0xFFFFFFC0u)}), 0xFFFFFFC0u);
  EXPECT_EQ(opcode_info(Opcode::RcFlush).offset[static_cast<int>(ExtHeader::Feth)], 0);
  EXPECT_EQ(opcode_info(Opcode::RcFlush).offset[static_cast<int>(ExtHeader::Reth)], 4);
  EXPECT_EQ(opcode_info(Opcode::RcFlush).ext_bytes, 20);
  EXPECT_EQ(opcode_info(Opcode::RcAtomicWrite).ext_bytes, 16);
}

}  // namespace
}  // namespace roce::test::placement_test
