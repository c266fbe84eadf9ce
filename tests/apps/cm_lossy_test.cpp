// rdma_cm through a lossy link: two dataplanes joined by the link emulator, which drops 20 % of
// the frames each way (MADs, data and ACKs alike) with a fixed seed. Ten RC connections in a
// row each go through REQ/REP/RTU, carry a SEND the server checks, and end with DREQ/DREP and
// TIMEWAIT on both sides: every lost MAD is made good by the CM's retransmissions (REQ again,
// a duplicate REQ answered with the REP again, a duplicate REP with the RTU again, DREQ again),
// and nothing is left behind. Seventy-odd MADs at 20 % loss cannot all get through (0.8^70):
// the retransmission counters must show it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "dataplane/ring_port.hpp"
#include "netsim/link_emulator.hpp"
#include "tests/apps/cm_side.hpp"

namespace roce::test::cm_lossy_test {
namespace {

using cm::RdmaCmEventType;

class CmLossyLink : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    const std::string s = std::to_string(n++);
    auto left = dp::make_ring_pair("cl_a" + s, "cl_x" + s);
    auto right = dp::make_ring_pair("cl_y" + s, "cl_b" + s);
    ASSERT_TRUE(left.ok() && right.ok());
    a_ = make_dp("cla" + s, std::to_string(left->a), {10, 0, 0, 1}, {2, 0, 0, 0, 0, 1});
    b_ = make_dp("clb" + s, std::to_string(right->b), {10, 0, 0, 2}, {2, 0, 0, 0, 0, 2});
    ASSERT_TRUE(a_ && b_);
    netsim::LinkEmulatorOptions o;
    o.name = "cl_emu" + s;
    o.x.name = std::to_string(left->b);
    o.y.name = std::to_string(right->a);
    o.x_to_y.loss = 0.2;
    o.y_to_x.loss = 0.2;
    o.seed = 23;
    auto e = netsim::LinkEmulator::create(o);
    ASSERT_TRUE(e.ok()) << e.error().message;
    emu_ = std::move(*e);
    a_->set_driven_by_other_thread(true);
    b_->set_driven_by_other_thread(true);
    poller_ = std::thread([this] {
      while (!stop_) {
        a_->poll_once();
        emu_->poll(emu_->now());
        b_->poll_once();
      }
    });
    client = std::make_unique<Side>(*a_, 0x1111);
    server = std::make_unique<Side>(*b_, 0x2222);
    client->start_cm();
    server->start_cm();
  }
  void TearDown() override {
    client.reset();
    server.reset();
    stop_ = true;
    if (poller_.joinable()) poller_.join();
  }
  std::unique_ptr<dp::Dataplane> make_dp(const std::string& name, const std::string& port, proto::Ipv4Addr ip, proto::MacAddr mac) {
    dp::DataplaneOptions o;
    o.name = name;
    o.port.name = port;
    o.ip = rdma::IpAddress::ipv4(ip);
    o.mac = mac;
    o.mbufs = 4095;
    auto d = dp::Dataplane::create(o);
    EXPECT_TRUE(d.ok()) << d.error().message;
    return d.ok() ? std::move(*d) : nullptr;
  }
  static std::uint64_t sum(const std::map<std::string, std::uint64_t>& c, const std::string& prefix) {
    std::uint64_t s = 0;
    for (const auto& [k, v] : c)
      if (k.rfind(prefix, 0) == 0) s += v;
    return s;
  }

  std::unique_ptr<dp::Dataplane> a_, b_;
  std::unique_ptr<netsim::LinkEmulator> emu_;
  std::thread poller_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Side> client, server;
};

TEST_F(CmLossyLink, TenConnectionsSurviveTwentyPercentLossBothWays) {
  ASSERT_TRUE(server->cms->listen(proto::RdmaPortSpace::Tcp, 7174).ok());
  constexpr int kConnections = 10;
  for (int k = 0; k < kConnections; ++k) {
    SCOPED_TRACE("connection " + std::to_string(k));
    auto cq = client->conn.create(client::QpParams{});
    ASSERT_TRUE(cq.ok());
    cm::RdmaConnectParams cp = short_timer_request(*cq, 7174);
    cp.src_port = static_cast<std::uint16_t>(41000 + k);
    auto id = client->cms->connect(cp, 10 * kSecond);
    ASSERT_TRUE(id.ok()) << id.error().message;
    const client::LocalQp sq = server->serve_one(64, 10 * kSecond);
    ASSERT_NE(sq.qp, nullptr);
    auto rep = client->wait_for(RdmaCmEventType::ConnectResponse, 10 * kSecond);
    ASSERT_TRUE(rep);
    ASSERT_TRUE(client->cms->connect_qp(*cq, IBV_QPT_RC, cm::active_qp_attrs(cp.ib, std::get<cm::RepInfo>(rep->detail),
                                                                             client->cms->qp_limits()), 10 * kSecond).ok());
    ASSERT_TRUE(client->cms->ready_to_use(*id).ok());
    ASSERT_TRUE(client->wait_for(RdmaCmEventType::Established, 10 * kSecond));
    ASSERT_TRUE(server->wait_for(RdmaCmEventType::Established, 10 * kSecond));

    const std::string text = "round " + std::to_string(k);
    std::memcpy(client->buf.data(), text.c_str(), text.size() + 1);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(client->buf.data()), static_cast<std::uint32_t>(text.size() + 1), client->mr->lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(client->post_send(*cq, wr), 0);
    auto rwc = server->poll(sq, 1);
    ASSERT_EQ(rwc.size(), 1u);
    EXPECT_EQ(rwc[0].status, IBV_WC_SUCCESS);
    EXPECT_STREQ(reinterpret_cast<const char*>(server->buf.data()), text.c_str());
    EXPECT_EQ(client->poll(*cq, 1).size(), 1u);

    ASSERT_TRUE(client->cms->disconnect(*id).ok());
    EXPECT_TRUE(client->wait_for(RdmaCmEventType::Disconnected, 10 * kSecond));
    EXPECT_TRUE(server->wait_for(RdmaCmEventType::Disconnected, 10 * kSecond));
    EXPECT_TRUE(client->wait_for(RdmaCmEventType::TimewaitExit, 10 * kSecond));
    EXPECT_TRUE(server->wait_for(RdmaCmEventType::TimewaitExit, 10 * kSecond));
    EXPECT_TRUE(client->conn.destroy(*cq).ok());
    EXPECT_TRUE(server->conn.destroy(sq).ok());
  }
  EXPECT_EQ(client->cms->live_ids(), 0u);
  EXPECT_EQ(server->cms->live_ids(), 0u);
  const auto cc = client->cms->counters();
  const auto sc = server->cms->counters();
  const std::uint64_t retries = sum(cc, "cm_tx_retries.") + sum(sc, "cm_tx_retries.");
  const std::uint64_t dup = sum(cc, "cm_rx_duplicates.") + sum(sc, "cm_rx_duplicates.");
  const netsim::LinkStats ab = emu_->stats(netsim::Direction::XtoY), ba = emu_->stats(netsim::Direction::YtoX);
  std::printf("lossy link: %s / %s; CM retransmissions %llu, duplicates answered %llu; established %llu + %llu\n",
              netsim::to_string(ab).c_str(), netsim::to_string(ba).c_str(), static_cast<unsigned long long>(retries),
              static_cast<unsigned long long>(dup), static_cast<unsigned long long>(cc.at("established")),
              static_cast<unsigned long long>(sc.at("established")));
  EXPECT_GT(retries, 0u);
  EXPECT_EQ(cc.at("established"), static_cast<std::uint64_t>(kConnections));
  EXPECT_EQ(sc.at("established"), static_cast<std::uint64_t>(kConnections));
}

// IBA 12.9.5 / COMM_EST: a passive side in REP_SENT whose QP receives a packet is established
// without the RTU. The client here never sends its RTU (as if every copy were lost: the server
// cannot tell), moves its QP to RTS on the REP and SENDs through the same 20 % lossy link;
// the server's CM agent sees the packet on the QP and establishes the ID (its REP timer stops,
// no REJ "timeout"). The late RTU that follows is a duplicate for an established ID.
TEST_F(CmLossyLink, FirstPacketEstablishesThePassiveSideWhenTheRtuIsLost) {
  ASSERT_TRUE(server->cms->listen(proto::RdmaPortSpace::Tcp, 7174).ok());
  auto cq = client->conn.create(client::QpParams{});
  ASSERT_TRUE(cq.ok());
  cm::RdmaConnectParams cp = short_timer_request(*cq, 7174);
  cp.ib.local_cm_response_timeout = 16;  // the server waits 268 ms for the RTU, 15 times (the SEND may be lost and resent)
  auto id = client->cms->connect(cp, 10 * kSecond);
  ASSERT_TRUE(id.ok()) << id.error().message;
  const client::LocalQp sq = server->serve_one(64, 10 * kSecond);
  ASSERT_NE(sq.qp, nullptr);
  auto rep = client->wait_for(RdmaCmEventType::ConnectResponse, 10 * kSecond);
  ASSERT_TRUE(rep);
  ASSERT_TRUE(client->cms->connect_qp(*cq, IBV_QPT_RC, cm::active_qp_attrs(cp.ib, std::get<cm::RepInfo>(rep->detail),
                                                                           client->cms->qp_limits()), 10 * kSecond).ok());
  // No ready_to_use: the RTU does not reach the server.
  const char text[] = "before the RTU";
  std::memcpy(client->buf.data(), text, sizeof text);
  ibv_sge sge{reinterpret_cast<std::uint64_t>(client->buf.data()), sizeof text, client->mr->lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(client->post_send(*cq, wr), 0);
  auto rwc = server->poll(sq, 1);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, IBV_WC_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<const char*>(server->buf.data()), text);
  std::printf("server: REP sent %llu times before the SEND's first packet\n",
              static_cast<unsigned long long>(server->cms->counters().at("cm_tx_msgs.REP")));
  const bool established = server->wait_for(RdmaCmEventType::Established, 10 * kSecond).has_value();
  auto sc = server->cms->counters();
  if (!established)
    for (const auto& [k, v] : sc)
      if (v) std::fprintf(stderr, "server %s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
  ASSERT_TRUE(established);
  EXPECT_EQ(sc.at("cm_agent_established_by_traffic"), 1u);
  EXPECT_EQ(sc.at("cm_rx_msgs.RTU"), 0u);
  EXPECT_EQ(sc.at("rej_sent.timeout"), 0u);
  // Two REP timeouts later: no REP was sent again (its timer stopped), nothing rejected.
  const std::uint64_t reps = sc.at("cm_tx_msgs.REP");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  sc = server->cms->counters();
  EXPECT_EQ(sc.at("cm_tx_msgs.REP"), reps);
  EXPECT_FALSE(server->wait_for(RdmaCmEventType::ConnectError, 0));
  EXPECT_FALSE(server->wait_for(RdmaCmEventType::Rejected, 0));
  EXPECT_EQ(client->poll(*cq, 1).size(), 1u);

  // The RTU comes late (a duplicate for the server), then an ordinary disconnect.
  ASSERT_TRUE(client->cms->ready_to_use(*id).ok());
  ASSERT_TRUE(client->wait_for(RdmaCmEventType::Established, 10 * kSecond));
  ASSERT_TRUE(client->cms->disconnect(*id).ok());
  EXPECT_TRUE(client->wait_for(RdmaCmEventType::Disconnected, 10 * kSecond));
  EXPECT_TRUE(server->wait_for(RdmaCmEventType::Disconnected, 10 * kSecond));
  EXPECT_TRUE(client->wait_for(RdmaCmEventType::TimewaitExit, 10 * kSecond));
  EXPECT_TRUE(server->wait_for(RdmaCmEventType::TimewaitExit, 10 * kSecond));
  EXPECT_TRUE(client->conn.destroy(*cq).ok());
  EXPECT_TRUE(server->conn.destroy(sq).ok());
  sc = server->cms->counters();
  EXPECT_EQ(sc.at("established"), 1u);
  EXPECT_EQ(server->cms->live_ids(), 0u);
}

}  // namespace
}  // namespace roce::test::cm_lossy_test
