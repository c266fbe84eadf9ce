// Shared receive queues engine to engine: several RC QPs of one host take their receives from
// one SRQ in posting order, a multi-packet message holds its receive against the other QPs'
// messages, an empty SRQ answers RNR NAK and the retried SEND lands once a receive is posted,
// the limit event fires once per arming, and a QP entering ERR flushes only the receive it
// holds and reports IBV_EVENT_QP_LAST_WQE_REACHED.
#include <gtest/gtest.h>

#include <map>

#include "protocol/parser.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::srq_test {
namespace {

constexpr std::size_t kQps = 3;

struct SrqHosts {
  SimNetwork net{11};
  QpOptions o;
  Endpoint a[kQps];
  Endpoint b[kQps];
  rdma::SharedReceiveQueue* srq = nullptr;
  rdma::CompletionQueue* b_cq = nullptr;
  std::vector<std::byte> rbuf = std::vector<std::byte>(64 * 4096);
  const rdma::MemoryRegion* rmr = nullptr;
  std::vector<std::byte> sbuf[kQps];
  const rdma::MemoryRegion* smr[kQps] = {};
  std::vector<std::uint32_t> a_dest_qps;  // destination QP of every frame a sent, in order

  explicit SrqHosts(std::uint32_t srq_depth = 64, std::uint8_t rnr_retry = 7) {
    o.rnr_retry = rnr_retry;
    o.min_rnr_timer = 1;  // 10 us: the RNR retry comes quickly
    rdma::EngineConfig ca;
    ca.tuning.tx_quantum = 1;  // a's QPs take turns packet by packet: their messages interleave on b
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, ca);
    net.on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos) {
      proto::Packet p;
      if (from == "a" && proto::parse_frame(f, {}, p) == proto::ParseError::None) a_dest_qps.push_back(p.dest_qp());
    };
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    net.connect("a", "b", {}, {});
    rdma::Engine& eb = net.host("b");
    const rdma::PdHandle pd = eb.alloc_pd();
    auto s = eb.create_srq(pd, ibv_srq_attr{srq_depth, 2, 0});
    EXPECT_TRUE(s.ok()) << s.error().message;
    srq = *s;
    b_cq = *eb.create_cq(1024);
    rmr = reg(eb, pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
    for (std::size_t i = 0; i < kQps; ++i) {
      a[i] = make_endpoint(net.host("a"), o);
      b[i].engine = &eb;
      b[i].pd = pd;
      b[i].cq = b_cq;
      rdma::QpInit init;
      init.send_cq = init.recv_cq = b_cq;
      init.cap = ibv_qp_cap{64, 0, 2, 0, 0};
      init.srq = srq;
      auto qp = eb.create_qp(pd, init);
      EXPECT_TRUE(qp.ok()) << qp.error().message;
      b[i].qp = *qp;
      bring_up(a[i], b[i], o, 0x1000 * (i + 1), 0x2000 * (i + 1));
      bring_up(b[i], a[i], o, 0x2000 * (i + 1), 0x1000 * (i + 1));
      sbuf[i].assign(4096, static_cast<std::byte>(0x10 * (i + 1)));
      smr[i] = reg(net.host("a"), a[i].pd, sbuf[i], IBV_ACCESS_LOCAL_WRITE);
    }
  }
  // Receive k takes 4 KiB of rbuf at k * 4096.
  int post_srq(std::uint64_t k) {
    ibv_sge s = sge(rbuf.data() + k * 4096, 4096, rmr);
    ibv_recv_wr wr{};
    wr.wr_id = k;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return net.host("b").post_srq_recv(srq, &wr, &bad);
  }
  int send(std::size_t qp, std::uint32_t len, std::uint64_t wr_id) {
    ibv_sge s = sge(sbuf[qp].data(), len, smr[qp]);
    return post(a[qp], IBV_WR_SEND, wr_id, &s, 1);
  }
  std::vector<ibv_wc> wait(rdma::CompletionQueue* cq, rdma::Engine& e, std::size_t n) {
    std::vector<ibv_wc> got;
    net.run_until(
        [&] {
          ibv_wc wc[16];
          for (int k; (k = e.poll_cq(cq, 16, wc)) > 0;) got.insert(got.end(), wc, wc + k);
          return got.size() >= n;
        },
        net.now() + 10 * kSecond);
    return got;
  }
};

TEST(Srq, OneQueueServesEveryQpInPostingOrder) {
  SrqHosts h;
  for (std::uint64_t k = 0; k < 6; ++k) ASSERT_EQ(h.post_srq(k), 0);
  ASSERT_EQ(h.send(2, 100, 1), 0);
  auto first = h.wait(h.b_cq, h.net.host("b"), 1);
  ASSERT_EQ(h.send(0, 200, 2), 0);
  auto second = h.wait(h.b_cq, h.net.host("b"), 1);
  ASSERT_EQ(h.send(1, 300, 3), 0);
  auto third = h.wait(h.b_cq, h.net.host("b"), 1);
  ASSERT_EQ(first.size() + second.size() + third.size(), 3u);
  const ibv_wc* wcs[] = {&first[0], &second[0], &third[0]};
  const std::size_t from[] = {2, 0, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wcs[i]->status, IBV_WC_SUCCESS) << describe(*wcs[i]);
    EXPECT_EQ(wcs[i]->opcode, IBV_WC_RECV);
    EXPECT_EQ(wcs[i]->wr_id, i);  // the SRQ's order, whichever QP the message came on
    EXPECT_EQ(wcs[i]->qp_num, h.b[from[i]].qp->qpn());
    EXPECT_EQ(wcs[i]->byte_len, 100u * (i + 1));
    EXPECT_EQ(h.rbuf[i * 4096], static_cast<std::byte>(0x10 * (from[i] + 1)));
  }
  ibv_srq_attr attr{};
  EXPECT_TRUE(h.net.host("b").modify_srq(h.srq, attr, 0).ok());
}

TEST(Srq, MultiPacketMessagesOnSeveralQpsEachFillTheReceiveTheyTook) {
  SrqHosts h;
  for (std::uint64_t k = 0; k < 9; ++k) ASSERT_EQ(h.post_srq(k), 0);
  // Three 3000-byte SENDs per QP (three packets each at 1 KiB), all posted at once: their
  // packets interleave on b.
  for (std::uint64_t m = 0; m < 3; ++m)
    for (std::size_t q = 0; q < kQps; ++q) ASSERT_EQ(h.send(q, 3000, m), 0);
  auto wcs = h.wait(h.b_cq, h.net.host("b"), 9);
  ASSERT_EQ(wcs.size(), 9u);
  std::map<std::uint32_t, std::size_t> per_qp;
  for (const ibv_wc& wc : wcs) {
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
    EXPECT_EQ(wc.byte_len, 3000u);
    std::size_t q = kQps;
    for (std::size_t i = 0; i < kQps; ++i)
      if (h.b[i].qp->qpn() == wc.qp_num) q = i;
    ASSERT_LT(q, kQps);
    ++per_qp[wc.qp_num];
    const std::byte want = static_cast<std::byte>(0x10 * (q + 1));
    const std::byte* r = h.rbuf.data() + wc.wr_id * 4096;
    EXPECT_TRUE(std::all_of(r, r + 3000, [want](std::byte x) { return x == want; })) << "receive " << wc.wr_id;
  }
  EXPECT_EQ(per_qp.size(), kQps);
  std::size_t switches = 0;
  for (std::size_t i = 1; i < h.a_dest_qps.size(); ++i) switches += h.a_dest_qps[i] != h.a_dest_qps[i - 1];
  EXPECT_GE(switches, 6u);  // the messages really were interleaved
}

TEST(Srq, EmptyQueueIsAnRnrNakAndTheRetriedSendLandsOnceAReceiveIsPosted) {
  SrqHosts h;
  ASSERT_EQ(h.send(1, 64, 9), 0);
  h.net.run_until([&] { return h.b[1].qp->counters().get(rdma::Counter::SendRnrErr) > 0; }, h.net.now() + kSecond);
  EXPECT_GT(h.b[1].qp->counters().get(rdma::Counter::SendRnrErr), 0u);
  ASSERT_EQ(h.post_srq(0), 0);
  auto sent = h.wait(h.a[1].cq, h.net.host("a"), 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS) << describe(sent[0]);
  auto got = h.wait(h.b_cq, h.net.host("b"), 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].qp_num, h.b[1].qp->qpn());
  EXPECT_GT(h.a[1].qp->counters().get(rdma::Counter::RcvdRnrErr), 0u);
}

TEST(Srq, LimitEventFiresOnceWhenFewerThanTheLimitAreLeft) {
  SrqHosts h(16);
  rdma::Engine& eb = h.net.host("b");
  for (std::uint64_t k = 0; k < 8; ++k) ASSERT_EQ(h.post_srq(k), 0);
  ibv_srq_attr attr{};
  attr.srq_limit = 5;
  ASSERT_TRUE(eb.modify_srq(h.srq, attr, IBV_SRQ_LIMIT).ok());
  rdma::AsyncEvent ev;
  for (std::uint64_t m = 0; m < 3; ++m) ASSERT_EQ(h.send(0, 8, m), 0);
  ASSERT_EQ(h.wait(h.b_cq, eb, 3).size(), 3u);
  EXPECT_FALSE(eb.get_async_event(&ev));  // 5 left: not fewer than the limit
  ASSERT_EQ(h.send(0, 8, 3), 0);
  ASSERT_EQ(h.wait(h.b_cq, eb, 1).size(), 1u);
  ASSERT_TRUE(eb.get_async_event(&ev));
  EXPECT_EQ(ev.type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.srq, h.srq);
  ibv_srq_attr q{};
  h.srq->query(&q);
  EXPECT_EQ(q.srq_limit, 0u);  // disarmed
  ASSERT_EQ(h.send(0, 8, 4), 0);
  ASSERT_EQ(h.wait(h.b_cq, eb, 1).size(), 1u);
  EXPECT_FALSE(eb.get_async_event(&ev));  // once per arming
}

TEST(Srq, PostRecvOnAnSrqQpIsRefusedAndAnSrqInUseCannotBeDestroyedOrResized) {
  SrqHosts h;
  rdma::Engine& eb = h.net.host("b");
  ibv_sge s = sge(h.rbuf.data(), 64, h.rmr);
  EXPECT_EQ(post_recv(h.b[0], 1, &s, 1), EINVAL);
  const Status busy = eb.destroy_srq(h.srq);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.code(), EBUSY);
  ibv_srq_attr attr{};
  attr.max_wr = 128;
  EXPECT_FALSE(eb.modify_srq(h.srq, attr, IBV_SRQ_MAX_WR).ok());
  attr.srq_limit = 65;
  EXPECT_FALSE(eb.modify_srq(h.srq, attr, IBV_SRQ_LIMIT).ok());
  for (Endpoint& b : h.b) ASSERT_TRUE(eb.destroy_qp(b.qp).ok());
  EXPECT_TRUE(eb.destroy_srq(h.srq).ok());
}

TEST(Srq, AQpEnteringErrorFlushesOnlyTheReceiveItHoldsAndReportsLastWqeReached) {
  SrqHosts h;
  rdma::Engine& eb = h.net.host("b");
  for (std::uint64_t k = 0; k < 4; ++k) ASSERT_EQ(h.post_srq(k), 0);
  // A 3 KiB SEND whose last packet never comes: b's QP 0 holds receive 0.
  h.net.faults("a").drop_if = [](std::span<const std::byte>, std::uint64_t index) { return index == 2; };
  ASSERT_EQ(h.send(0, 3000, 1), 0);
  h.net.run_until([&] { return h.srq->posted() == 3; }, h.net.now() + kSecond);
  ASSERT_EQ(h.srq->posted(), 3u);
  ibv_qp_attr err{};
  err.qp_state = IBV_QPS_ERR;
  ASSERT_TRUE(eb.modify_qp(h.b[0].qp, err, IBV_QP_STATE).ok());
  auto wcs = h.wait(h.b_cq, eb, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wcs[0].wr_id, 0u);
  EXPECT_EQ(h.srq->posted(), 3u);  // the others stay for the other QPs
  rdma::AsyncEvent ev;
  ASSERT_TRUE(eb.get_async_event(&ev));
  EXPECT_EQ(ev.type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(ev.qp, h.b[0].qp);
  h.net.faults("a").drop_if = nullptr;
  ASSERT_EQ(h.send(1, 50, 2), 0);
  auto next = h.wait(h.b_cq, eb, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].wr_id, 1u);
  EXPECT_EQ(next[0].qp_num, h.b[1].qp->qpn());
}

}  // namespace
}  // namespace roce::test::srq_test
