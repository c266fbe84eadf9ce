// Unreliable connected and datagram queue pairs: no acknowledgements, and a lost packet loses
// its message (UC) or its datagram (UD).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "protocol/parser.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::uc_ud_test {
namespace {

using namespace roce::proto;

struct Net {
  SimNetwork net{3};
  Endpoint a, b;
  std::uint64_t a_packets = 0, b_packets = 0;
  Net(const QpOptions& o, LinkFaults f = {}) {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    net.connect("a", "b", f, {});
    net.on_transmit = [this](const std::string& from, std::span<const std::byte>, Nanos) {
      ++(from == "a" ? a_packets : b_packets);
    };
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
    connect_pair(a, b, o);
  }
};

TEST(Uc, SendAndWriteCompleteWithoutAcknowledgements) {
  QpOptions o;
  o.type = IBV_QPT_UC;
  Net n(o);
  std::vector<std::byte> src(3000, std::byte{4}), dst(3000), rbuf(4096);
  auto* sm = reg(*n.a.engine, n.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*n.b.engine, n.b.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  auto* rm = reg(*n.b.engine, n.b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rg = sge(rbuf.data(), 4096, rm);
  ASSERT_EQ(post_recv(n.b, 1, &rg, 1), 0);
  ibv_sge g = sge(src.data(), 3000, sm);
  ASSERT_EQ(post(n.a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  ASSERT_EQ(post(n.a, IBV_WR_SEND, 2, &g, 1), 0);
  n.net.run_idle(kSecond);
  auto sw = drain(n.a);
  auto rw = drain(n.b);
  ASSERT_EQ(sw.size(), 2u);
  EXPECT_EQ(sw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(sw[1].status, IBV_WC_SUCCESS);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].byte_len, 3000u);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(n.b_packets, 0u);  // UC never answers
  EXPECT_EQ(n.a_packets, 6u);
}

TEST(Uc, LostPacketDropsItsMessageAndTheNextOneLands) {
  QpOptions o;
  o.type = IBV_QPT_UC;
  LinkFaults f;
  f.drop_if = [](std::span<const std::byte>, std::uint64_t index) { return index == 1; };  // MIDDLE of the first SEND
  Net n(o, f);
  std::vector<std::byte> m1(3000, std::byte{1}), m2(2000, std::byte{2}), rbuf(4096);
  auto* m1r = reg(*n.a.engine, n.a.pd, m1, IBV_ACCESS_LOCAL_WRITE);
  auto* m2r = reg(*n.a.engine, n.a.pd, m2, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*n.b.engine, n.b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rg = sge(rbuf.data(), 4096, rm);
  ASSERT_EQ(post_recv(n.b, 7, &rg, 1), 0);
  ibv_sge g1 = sge(m1.data(), 3000, m1r), g2 = sge(m2.data(), 2000, m2r);
  ASSERT_EQ(post(n.a, IBV_WR_SEND, 1, &g1, 1), 0);
  ASSERT_EQ(post(n.a, IBV_WR_SEND, 2, &g2, 1), 0);
  n.net.run_idle(kSecond);
  EXPECT_EQ(drain(n.a).size(), 2u);  // the sender cannot know
  auto rw = drain(n.b);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].wr_id, 7u);
  EXPECT_EQ(rw[0].byte_len, 2000u);
  EXPECT_EQ(rbuf[0], std::byte{2});
  EXPECT_EQ(n.b.qp->counters().get(rdma::Counter::UcMessagesDropped), 1u);
}

class UdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QpOptions o;
    o.type = IBV_QPT_UD;
    o.qkey = 0x11111111;
    n_ = std::make_unique<Net>(o);
    ibv_ah_attr ah{};
    ah.is_global = 1;
    ah.grh.dgid = gid_of(*n_->b.engine);
    auto r = n_->a.engine->create_ah(n_->a.pd, ah);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ah_ = *r;
    src_.assign(600, std::byte{9});
    sm_ = reg(*n_->a.engine, n_->a.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    rbuf_.assign(1024 + 40, std::byte{0});
    rm_ = reg(*n_->b.engine, n_->b.pd, rbuf_, IBV_ACCESS_LOCAL_WRITE);
  }
  int send(std::uint32_t qkey, std::uint32_t len, bool imm) {
    ibv_sge g = sge(src_.data(), len, sm_);
    ibv_send_wr wr{};
    wr.wr_id = len;
    wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    wr.imm_data = htonl(0xABCD);
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = &ah_->base;
    wr.wr.ud.remote_qpn = n_->b.qp->qpn();
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr* bad = nullptr;
    return n_->a.engine->post_send(n_->a.qp, &wr, &bad);
  }
  std::unique_ptr<Net> n_;
  rdma::AddressHandle* ah_ = nullptr;
  std::vector<std::byte> src_, rbuf_;
  const rdma::MemoryRegion *sm_ = nullptr, *rm_ = nullptr;
};

TEST_F(UdTest, DatagramArrivesBehindAGrhWithTheSourceQp) {
  ibv_sge rg = sge(rbuf_.data(), static_cast<std::uint32_t>(rbuf_.size()), rm_);
  ASSERT_EQ(post_recv(n_->b, 3, &rg, 1), 0);
  ASSERT_EQ(send(0x11111111, 600, true), 0);
  n_->net.run_idle(kSecond);
  auto sw = drain(n_->a);
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].status, IBV_WC_SUCCESS);
  auto rw = drain(n_->b);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].byte_len, 640u);
  EXPECT_EQ(rw[0].src_qp, n_->a.qp->qpn());
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_GRH);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(rw[0].imm_data), 0xABCDu);
  EXPECT_EQ(rbuf_[20], std::byte{0x45});  // the IPv4 header sits in the GRH's last 20 bytes
  EXPECT_EQ(rbuf_[40], std::byte{9});
  EXPECT_EQ(rbuf_[639], std::byte{9});
}

TEST_F(UdTest, WrongQkeyIsDroppedAndCounted) {
  ibv_sge rg = sge(rbuf_.data(), static_cast<std::uint32_t>(rbuf_.size()), rm_);
  ASSERT_EQ(post_recv(n_->b, 3, &rg, 1), 0);
  ASSERT_EQ(send(0x22222222, 10, false), 0);
  n_->net.run_idle(kSecond);
  EXPECT_TRUE(drain(n_->b).empty());
  EXPECT_EQ(n_->b.qp->counters().get(rdma::Counter::QkeyViolations), 1u);
}

TEST_F(UdTest, QkeyWithHighBitUsesTheQpsOwnQkey) {
  ibv_sge rg = sge(rbuf_.data(), static_cast<std::uint32_t>(rbuf_.size()), rm_);
  ASSERT_EQ(post_recv(n_->b, 3, &rg, 1), 0);
  ASSERT_EQ(send(0x80000000, 10, false), 0);
  n_->net.run_idle(kSecond);
  EXPECT_EQ(drain(n_->b).size(), 1u);
}

TEST_F(UdTest, NoReceivePostedDropsTheDatagram) {
  ASSERT_EQ(send(0x11111111, 10, false), 0);
  n_->net.run_idle(kSecond);
  EXPECT_EQ(n_->b.qp->counters().get(rdma::Counter::UdNoReceiveDrops), 1u);
}

TEST_F(UdTest, DatagramOfThePortMtuIsAccepted) {
  std::vector<std::byte> big(4096);
  auto* bm = reg(*n_->a.engine, n_->a.pd, big, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(big.data(), 4096, bm);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &g;
  wr.num_sge = 1;
  wr.wr.ud.ah = &ah_->base;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(n_->a.engine->post_send(n_->a.qp, &wr, &bad), 0);
}

TEST_F(UdTest, DatagramAbovePathMtuIsRefusedAtPost) {
  std::vector<std::byte> big(5000);
  auto* bm = reg(*n_->a.engine, n_->a.pd, big, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(big.data(), 5000, bm);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &g;
  wr.num_sge = 1;
  wr.wr.ud.ah = &ah_->base;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(n_->a.engine->post_send(n_->a.qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

}  // namespace
}  // namespace roce::test::uc_ud_test
