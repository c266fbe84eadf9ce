// Helpers of the verbs device tests: the device a program run under roce-run sees, and pairs of
// QPs on it that talk to each other through its own port (net_ring0 sends what it receives).
// Everything goes through the plain libibverbs API, as an unmodified program's calls do.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace verbs_test {

// The device (opened once per test) and its protection domain.
class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 1) << "run under roce-run: no device";
    ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    ASSERT_NE(ctx, nullptr);
    pd = ibv_alloc_pd(ctx);
    ASSERT_NE(pd, nullptr);
    ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
  }
  void TearDown() override {
    // ibv_close_device frees whatever a test left behind.
    if (ctx) {
      EXPECT_EQ(ibv_close_device(ctx), 0);
    }
  }

  ibv_mr* reg(std::vector<std::uint8_t>& buf, int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC) {
    return ibv_reg_mr(pd, buf.data(), buf.size(), access);
  }

  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_gid gid{};
};

struct QpCaps {
  std::uint32_t send_wr = 64, recv_wr = 64, sge = 4, inline_data = 64;
};

inline ibv_qp* make_qp(ibv_pd* pd, ibv_cq* cq, ibv_qp_type type, QpCaps c = {}) {
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = type;
  a.cap = {c.send_wr, c.recv_wr, c.sge, c.sge, c.inline_data};
  return ibv_create_qp(pd, &a);
}

inline int to_init(ibv_qp* qp, ibv_qp_type type) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (type == IBV_QPT_UD) {
    a.qkey = 0x11111111;
    mask |= IBV_QP_QKEY;
  } else {
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  return ibv_modify_qp(qp, &a, mask);
}

// RESET -> INIT -> RTR -> RTS towards `peer_qpn` at `gid` (RC/UC), or just to RTS (UD).
inline int connect(ibv_qp* qp, ibv_qp_type type, const ibv_gid& gid, std::uint32_t peer_qpn, ibv_mtu mtu = IBV_MTU_1024) {
  if (int rc = to_init(qp, type); rc) return rc;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  int mask = IBV_QP_STATE;
  if (type != IBV_QPT_UD) {
    a.path_mtu = mtu;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = 100;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (type == IBV_QPT_RC) {
      a.max_dest_rd_atomic = 4;
      a.min_rnr_timer = 1;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  if (int rc = ibv_modify_qp(qp, &a, mask); rc) return rc;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 100;
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (type == IBV_QPT_RC) {
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return ibv_modify_qp(qp, &a, mask);
}

// Polls until `n` completions arrived or 5 s passed; returns how many arrived.
inline int poll_n(ibv_cq* cq, ibv_wc* wc, int n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int got = 0;
  while (got < n && std::chrono::steady_clock::now() < deadline) {
    const int r = ibv_poll_cq(cq, n - got, wc + got);
    if (r < 0) return r;
    got += r;
  }
  return got;
}

inline ibv_qp_state state_of(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr i{};
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i) != 0) return IBV_QPS_UNKNOWN;
  return a.qp_state;
}

// Two connected QPs of one type, each with its own CQ.
class PairTest : public DeviceTest {
 protected:
  void make_pair(ibv_qp_type type, QpCaps caps = {}) {
    cq_a = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
    cq_b = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
    ASSERT_NE(cq_a, nullptr);
    ASSERT_NE(cq_b, nullptr);
    a = make_qp(pd, cq_a, type, caps);
    b = make_qp(pd, cq_b, type, caps);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(connect(a, type, gid, b->qp_num), 0);
    ASSERT_EQ(connect(b, type, gid, a->qp_num), 0);
  }
  int post(ibv_qp* qp, ibv_wr_opcode op, ibv_mr* mr, std::size_t off, std::uint32_t len, std::uint64_t remote = 0,
           std::uint32_t rkey = 0, std::uint64_t wr_id = 1) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(mr->addr) + off, len, mr->lkey};
    ibv_send_wr w{};
    ibv_send_wr* bad = nullptr;
    w.wr_id = wr_id;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = op;
    w.send_flags = IBV_SEND_SIGNALED;
    w.wr.rdma.remote_addr = remote;
    w.wr.rdma.rkey = rkey;
    return ibv_post_send(qp, &w, &bad);
  }
  int post_recv(ibv_qp* qp, ibv_mr* mr, std::size_t off, std::uint32_t len, std::uint64_t wr_id = 2) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(mr->addr) + off, len, mr->lkey};
    ibv_recv_wr w{};
    ibv_recv_wr* bad = nullptr;
    w.wr_id = wr_id;
    w.sg_list = &s;
    w.num_sge = 1;
    return ibv_post_recv(qp, &w, &bad);
  }

  ibv_cq* cq_a = nullptr;
  ibv_cq* cq_b = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
};

}  // namespace verbs_test
