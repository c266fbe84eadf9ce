#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <numeric>

#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::rc_basic_test {
namespace {

constexpr int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct Pair {
  SimNetwork net{1};
  Endpoint a, b;
  QpOptions opts;
  explicit Pair(QpOptions o = {}, LinkFaults f = {}) : opts(o) {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    net.connect("a", "b", f, f);
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
    connect_pair(a, b, o);
  }
  std::vector<ibv_wc> wait(Endpoint& ep, std::size_t n, Nanos limit = 10 * kSecond) {
    std::vector<ibv_wc> got;
    net.run_until(
        [&] {
          auto more = drain(ep);
          got.insert(got.end(), more.begin(), more.end());
          return got.size() >= n;
        },
        net.now() + limit);
    return got;
  }
};

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 7 + (i >> 8)) & 0xFF);
  return v;
}

TEST(RcBasic, WriteOfEverySizeLandsByteExact) {
  Pair p;
  auto src = pattern(300000, 1);
  std::vector<std::byte> dst(300000);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  const std::uint32_t sizes[] = {0, 1, 3, 4, 1023, 1024, 1025, 4096, 65537, 300000};
  for (std::uint32_t len : sizes) {
    std::fill(dst.begin(), dst.end(), std::byte{0});
    ibv_sge s = sge(src.data(), len, smr);
    ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, len, &s, 1, reinterpret_cast<std::uint64_t>(dst.data()), dmr->rkey()), 0);
    auto wcs = p.wait(p.a, 1);
    ASSERT_EQ(wcs.size(), 1u) << "len " << len;
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, dst.begin())) << "len " << len;
    EXPECT_TRUE(std::all_of(dst.begin() + len, dst.end(), [](std::byte b) { return b == std::byte{0}; }));
  }
}

TEST(RcBasic, EachSideReceivesExactlyThePacketsTheOtherSent) {
  Pair p;
  auto src = pattern(100000, 3);
  std::vector<std::byte> dst(100000);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dmr = reg(*p.b.engine, p.b.pd, dst, kRw);
  ibv_sge s = sge(src.data(), 100000, smr);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, 1, &s, 1, reinterpret_cast<std::uint64_t>(dst.data()), dmr->rkey()), 0);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_READ, 2, &s, 1, reinterpret_cast<std::uint64_t>(dst.data()), dmr->rkey()), 0);
  ASSERT_EQ(p.wait(p.a, 2).size(), 2u);
  const rdma::Counters& a = p.a.qp->counters();
  const rdma::Counters& b = p.b.qp->counters();
  EXPECT_EQ(a.get(rdma::Counter::SentPkts), 98u + 1u);  // 98 WRITE packets at 1 KiB, one READ request
  EXPECT_EQ(b.get(rdma::Counter::RcvdPkts), a.get(rdma::Counter::SentPkts));
  EXPECT_EQ(a.get(rdma::Counter::RcvdPkts), b.get(rdma::Counter::SentPkts));
  EXPECT_GE(a.get(rdma::Counter::RcvdPkts), 98u);  // the READ responses, plus the ACKs
}

TEST(RcBasic, ReadReturnsRemoteBytes) {
  Pair p;
  auto remote = pattern(200000, 2);
  std::vector<std::byte> local(200000);
  auto* rmr = reg(*p.b.engine, p.b.pd, remote, kRw);
  auto* lmr = reg(*p.a.engine, p.a.pd, local, IBV_ACCESS_LOCAL_WRITE);
  for (std::uint32_t len : {0u, 1u, 1024u, 1500u, 4096u, 200000u}) {
    std::fill(local.begin(), local.end(), std::byte{0});
    ibv_sge s = sge(local.data(), len, lmr);
    ASSERT_EQ(post(p.a, IBV_WR_RDMA_READ, len, &s, 1, reinterpret_cast<std::uint64_t>(remote.data()), rmr->rkey()), 0);
    auto wcs = p.wait(p.a, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(wcs[0].byte_len, len);
    EXPECT_TRUE(std::equal(remote.begin(), remote.begin() + len, local.begin())) << "len " << len;
  }
}

TEST(RcBasic, SendWithImmediateScattersIntoPostedReceive) {
  Pair p;
  auto src = pattern(5000, 3);
  std::vector<std::byte> r1(3000), r2(3000);
  auto* smr = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* rmr1 = reg(*p.b.engine, p.b.pd, r1, IBV_ACCESS_LOCAL_WRITE);
  auto* rmr2 = reg(*p.b.engine, p.b.pd, r2, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rs[2] = {sge(r1.data(), 3000, rmr1), sge(r2.data(), 3000, rmr2)};
  ASSERT_EQ(post_recv(p.b, 77, rs, 2), 0);
  ibv_sge s = sge(src.data(), 5000, smr);
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(0xC0FFEE);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.a.engine->post_send(p.a.qp, &wr, &bad), 0);
  auto sw = p.wait(p.a, 1);
  auto rw = p.wait(p.b, 1);
  ASSERT_EQ(sw.size(), 1u);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(sw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].wr_id, 77u);
  EXPECT_EQ(rw[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(rw[0].byte_len, 5000u);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(rw[0].imm_data), 0xC0FFEEu);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 3000, r1.begin()));
  EXPECT_TRUE(std::equal(src.begin() + 3000, src.end(), r2.begin()));
}

TEST(RcBasic, AtomicsReturnTheOriginalValue) {
  Pair p;
  std::vector<std::byte> remote(64);
  std::vector<std::byte> local(16);
  auto* rmr = reg(*p.b.engine, p.b.pd, remote, kRw);
  auto* lmr = reg(*p.a.engine, p.a.pd, local, IBV_ACCESS_LOCAL_WRITE);
  auto* word = reinterpret_cast<std::uint64_t*>(remote.data() + 8);
  *word = 100;
  ibv_sge s = sge(local.data(), 8, lmr);
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = reinterpret_cast<std::uint64_t>(word);
  wr.wr.atomic.rkey = rmr->rkey();
  wr.wr.atomic.compare_add = 5;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.a.engine->post_send(p.a.qp, &wr, &bad), 0);
  auto w1 = p.wait(p.a, 1);
  ASSERT_EQ(w1.size(), 1u);
  EXPECT_EQ(w1[0].status, IBV_WC_SUCCESS) << describe(w1[0]);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(local.data()), 100u);
  EXPECT_EQ(*word, 105u);

  wr.wr_id = 2;
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.compare_add = 105;
  wr.wr.atomic.swap = 7;
  ASSERT_EQ(p.a.engine->post_send(p.a.qp, &wr, &bad), 0);
  auto w2 = p.wait(p.a, 1);
  ASSERT_EQ(w2.size(), 1u);
  EXPECT_EQ(w2[0].opcode, IBV_WC_COMP_SWAP);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(local.data()), 105u);
  EXPECT_EQ(*word, 7u);
}

}  // namespace
}  // namespace roce::test::rc_basic_test
