// Bad work requests: a bad lkey or an SGE outside its region completes with the verbs error
// status and moves the QP to the error state, the WRs behind it flush; a bad rkey fails at the
// peer and comes back as a remote access error; malformed WRs are refused at post time.
#include "tests/verbs/loopback.hpp"

namespace verbs_test {
namespace errors_test {

TEST_F(PairTest, BadLkeyCompletesWithLocalProtectionErrorAndFailsTheQp) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src(4096), dst(4096);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(src.data()), 64, ms->lkey ^ 0x5500};
  ibv_send_wr w[2]{};
  ibv_send_wr* bad = nullptr;
  for (int i = 0; i < 2; ++i) {
    w[i].wr_id = 10 + i;
    w[i].sg_list = &s;
    w[i].num_sge = 1;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(dst.data());
    w[i].wr.rdma.rkey = md->rkey;
  }
  w[0].next = &w[1];
  ASSERT_EQ(ibv_post_send(a, &w[0], &bad), 0);  // accepted: the key is checked as the WR runs
  ibv_wc wc[2]{};
  ASSERT_EQ(poll_n(cq_a, wc, 2), 2);
  EXPECT_EQ(wc[0].wr_id, 10u);
  EXPECT_EQ(wc[0].status, IBV_WC_LOC_PROT_ERR) << ibv_wc_status_str(wc[0].status);
  EXPECT_EQ(wc[1].wr_id, 11u);
  EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
  // Posting to a QP in error is allowed and flushes.
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, ms, 0, 8, reinterpret_cast<std::uintptr_t>(dst.data()), md->rkey, 12), 0);
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(PairTest, SgeOutsideItsRegionIsALocalProtectionError) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src(4096), dst(4096);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, ms, 4000, 200, reinterpret_cast<std::uintptr_t>(dst.data()), md->rkey), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
}

TEST_F(PairTest, ReceiveIntoAReadOnlyRegionIsALocalProtectionError) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src(256), dst(256);
  ibv_mr* ms = reg(src);
  ibv_mr* ro = reg(dst, IBV_ACCESS_REMOTE_READ);  // no local write
  ASSERT_EQ(post_recv(b, ro, 0, 256, 3), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, ms, 0, 32), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_b, &wc, 1), 1);
  EXPECT_EQ(wc.wr_id, 3u);
  EXPECT_NE(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(state_of(b), IBV_QPS_ERR);
}

TEST_F(PairTest, BadRkeyIsARemoteAccessError) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src(4096), dst(4096);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, ms, 0, 64, reinterpret_cast<std::uintptr_t>(dst.data()), md->rkey + 0x100), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
  // Out of bounds of a good key too.
  ibv_cq* cq2 = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* c = make_qp(pd, cq2, IBV_QPT_RC);
  ASSERT_EQ(connect(c, IBV_QPT_RC, gid, b->qp_num), 0);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(b, &at, IBV_QP_STATE), 0);
  ASSERT_EQ(connect(b, IBV_QPT_RC, gid, c->qp_num), 0);
  ASSERT_EQ(post(c, IBV_WR_RDMA_READ, ms, 0, 64, reinterpret_cast<std::uintptr_t>(dst.data()) + 4090, md->rkey), 0);
  ASSERT_EQ(poll_n(cq2, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
}

TEST_F(PairTest, MalformedWorkRequestsAreRefusedAtPost) {
  make_pair(IBV_QPT_RC, QpCaps{4, 4, 1, 16});
  std::vector<std::uint8_t> buf(4096);
  ibv_mr* mr = reg(buf);
  ibv_sge s[2] = {{reinterpret_cast<std::uintptr_t>(buf.data()), 8, mr->lkey},
                  {reinterpret_cast<std::uintptr_t>(buf.data()) + 8, 8, mr->lkey}};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.sg_list = s;
  w.num_sge = 2;  // above max_send_sge
  w.opcode = IBV_WR_SEND;
  EXPECT_EQ(ibv_post_send(a, &w, &bad), EINVAL);
  EXPECT_EQ(bad, &w);
  w.num_sge = 1;
  s[0].length = 100;
  w.send_flags = IBV_SEND_INLINE;  // 100 bytes above max_inline_data 16
  EXPECT_EQ(ibv_post_send(a, &w, &bad), EINVAL);
  w.send_flags = 0;
  s[0].length = 4;
  w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;  // atomics move 8 bytes
  EXPECT_EQ(ibv_post_send(a, &w, &bad), EINVAL);
  // A full send queue: ENOMEM, the first WR that did not fit in *bad.
  s[0].length = 8;
  w.opcode = IBV_WR_SEND;
  ibv_send_wr many[6]{};
  for (int i = 0; i < 6; ++i) {
    many[i] = w;
    many[i].next = i < 5 ? &many[i + 1] : nullptr;
  }
  std::vector<std::uint8_t> rbuf(64);
  EXPECT_EQ(ibv_post_send(a, many, &bad), ENOMEM);
  EXPECT_EQ(bad, &many[4]);
  // UC and UD have no READ or atomics.
  ibv_qp* uc = make_qp(pd, cq_a, IBV_QPT_UC);
  ASSERT_EQ(connect(uc, IBV_QPT_UC, gid, b->qp_num), 0);
  w.opcode = IBV_WR_RDMA_READ;
  EXPECT_EQ(ibv_post_send(uc, &w, &bad), EINVAL);
}

}  // namespace errors_test
}  // namespace verbs_test
