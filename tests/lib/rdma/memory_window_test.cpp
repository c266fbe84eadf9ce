// Memory windows type 1 and 2 and local invalidation, engine to engine: bind, remote access
// through the window's key (and only within its range and access), invalidation by the peer's
// SEND_WITH_INVALIDATE and by LOCAL_INV, and the error completions for access through a key
// that no longer works (the requester sees IBV_WC_REM_ACCESS_ERR) or for a bind or invalidate
// that cannot be done (IBV_WC_MW_BIND_ERR, IBV_WC_LOC_QP_OP_ERR).
#include <gtest/gtest.h>

#include "lib/rdma/memory_window.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"
#include "tests/support/write_stream.hpp"

namespace roce::test::memory_window_test {
namespace {

constexpr int kRegion = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;

struct WindowPair {
  SimNetwork net{3};
  Endpoint a, b;
  std::vector<std::byte> src = std::vector<std::byte>(4096, std::byte{0x5A});
  std::vector<std::byte> mem = std::vector<std::byte>(8192, std::byte{0});
  const rdma::MemoryRegion* smr = nullptr;
  const rdma::MemoryRegion* region = nullptr;
  ibv_mr region_handle{};
  WindowPair() {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    net.connect("a", "b", {}, {});
    QpOptions o;
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
    connect_pair(a, b, o);
    smr = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
    region = reg(*b.engine, b.pd, mem, kRegion);
    region_handle.lkey = region->lkey();
    region_handle.rkey = region->rkey();
  }
  std::vector<ibv_wc> wait(Endpoint& ep, std::size_t n) { return wait_completions(net, ep, n); }
  std::uint64_t at(std::size_t off) const { return reinterpret_cast<std::uint64_t>(mem.data() + off); }
  ibv_mw_bind_info info(std::size_t off, std::uint64_t len, int access) {
    ibv_mw_bind_info i{};
    i.mr = &region_handle;
    i.addr = at(off);
    i.length = len;
    i.mw_access_flags = static_cast<unsigned>(access);
    return i;
  }
  // b binds a type 2 window with `key` through its QP.
  int bind2(rdma::MemoryWindow* mw, std::uint32_t key, std::size_t off, std::uint64_t len, int access, std::uint64_t wr_id = 90) {
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = &mw->base;
    wr.bind_mw.rkey = key;
    wr.bind_mw.bind_info = info(off, len, access);
    ibv_send_wr* bad = nullptr;
    return b.engine->post_send(b.qp, &wr, &bad);
  }
  ibv_wc write(std::uint64_t va, std::uint32_t rkey, std::uint32_t len = 256) {
    ibv_sge s = sge(src.data(), len, smr);
    EXPECT_EQ(post(a, IBV_WR_RDMA_WRITE, 1, &s, 1, va, rkey), 0);
    auto wcs = wait(a, 1);
    return wcs.empty() ? ibv_wc{} : wcs[0];
  }
};

TEST(MemoryWindow, AnUnboundWindowsKeyGrantsNothing) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok()) << mw.error().message;
  const std::uint32_t unbound_key = (*mw)->base.rkey;
  // Unbound: the key grants nothing.
  ibv_wc wc = p.write(p.at(1024), unbound_key);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << describe(wc);
}

TEST(MemoryWindow, Type1WindowWritesLandThroughItsKeyAndTheRegionKeyStillWorks) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok());
  ibv_mw_bind bind{};
  bind.wr_id = 7;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info = p.info(1024, 2048, IBV_ACCESS_REMOTE_WRITE);
  const std::uint32_t before = (*mw)->base.rkey;
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  EXPECT_EQ((*mw)->base.rkey, rdma::next_window_key(before));
  auto bwc = p.wait(p.b, 1);
  ASSERT_EQ(bwc.size(), 1u);
  EXPECT_EQ(bwc[0].status, IBV_WC_SUCCESS) << describe(bwc[0]);
  EXPECT_EQ(bwc[0].opcode, IBV_WC_BIND_MW);
  EXPECT_EQ(bwc[0].wr_id, 7u);

  ibv_wc wc = p.write(p.at(1024 + 100), (*mw)->base.rkey);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
  EXPECT_EQ(p.mem[1124], std::byte{0x5A});
  EXPECT_EQ(p.mem[1123], std::byte{0});
}

TEST(MemoryWindow, AccessOutsideTheWindowOrBeyondItsRightsIsARemoteAccessError) {
  for (int variant = 0; variant < 3; ++variant) {
    WindowPair p;
    auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
    ASSERT_TRUE(mw.ok());
    ibv_mw_bind bind{};
    bind.bind_info = p.info(1024, 2048, variant == 2 ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
    // Past the window's end, before its start (inside the region both times), or a WRITE
    // through a read-only window.
    const std::uint64_t va = variant == 0 ? p.at(1024 + 2048 - 100) : variant == 1 ? p.at(900) : p.at(1024);
    ibv_wc wc = p.write(va, (*mw)->base.rkey);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << "variant " << variant << ": " << describe(wc);
    EXPECT_TRUE(std::all_of(p.mem.begin(), p.mem.end(), [](std::byte x) { return x == std::byte{0}; }));
  }
}

TEST(MemoryWindow, Type1RebindRetiresTheOldKeyAndCannotBeInvalidated) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok());
  ibv_mw_bind bind{};
  bind.bind_info = p.info(0, 4096, IBV_ACCESS_REMOTE_WRITE);
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  const std::uint32_t first = (*mw)->base.rkey;
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  EXPECT_NE((*mw)->base.rkey, first);
  EXPECT_EQ(p.write(p.at(0), (*mw)->base.rkey).status, IBV_WC_SUCCESS);
  // A type 1 window cannot be invalidated: LOCAL_INV fails with IBV_WC_LOC_QP_OP_ERR.
  ibv_send_wr wr{};
  wr.wr_id = 33;
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.invalidate_rkey = (*mw)->base.rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.b.engine->post_send(p.b.qp, &wr, &bad), 0);
  auto wcs = p.wait(p.b, 1);
  ASSERT_FALSE(wcs.empty());
  EXPECT_EQ(wcs.back().wr_id, 33u);
  EXPECT_EQ(wcs.back().status, IBV_WC_LOC_QP_OP_ERR) << describe(wcs.back());
  EXPECT_EQ(p.b.qp->state(), rdma::QpState::Err);
}

// The old key, from a first test step, after the window was rebound.
TEST(MemoryWindow, Type1OldKeyAfterRebindIsARemoteAccessError) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok());
  ibv_mw_bind bind{};
  bind.bind_info = p.info(0, 4096, IBV_ACCESS_REMOTE_WRITE);
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  const std::uint32_t first = (*mw)->base.rkey;
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  p.net.run_idle(p.net.now() + kMilli);
  EXPECT_EQ(p.write(p.at(0), first).status, IBV_WC_REM_ACCESS_ERR);
}

TEST(MemoryWindow, Type2BoundThroughTheQpServesItAndSendWithInvalidateEndsIt) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(mw.ok());
  const std::uint32_t key = rdma::next_window_key((*mw)->base.rkey);
  ASSERT_EQ(p.bind2(*mw, key, 0, 4096, IBV_ACCESS_REMOTE_WRITE), 0);
  auto bwc = p.wait(p.b, 1);
  ASSERT_EQ(bwc.size(), 1u);
  EXPECT_EQ(bwc[0].status, IBV_WC_SUCCESS) << describe(bwc[0]);
  EXPECT_EQ(bwc[0].opcode, IBV_WC_BIND_MW);
  EXPECT_EQ(p.write(p.at(8), key).status, IBV_WC_SUCCESS);
  EXPECT_EQ(p.mem[8], std::byte{0x5A});

  // A type 2 window bound to a QP cannot be bound again until it is invalidated.
  ASSERT_EQ(p.bind2(*mw, rdma::next_window_key(key), 0, 4096, IBV_ACCESS_REMOTE_WRITE, 91), 0);
  auto again = p.wait(p.b, 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].status, IBV_WC_MW_BIND_ERR) << describe(again[0]);
}

TEST(MemoryWindow, Type2SendWithInvalidateThenAccessIsARemoteAccessError) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(mw.ok());
  const std::uint32_t key = rdma::next_window_key((*mw)->base.rkey);
  ASSERT_EQ(p.bind2(*mw, key, 0, 4096, IBV_ACCESS_REMOTE_WRITE), 0);
  ASSERT_EQ(p.wait(p.b, 1).size(), 1u);
  std::vector<std::byte> rbuf(64);
  auto* rmr = reg(*p.b.engine, p.b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rs = sge(rbuf.data(), 64, rmr);
  ASSERT_EQ(post_recv(p.b, 50, &rs, 1), 0);
  ibv_sge s = sge(p.src.data(), 16, p.smr);
  ibv_send_wr wr{};
  wr.wr_id = 2;
  wr.opcode = IBV_WR_SEND_WITH_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.invalidate_rkey = key;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.a.engine->post_send(p.a.qp, &wr, &bad), 0);
  auto swc = p.wait(p.a, 1);
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, IBV_WC_SUCCESS) << describe(swc[0]);
  auto rwc = p.wait(p.b, 1);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, IBV_WC_SUCCESS);
  EXPECT_TRUE(rwc[0].wc_flags & IBV_WC_WITH_INV);
  EXPECT_EQ(rwc[0].invalidated_rkey, key);
  EXPECT_EQ(p.write(p.at(8), key).status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(p.mem[8], std::byte{0});
}

TEST(MemoryWindow, Type2LocalInvalidateThenRebindWithANewKey) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(mw.ok());
  const std::uint32_t key = rdma::next_window_key((*mw)->base.rkey);
  ASSERT_EQ(p.bind2(*mw, key, 0, 4096, IBV_ACCESS_REMOTE_WRITE), 0);
  ibv_send_wr inv{};
  inv.wr_id = 60;
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.invalidate_rkey = key;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.b.engine->post_send(p.b.qp, &inv, &bad), 0);
  auto wcs = p.wait(p.b, 2);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[1].opcode, IBV_WC_LOCAL_INV);
  EXPECT_EQ(wcs[1].status, IBV_WC_SUCCESS) << describe(wcs[1]);
  EXPECT_EQ(p.write(p.at(0), key).status, IBV_WC_REM_ACCESS_ERR);
}

TEST(MemoryWindow, Type2RebindAfterLocalInvalidateServesTheNewKeyOnly) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(mw.ok());
  const std::uint32_t key = rdma::next_window_key((*mw)->base.rkey);
  ASSERT_EQ(p.bind2(*mw, key, 0, 4096, IBV_ACCESS_REMOTE_WRITE), 0);
  ibv_send_wr inv{};
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.invalidate_rkey = key;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.b.engine->post_send(p.b.qp, &inv, &bad), 0);
  const std::uint32_t key2 = rdma::next_window_key(key);
  ASSERT_EQ(p.bind2(*mw, key2, 4096, 4096, IBV_ACCESS_REMOTE_WRITE), 0);
  ASSERT_EQ(p.wait(p.b, 2).size(), 2u);
  EXPECT_EQ(p.write(p.at(4096 + 4), key2).status, IBV_WC_SUCCESS);
  EXPECT_EQ(p.mem[4100], std::byte{0x5A});
}

TEST(MemoryWindow, BindOfARegionWithoutMwBindAccessFailsWithBindError) {
  WindowPair p;
  std::vector<std::byte> plain(4096);
  auto* pmr = reg(*p.b.engine, p.b.pd, plain, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok());
  ibv_mr h{};
  h.lkey = pmr->lkey();
  ibv_mw_bind bind{};
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info.mr = &h;
  bind.bind_info.addr = reinterpret_cast<std::uint64_t>(plain.data());
  bind.bind_info.length = 4096;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  auto wcs = p.wait(p.b, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_MW_BIND_ERR) << describe(wcs[0]);
  EXPECT_EQ(p.b.qp->state(), rdma::QpState::Err);
}

TEST(MemoryWindow, AWindowDiesWithItsRegion) {
  WindowPair p;
  auto mw = p.b.engine->alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_TRUE(mw.ok());
  ibv_mw_bind bind{};
  bind.bind_info = p.info(0, 4096, IBV_ACCESS_REMOTE_WRITE);
  ASSERT_EQ(p.b.engine->bind_mw(p.b.qp, *mw, bind), 0);
  p.net.run_idle(p.net.now() + kMilli);
  ASSERT_TRUE(p.b.engine->memory().deregister(p.region->lkey()).ok());
  EXPECT_EQ(p.write(p.at(0), (*mw)->base.rkey).status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(p.b.engine->dealloc_mw(*mw).ok());
}

TEST(LocalInvalidate, OfARegionStopsItsRemoteKeyAndAStaleOneFails) {
  WindowPair p;
  ibv_send_wr inv{};
  inv.wr_id = 61;
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.invalidate_rkey = p.region->rkey();
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.b.engine->post_send(p.b.qp, &inv, &bad), 0);
  auto wcs = p.wait(p.b, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_LOCAL_INV);
  EXPECT_EQ(p.write(p.at(0), p.region->rkey()).status, IBV_WC_REM_ACCESS_ERR);
  // Invalidating it again: the key names nothing valid.
  inv.wr_id = 62;
  ASSERT_EQ(p.b.engine->post_send(p.b.qp, &inv, &bad), 0);
  auto again = p.wait(p.b, 1);
  ASSERT_FALSE(again.empty());
  EXPECT_NE(again.back().status, IBV_WC_SUCCESS) << describe(again.back());
}

TEST(LocalInvalidate, PostSendRefusesLocalOperationsWithAScatterList) {
  WindowPair p;
  ibv_sge s = sge(p.src.data(), 8, p.smr);
  ibv_send_wr inv{};
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.sg_list = &s;
  inv.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(p.a.engine->post_send(p.a.qp, &inv, &bad), EINVAL);
  ibv_send_wr bind{};
  bind.opcode = IBV_WR_BIND_MW;  // no window
  EXPECT_EQ(p.a.engine->post_send(p.a.qp, &bind, &bad), EINVAL);
}

}  // namespace
}  // namespace roce::test::memory_window_test

namespace roce::test::memory_window_test {
namespace {

TEST(MemoryWindow, WindowsLeftAllocatedGiveTheirSlotsBackWithTheirEngine) {
  rdma::MrTable table(8);
  {
    rdma::Engine e(rdma::EngineConfig{}, table);
    const rdma::PdHandle pd = e.alloc_pd();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(e.alloc_mw(pd, i % 2 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2).ok());
    auto last = e.alloc_mw(pd, IBV_MW_TYPE_2);
    ASSERT_TRUE(last.ok());
    EXPECT_TRUE(e.dealloc_mw(*last).ok());
    EXPECT_EQ(table.size(), 3u);
    EXPECT_FALSE(e.alloc_mw(pd, static_cast<ibv_mw_type>(3)).ok());
  }
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
}  // namespace roce::test::memory_window_test
