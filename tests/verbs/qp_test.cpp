// Creating, moving and querying QPs: the QP types, capabilities and transitions a program may
// ask for, and the errno each refusal carries.
#include "tests/verbs/loopback.hpp"

namespace verbs_test {
namespace qp_test {

class QpTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
  }
  ibv_cq* cq = nullptr;
};

TEST_F(QpTest, TypesRcUcUdOnly) {
  for (ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
    ibv_qp* qp = make_qp(pd, cq, t);
    ASSERT_NE(qp, nullptr) << t;
    EXPECT_EQ(qp->qp_type, t);
    EXPECT_EQ(qp->state, IBV_QPS_RESET);
    EXPECT_GT(qp->qp_num, 1u);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
  }
  for (ibv_qp_type t : {IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, IBV_QPT_DRIVER}) {
    errno = 0;
    EXPECT_EQ(make_qp(pd, cq, t), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP) << t;
  }
  errno = 0;
  EXPECT_EQ(make_qp(pd, cq, static_cast<ibv_qp_type>(77)), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(QpTest, CapsBeyondTheDeviceLimits) {
  ibv_device_attr d{};
  ASSERT_EQ(ibv_query_device(ctx, &d), 0);
  QpCaps c;
  c.send_wr = static_cast<std::uint32_t>(d.max_qp_wr) + 1;
  errno = 0;
  EXPECT_EQ(make_qp(pd, cq, IBV_QPT_RC, c), nullptr);
  EXPECT_EQ(errno, EINVAL);
  c = QpCaps{};
  c.sge = static_cast<std::uint32_t>(d.max_sge) + 1;
  errno = 0;
  EXPECT_EQ(make_qp(pd, cq, IBV_QPT_RC, c), nullptr);
  EXPECT_EQ(errno, EINVAL);
  c = QpCaps{};
  c.inline_data = 1u << 20;
  errno = 0;
  EXPECT_EQ(make_qp(pd, cq, IBV_QPT_RC, c), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(QpTest, CapsComeBackAsGranted) {
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {32, 16, 2, 3, 48};
  ibv_qp* qp = ibv_create_qp(pd, &a);
  ASSERT_NE(qp, nullptr);
  EXPECT_GE(a.cap.max_send_wr, 32u);
  EXPECT_GE(a.cap.max_inline_data, 48u);
  ibv_qp_attr q{};
  ibv_qp_init_attr i{};
  ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP, &i), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RESET);
  EXPECT_EQ(i.qp_type, IBV_QPT_RC);
  EXPECT_EQ(i.send_cq, cq);
  EXPECT_EQ(i.cap.max_recv_sge, 3u);
}

TEST_F(QpTest, SharedReceiveQueueIsCreatedQueriedModifiedAndTiedToItsQps) {
  ibv_srq_init_attr s{};
  s.attr.max_wr = 16;
  s.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &s);
  ASSERT_NE(srq, nullptr) << std::strerror(errno);
  EXPECT_EQ(s.attr.max_wr, 16u);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.max_wr, 16u);
  EXPECT_EQ(q.srq_limit, 0u);
  ibv_srq_attr lim{};
  lim.srq_limit = 4;
  EXPECT_EQ(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
  lim.max_wr = 64;
  EXPECT_EQ(ibv_modify_srq(srq, &lim, IBV_SRQ_MAX_WR), EINVAL);  // no resizing
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.srq = srq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {8, 0, 1, 0, 0};
  ibv_qp* qp = ibv_create_qp(pd, &a);
  ASSERT_NE(qp, nullptr) << std::strerror(errno);
  EXPECT_EQ(qp->srq, srq);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi), 0);
  EXPECT_EQ(qi.srq, srq);
  std::vector<char> buf(64);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ibv_sge g{reinterpret_cast<std::uint64_t>(buf.data()), 64, mr->lkey};
  ibv_recv_wr wr{};
  wr.sg_list = &g;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
  EXPECT_EQ(ibv_post_recv(qp, &wr, &bad), EINVAL);  // its receives come from the SRQ
  EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);           // a QP still uses it
  ASSERT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(QpTest, MulticastAndEceAreNotThere) {
  ibv_qp* qp = make_qp(pd, cq, IBV_QPT_UD);
  ASSERT_NE(qp, nullptr);
  ibv_gid mgid{};
  mgid.raw[0] = 0xFF;
  EXPECT_EQ(ibv_attach_mcast(qp, &mgid, 0), EOPNOTSUPP);
  ibv_ece ece{};
  EXPECT_EQ(ibv_query_ece(qp, &ece), EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_qp_to_qp_ex(qp), nullptr);  // made without send_ops_flags
}

TEST_F(QpTest, ExtendedCreate) {
  ibv_qp_init_attr_ex a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {16, 16, 1, 1, 0};
  a.pd = pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
  ibv_qp* qp = ibv_create_qp_ex(ctx, &a);
  ASSERT_NE(qp, nullptr);
  EXPECT_NE(ibv_qp_to_qp_ex(qp), nullptr);
  a.send_ops_flags = IBV_QP_EX_WITH_TSO;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx, &a), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  a.send_ops_flags = IBV_QP_EX_WITH_SEND;
  a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
  a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx, &a), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(QpTest, TransitionsFollowTheIbaTable) {
  ibv_qp* qp = make_qp(pd, cq, IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;  // RESET -> RTS is no transition
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
  a.qp_state = IBV_QPS_INIT;  // INIT without its required attributes
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
  ASSERT_EQ(to_init(qp, IBV_QPT_RC), 0);
  EXPECT_EQ(qp->state, IBV_QPS_INIT);
  EXPECT_EQ(state_of(qp), IBV_QPS_INIT);
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  EXPECT_EQ(state_of(qp), IBV_QPS_ERR);
  a.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  EXPECT_EQ(state_of(qp), IBV_QPS_RESET);
}

TEST_F(QpTest, RtrToAnUnreachablePeerFails) {
  ibv_qp* qp = make_qp(pd, cq, IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  ASSERT_EQ(to_init(qp, IBV_QPT_RC), 0);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = 0x123;
  a.rq_psn = 1;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 0;  // RoCE needs the GRH
  a.ah_attr.port_num = 1;
  const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_EQ(ibv_modify_qp(qp, &a, mask), EINVAL);
  EXPECT_EQ(state_of(qp), IBV_QPS_INIT);
}

TEST_F(QpTest, PostingBeforeRtsIsRefused) {
  std::vector<std::uint8_t> buf(64);
  ibv_mr* mr = reg(buf);
  ibv_qp* qp = make_qp(pd, cq, IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(buf.data()), 8, mr->lkey};
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(qp, &w, &bad), EINVAL);
  EXPECT_EQ(bad, &w);
  ibv_recv_wr r{};
  r.sg_list = &s;
  r.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(qp, &r, &rbad), EINVAL);  // RESET takes no receives
}

}  // namespace qp_test
}  // namespace verbs_test
