// The data path through the op tables: ibv_post_send/recv, ibv_poll_cq, the extended send API
// and the extended CQ, between two QPs of the device over its own port; every byte checked.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <numeric>

#include "tests/verbs/loopback.hpp"
#include "tests/verbs/window_binds.hpp"

namespace verbs_test {
namespace datapath_test {

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7);
  return v;
}

TEST_F(PairTest, RcWriteReadAndAtomics) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src = pattern(20000, 3), dst(20000), back(20000);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ibv_mr* mb = reg(back);
  ASSERT_TRUE(ms && md && mb);
  ibv_wc wc[4]{};
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, ms, 0, 20000, reinterpret_cast<std::uintptr_t>(dst.data()), md->rkey, 7), 0);
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[0].status);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(dst, src);

  ASSERT_EQ(post(b, IBV_WR_RDMA_READ, mb, 0, 20000, reinterpret_cast<std::uintptr_t>(dst.data()), md->rkey, 8), 0);
  ASSERT_EQ(poll_n(cq_b, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc[0].byte_len, 20000u);
  EXPECT_EQ(back, src);

  // Fetch-and-add then compare-and-swap on an 8-byte word of dst.
  std::uint64_t word = 40;
  std::memcpy(dst.data() + 64, &word, 8);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(back.data()), 8, mb->lkey};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.atomic.remote_addr = reinterpret_cast<std::uintptr_t>(dst.data() + 64);
  w.wr.atomic.rkey = md->rkey;
  w.wr.atomic.compare_add = 2;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  std::uint64_t got = 0;
  std::memcpy(&got, back.data(), 8);
  EXPECT_EQ(got, 40u);
  w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  w.wr.atomic.compare_add = 42;
  w.wr.atomic.swap = 1000;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  std::memcpy(&got, dst.data() + 64, 8);
  EXPECT_EQ(got, 1000u);
}

TEST_F(PairTest, RcSendWithImmediateAndInline) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src = pattern(3000, 9), dst(4096);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ASSERT_EQ(post_recv(b, md, 0, 4096, 55), 0);
  ASSERT_EQ(post_recv(b, md, 0, 4096, 56), 0);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(src.data()), 3000, ms->lkey};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND_WITH_IMM;
  w.imm_data = htonl(0xABCD);
  w.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  ibv_wc wc[2]{};
  ASSERT_EQ(poll_n(cq_b, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(wc[0].wr_id, 55u);
  EXPECT_EQ(wc[0].byte_len, 3000u);
  EXPECT_TRUE(wc[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wc[0].imm_data), 0xABCDu);
  EXPECT_EQ(wc[0].qp_num, b->qp_num);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  EXPECT_EQ(wc[0].opcode, IBV_WC_SEND);

  // Inline: the buffer may change as soon as ibv_post_send returns.
  std::uint8_t small[40];
  std::iota(small, small + 40, 1);
  ibv_sge si{reinterpret_cast<std::uintptr_t>(small), 40, 0};
  w.sg_list = &si;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  std::memset(small, 0, sizeof small);
  ASSERT_EQ(poll_n(cq_b, wc, 1), 1);
  EXPECT_EQ(wc[0].byte_len, 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(dst[i], i + 1);
}

// The poll that hands B its receive holds back the ACK B owes for the SEND, for B's next post
// to take along (docs/verbs.md, "Who steps the engine"). B destroys its QP instead: the ACK must
// leave first, or A's SEND runs out of retries (ibv_rc_pingpong's client did this at its end).
TEST_F(PairTest, AckHeldForTheProgramLeavesBeforeItsQpIsDestroyed) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src = pattern(64, 3), dst(64);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ASSERT_EQ(post_recv(b, md, 0, 64), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, ms, 0, 64), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_b, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst, src);
  ASSERT_EQ(ibv_destroy_qp(b), 0);
  b = nullptr;
  ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
}

TEST_F(PairTest, UcWriteAndSend) {
  make_pair(IBV_QPT_UC);
  std::vector<std::uint8_t> src = pattern(5000, 1), dst(5000);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, ms, 0, 5000, reinterpret_cast<std::uintptr_t>(dst.data()), md->rkey), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  // UC completes when sent; the copy on the far side follows on the same loop.
  for (int i = 0; i < 1000 && dst != src; ++i) ibv_poll_cq(cq_b, 1, &wc);
  EXPECT_EQ(dst, src);
}

TEST_F(PairTest, UdSendAndReplyFromTheCompletion) {
  make_pair(IBV_QPT_UD);
  std::vector<std::uint8_t> src = pattern(512, 5), dst(40 + 512);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ibv_ah_attr aa{};
  aa.is_global = 1;
  aa.grh.dgid = gid;
  aa.grh.hop_limit = 64;
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(pd, &aa);
  ASSERT_NE(ah, nullptr);
  aa.is_global = 0;
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd, &aa), nullptr);  // RoCE address handles are global
  EXPECT_EQ(errno, EINVAL);

  ASSERT_EQ(post_recv(b, md, 0, static_cast<std::uint32_t>(dst.size()), 9), 0);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(src.data()), 512, ms->lkey};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.ud.ah = ah;
  w.wr.ud.remote_qpn = b->qp_num;
  w.wr.ud.remote_qkey = 0x11111111;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_b, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 40u + 512u);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(wc.src_qp, a->qp_num);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 40));
  // The answer's address handle comes from the GRH slot (an IPv4 header in its last 20 bytes).
  ibv_ah_attr back{};
  ASSERT_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, reinterpret_cast<ibv_grh*>(dst.data()), &back), 0);
  EXPECT_EQ(std::memcmp(back.grh.dgid.raw, gid.raw, 16), 0);
  ibv_ah* reply = ibv_create_ah_from_wc(pd, &wc, reinterpret_cast<ibv_grh*>(dst.data()), 1);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(ibv_destroy_ah(reply), 0);
  ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(PairTest, UdDatagramAboveTheMtuIsRefused) {
  make_pair(IBV_QPT_UD);
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
  const std::uint32_t mtu = 128u << p.active_mtu;
  std::vector<std::uint8_t> src(mtu + 1);
  ibv_mr* ms = reg(src);
  ibv_ah_attr aa{};
  aa.is_global = 1;
  aa.grh.dgid = gid;
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(pd, &aa);
  ASSERT_NE(ah, nullptr);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(src.data()), mtu + 1, ms->lkey};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.wr.ud.ah = ah;
  w.wr.ud.remote_qpn = b->qp_num;
  EXPECT_EQ(ibv_post_send(a, &w, &bad), EINVAL);
}

TEST_F(DeviceTest, ExtendedSendApiAndExtendedCq) {
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 64;
  ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
  ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &ca);
  ASSERT_NE(cqx, nullptr);
  ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
  ibv_qp_init_attr_ex a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {16, 16, 2, 2, 64};
  a.pd = pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
  ibv_qp* qa = ibv_create_qp_ex(ctx, &a);
  ibv_qp* qb = ibv_create_qp_ex(ctx, &a);
  ASSERT_TRUE(qa && qb);
  ASSERT_EQ(connect(qa, IBV_QPT_RC, gid, qb->qp_num), 0);
  ASSERT_EQ(connect(qb, IBV_QPT_RC, gid, qa->qp_num), 0);
  std::vector<std::uint8_t> src = pattern(1000, 2), dst(2000);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ibv_sge rs{reinterpret_cast<std::uintptr_t>(dst.data()) + 1000, 1000, md->lkey};
  ibv_recv_wr r{};
  r.wr_id = 77;
  r.sg_list = &rs;
  r.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(qb, &r, &rbad), 0);

  ibv_qp_ex* x = ibv_qp_to_qp_ex(qa);
  ASSERT_NE(x, nullptr);
  ibv_wr_start(x);
  x->wr_id = 1;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(x, md->rkey, reinterpret_cast<std::uintptr_t>(dst.data()));
  ibv_wr_set_sge(x, ms->lkey, reinterpret_cast<std::uintptr_t>(src.data()), 1000);
  x->wr_id = 2;
  ibv_wr_send(x);
  const char msg[] = "inline through ibv_wr_set_inline_data";
  ibv_wr_set_inline_data(x, const_cast<char*>(msg), sizeof msg);
  ASSERT_EQ(ibv_wr_complete(x), 0);

  // Three completions on the one CQ: the write and the send at qa, the receive at qb.
  int seen = 0;
  bool recv_ok = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (seen < 3 && std::chrono::steady_clock::now() < deadline) {
    ibv_poll_cq_attr pa{};
    if (ibv_start_poll(cqx, &pa) != 0) continue;
    do {
      ++seen;
      EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
      if (ibv_wc_read_opcode(cqx) == IBV_WC_RECV) {
        EXPECT_EQ(cqx->wr_id, 77u);
        EXPECT_EQ(ibv_wc_read_byte_len(cqx), sizeof msg);
        EXPECT_EQ(ibv_wc_read_qp_num(cqx), qb->qp_num);
        recv_ok = true;
      }
    } while (ibv_next_poll(cqx) == 0);
    ibv_end_poll(cqx);
  }
  EXPECT_EQ(seen, 3);
  EXPECT_TRUE(recv_ok);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
  EXPECT_STREQ(reinterpret_cast<const char*>(dst.data() + 1000), msg);

  // A builder for something the device lacks fails the batch.
  ibv_wr_start(x);
  char hdr[64] = {};
  ibv_wr_send_tso(x, hdr, sizeof hdr, 1000);
  EXPECT_EQ(ibv_wr_complete(x), EOPNOTSUPP);
  ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx, &ca), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

}  // namespace datapath_test
}  // namespace verbs_test

namespace verbs_test {
namespace datapath_test {

// An SRQ with a limit armed: the SEND that leaves fewer receives than the limit raises
// IBV_EVENT_SRQ_LIMIT_REACHED once; a QP on the SRQ moved to ERR raises LAST_WQE_REACHED.
TEST_F(DeviceTest, SrqLimitAndLastWqeReachTheProgramAsAsyncEvents) {
  // Non-blocking, so a missing event fails the test instead of hanging it.
  ASSERT_EQ(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK), 0);
  ibv_async_event none{};
  EXPECT_EQ(ibv_get_async_event(ctx, &none), -1);  // nothing yet
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp* a = make_qp(pd, cq, IBV_QPT_RC);
  ibv_qp_init_attr ib{};
  ib.send_cq = ib.recv_cq = cq;
  ib.srq = srq;
  ib.qp_type = IBV_QPT_RC;
  ib.cap = {8, 0, 1, 0, 0};
  ibv_qp* b = ibv_create_qp(pd, &ib);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(connect(a, IBV_QPT_RC, gid, b->qp_num), 0);
  ASSERT_EQ(connect(b, IBV_QPT_RC, gid, a->qp_num), 0);
  std::vector<std::uint8_t> buf(16 * 64);
  ibv_mr* mr = reg(buf);
  ASSERT_NE(mr, nullptr);
  for (int i = 0; i < 4; ++i) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(buf.data()) + 64 * i, 64, mr->lkey};
    ibv_recv_wr w{};
    w.wr_id = 100 + i;
    w.sg_list = &s;
    w.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq, &w, &bad), 0);
  }
  ibv_srq_attr lim{};
  lim.srq_limit = 3;
  ASSERT_EQ(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(buf.data()) + 512, 8, mr->lkey};
  ibv_send_wr w{};
  w.wr_id = 7;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  ibv_wc wc[4];
  ASSERT_EQ(poll_n(cq, wc, 4), 4);  // two sends, two receives
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.element.srq, srq);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(srq->events_completed, 1u);
  ibv_qp_attr e{};
  e.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b, &e, IBV_QP_STATE), 0);
  // Poll (which steps the dataplane) until the event is readable, 5 s at most.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  pollfd p{ctx->async_fd, POLLIN, 0};
  while (::poll(&p, 1, 0) == 0 && std::chrono::steady_clock::now() < until) (void)ibv_poll_cq(cq, 1, wc);
  ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(ev.element.qp, b);
  ibv_ack_async_event(&ev);
  ASSERT_EQ(ibv_destroy_qp(b), 0);
  ASSERT_EQ(ibv_destroy_srq(srq), 0);
}

}  // namespace datapath_test
}  // namespace verbs_test

namespace verbs_test {
namespace datapath_test {

// Memory windows through libibverbs' own inlines: a type 1 window bound with ibv_bind_mw and a
// type 2 window bound by a BIND_MW work request give the peer access through their keys only;
// the peer's SEND_WITH_INVALIDATE ends the type 2 window, and a WRITE through it then fails with
// IBV_WC_REM_ACCESS_ERR.
TEST_F(PairTest, MemoryWindowsType1AndType2) {
  make_pair(IBV_QPT_RC);
  std::vector<std::uint8_t> src(256, 0x5A), dst(8192, 0), rbuf(64);
  ibv_mr* smr = reg(src);
  ibv_mr* dmr = reg(dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
  ibv_mr* rmr = reg(rbuf);
  ASSERT_NE(smr, nullptr);
  ASSERT_NE(dmr, nullptr);
  ibv_mw* w1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  ibv_mw* w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  ASSERT_NE(w1, nullptr) << std::strerror(errno);
  ASSERT_NE(w2, nullptr);
  const auto base = reinterpret_cast<std::uint64_t>(dst.data());
  const std::uint32_t before = w1->rkey;
  const std::uint32_t k2 = bind_two_windows(b, dmr, base, 4096, w1, w2);
  ASSERT_NE(k2, 0u);
  EXPECT_EQ(w1->rkey, ibv_inc_rkey(before));
  ibv_send_wr* bad = nullptr;
  ibv_wc wc[2];
  ASSERT_EQ(poll_n(cq_b, wc, 2), 2);
  for (const ibv_wc& c : wc) {
    EXPECT_EQ(c.status, IBV_WC_SUCCESS) << ibv_wc_status_str(c.status);
    EXPECT_EQ(c.opcode, IBV_WC_BIND_MW);
  }
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, smr, 0, 100, base + 10, w1->rkey, 21), 0);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, smr, 0, 100, base + 4096 + 10, k2, 22), 0);
  ASSERT_EQ(poll_n(cq_a, wc, 2), 2);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst[10], 0x5A);
  EXPECT_EQ(dst[4096 + 10], 0x5A);
  EXPECT_EQ(dst[9], 0);
  // The peer invalidates the type 2 window with its SEND.
  ASSERT_EQ(post_recv(b, rmr, 0, 64, 30), 0);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(src.data()), 8, smr->lkey};
  ibv_send_wr inv{};
  inv.wr_id = 23;
  inv.sg_list = &s;
  inv.num_sge = 1;
  inv.opcode = IBV_WR_SEND_WITH_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.invalidate_rkey = k2;
  ASSERT_EQ(ibv_post_send(a, &inv, &bad), 0);
  ASSERT_EQ(poll_n(cq_b, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc[0].wc_flags & IBV_WC_WITH_INV);
  EXPECT_EQ(wc[0].invalidated_rkey, k2);
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, smr, 0, 100, base + 4096 + 200, k2, 24), 0);
  ASSERT_EQ(poll_n(cq_a, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc[0].status);
  EXPECT_EQ(dst[4096 + 200], 0);
  EXPECT_EQ(ibv_dealloc_mw(w1), 0);
  EXPECT_EQ(ibv_dealloc_mw(w2), 0);
}

}  // namespace datapath_test
}  // namespace verbs_test

namespace verbs_test {
namespace datapath_test {

// ibv_wr_atomic_write (its 8 bytes copied at the call), then ibv_wr_local_inv of the target's
// region on the other QP: a later ATOMIC_WRITE through that key fails with IBV_WC_REM_ACCESS_ERR.
TEST_F(DeviceTest, ExtendedApiAtomicWriteAndLocalInvalidate) {
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr_ex a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {16, 16, 1, 1, 0};  // no inline room: ATOMIC_WRITE's bytes ride in the WQE anyway
  a.pd = pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
  ibv_qp* qa = ibv_create_qp_ex(ctx, &a);
  ibv_qp* qb = ibv_create_qp_ex(ctx, &a);
  ASSERT_TRUE(qa && qb) << std::strerror(errno);
  ASSERT_EQ(connect(qa, IBV_QPT_RC, gid, qb->qp_num), 0);
  ASSERT_EQ(connect(qb, IBV_QPT_RC, gid, qa->qp_num), 0);
  std::vector<std::uint8_t> dst(64, 0);
  ibv_mr* md = reg(dst);
  ASSERT_NE(md, nullptr);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(qa);
  std::uint64_t value = 0x1122334455667788ull;
  ibv_wr_start(x);
  x->wr_id = 1;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_write(x, md->rkey, reinterpret_cast<std::uintptr_t>(dst.data()) + 16, &value);
  value = 0;
  ASSERT_EQ(ibv_wr_complete(x), 0);
  ibv_wc wc[2];
  ASSERT_EQ(poll_n(cq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[0].status);
  EXPECT_EQ(wc[0].opcode, IBV_WC_ATOMIC_WRITE);
  std::uint64_t got = 0;
  std::memcpy(&got, dst.data() + 16, 8);
  EXPECT_EQ(got, 0x1122334455667788ull);

  ibv_qp_ex* y = ibv_qp_to_qp_ex(qb);
  ibv_wr_start(y);
  y->wr_id = 2;
  y->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_local_inv(y, md->rkey);
  ASSERT_EQ(ibv_wr_complete(y), 0);
  ASSERT_EQ(poll_n(cq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_LOCAL_INV);
  value = 7;
  ibv_wr_start(x);
  x->wr_id = 3;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_write(x, md->rkey, reinterpret_cast<std::uintptr_t>(dst.data()) + 16, &value);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  ASSERT_EQ(poll_n(cq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc[0].status);
  std::memcpy(&got, dst.data() + 16, 8);
  EXPECT_EQ(got, 0x1122334455667788ull);
}

}  // namespace datapath_test
}  // namespace verbs_test
