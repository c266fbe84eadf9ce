// rdma_cm between two engines: two dataplanes on a net_ring pair, each with its CM agent on
// worker 0 (client/cm_service.hpp). A client connects through REQ/REP/RTU with the QP
// attributes the exchange decides, SENDs and WRITEs data the server checks, and disconnects;
// both sides reach TIMEWAIT's end with no ID left. Then what lost MADs and refusals give: a
// REQ nobody answers is retransmitted and ends UNREACHABLE, a port nobody listens on gets REJ
// "invalid service ID", a full accept queue rejects, and a stopping service sends DREQ.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "client/buffers.hpp"
#include "client/cm_service.hpp"
#include "client/connector.hpp"
#include "tests/apps/cm_side.hpp"
#include "tests/support/dataplane_pair.hpp"

namespace roce::test::cm_service_test {
namespace {

using cm::RdmaCmEvent;
using cm::RdmaCmEventType;
using proto::RdmaPortSpace;

class CmServicePair : public DataplanePairTest {
 protected:
  CmServicePair() : DataplanePairTest("cms") {}
  void SetUp() override {
    DataplanePairTest::SetUp();
    client = std::make_unique<Side>(*client_dp_, 0x1234);
    server = std::make_unique<Side>(*server_dp_, 0x5678);
  }
  void TearDown() override {
    client.reset();
    server.reset();
    DataplanePairTest::TearDown();
  }

  cm::RdmaConnectParams connect_params(const client::LocalQp& q, std::uint16_t port, std::uint8_t retries = 15) {
    return short_timer_request(q, port, retries);
  }
  client::LocalQp serve_one(std::uint32_t recv_len) { return server->serve_one(recv_len); }

  std::unique_ptr<Side> client, server;
};

TEST_F(CmServicePair, ConnectExchangeDataAndDisconnect) {
  client->start_cm();
  server->start_cm();
  ASSERT_TRUE(server->cms->listen(RdmaPortSpace::Tcp, 7174).ok());
  auto cq = client->conn.create(client::QpParams{});
  ASSERT_TRUE(cq.ok());
  cm::RdmaConnectParams cp = connect_params(*cq, 7174);
  auto id = client->cms->connect(cp);
  ASSERT_TRUE(id.ok()) << id.error().message;

  const client::LocalQp sq = serve_one(kBuf);
  ASSERT_NE(sq.qp, nullptr);
  auto rep = client->wait_for(RdmaCmEventType::ConnectResponse);
  ASSERT_TRUE(rep);
  const auto& rinfo = std::get<cm::RepInfo>(rep->detail);
  EXPECT_EQ(rinfo.remote_qpn, sq.qpn);
  EXPECT_EQ(rinfo.starting_psn, sq.psn);  // the server receives from the client with the PSN its REP carried
  const cm::CmQpAttrs a = cm::active_qp_attrs(cp.ib, rinfo, client->cms->qp_limits());
  EXPECT_EQ(a.rtr.mtu, IBV_MTU_1024);
  EXPECT_EQ(a.rts.max_rd_atomic, 1);
  const Status cs = client->cms->connect_qp(*cq, IBV_QPT_RC, a);
  ASSERT_TRUE(cs.ok()) << cs.error().message;
  ASSERT_TRUE(client->cms->ready_to_use(*id).ok());
  ASSERT_TRUE(client->wait_for(RdmaCmEventType::Established));
  auto est = server->wait_for(RdmaCmEventType::Established);
  ASSERT_TRUE(est);

  // A SEND into the server's receive, then a WRITE into its region.
  std::memcpy(client->buf.data(), "rdma_cm over QP1", 17);
  ibv_sge sge{reinterpret_cast<std::uint64_t>(client->buf.data()), 17, client->mr->lkey()};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(client->post_send(*cq, wr), 0);
  auto rwc = server->poll(sq, 1);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rwc[0].byte_len, 17u);
  EXPECT_STREQ(reinterpret_cast<const char*>(server->buf.data()), "rdma_cm over QP1");

  for (std::size_t i = 0; i < 2048; ++i) client->buf.data()[i] = static_cast<std::byte>(i * 7);
  sge.length = 2048;
  wr.wr_id = 2;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = server->mr->iova + 1024;
  wr.wr.rdma.rkey = server->mr->rkey();
  ASSERT_EQ(client->post_send(*cq, wr), 0);
  auto swc = client->poll(*cq, 2);
  ASSERT_EQ(swc.size(), 2u);
  for (const auto& w : swc) EXPECT_EQ(w.status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(server->buf.data() + 1024, client->buf.data(), 2048), 0);

  // Disconnect: DREQ/DREP, DISCONNECTED on both sides, then TIMEWAIT ends and no ID is left.
  ASSERT_TRUE(client->cms->disconnect(*id).ok());
  EXPECT_TRUE(client->wait_for(RdmaCmEventType::Disconnected));
  EXPECT_TRUE(server->wait_for(RdmaCmEventType::Disconnected));
  EXPECT_TRUE(client->wait_for(RdmaCmEventType::TimewaitExit));
  EXPECT_TRUE(server->wait_for(RdmaCmEventType::TimewaitExit));
  EXPECT_EQ(client->cms->live_ids(), 0u);
  EXPECT_EQ(server->cms->live_ids(), 0u);

  const auto cc = client->cms->counters();
  const auto sc = server->cms->counters();
  EXPECT_GE(cc.at("gsi_rx_mads"), 2u);  // REP, DREP
  EXPECT_GE(sc.at("gsi_rx_mads"), 3u);  // REQ, RTU, DREQ
  EXPECT_EQ(cc.at("gsi_bad_qkey") + sc.at("gsi_bad_qkey") + cc.at("cm_agent_no_route") + sc.at("cm_agent_no_route"), 0u);
  EXPECT_TRUE(client->conn.destroy(*cq).ok());
  EXPECT_TRUE(server->conn.destroy(sq).ok());
}

TEST_F(CmServicePair, RequestNobodyAnswersIsRetransmittedThenUnreachable) {
  // The server runs no CM agent, so it has no QP1: its engine drops every REQ as a packet for an
  // unknown QP, and every REQ is lost as far as the client can tell.
  client->start_cm();
  auto cq = client->conn.create(client::QpParams{});
  ASSERT_TRUE(cq.ok());
  auto cp = connect_params(*cq, 7174, 3);
  auto id = client->cms->connect(cp);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto un = client->wait_for(RdmaCmEventType::Unreachable);
  ASSERT_TRUE(un);
  EXPECT_EQ(un->id, *id);
  const auto c = client->cms->counters();
  EXPECT_EQ(c.at("cm_tx_msgs.REQ"), 4u);  // the REQ and its 3 retries
  EXPECT_EQ(c.at("cm_tx_retries.REQ"), 3u);
  EXPECT_EQ(c.at("req_timeouts"), 1u);
  const std::uint64_t dropped = server_dp_->call(0, [](rdma::Engine& e) { return e.drops(rdma::EngineDrop::UnknownQp); });
  EXPECT_EQ(dropped, 5u);  // and the REJ "timeout" that gives up (IBA 12.6.5)
  EXPECT_EQ(c.at("cm_tx_msgs.REJ"), 1u);
  EXPECT_EQ(client->cms->live_ids(), 0u);
  EXPECT_TRUE(client->conn.destroy(*cq).ok());
}

TEST_F(CmServicePair, PortNobodyListensOnIsRejectedAsInvalidServiceId) {
  client->start_cm();
  server->start_cm();
  ASSERT_TRUE(server->cms->listen(RdmaPortSpace::Tcp, 7174).ok());
  auto cq = client->conn.create(client::QpParams{});
  ASSERT_TRUE(cq.ok());
  auto cp = connect_params(*cq, 7175);
  ASSERT_TRUE(client->cms->connect(cp).ok());
  auto rej = client->wait_for(RdmaCmEventType::Rejected);
  ASSERT_TRUE(rej);
  EXPECT_EQ(rej->status, static_cast<std::uint16_t>(proto::RejReason::InvalidServiceId));
  EXPECT_EQ(server->cms->counters().at("req_no_listener"), 1u);
  EXPECT_TRUE(client->conn.destroy(*cq).ok());
}

TEST_F(CmServicePair, FullAcceptQueueRejectsTheRequestBeyondIt) {
  client->start_cm();
  server->start_cm();
  ASSERT_TRUE(server->cms->listen(RdmaPortSpace::Tcp, 7471, 1).ok());
  auto q1 = client->conn.create(client::QpParams{});
  auto q2 = client->conn.create(client::QpParams{});
  ASSERT_TRUE(q1.ok() && q2.ok());
  auto cp1 = connect_params(*q1, 7471), cp2 = connect_params(*q2, 7471);
  auto id1 = client->cms->connect(cp1);
  ASSERT_TRUE(id1.ok());
  // The first request waits for the server's decision; the second finds the queue full.
  auto first = server->wait_for(RdmaCmEventType::ConnectRequest);
  ASSERT_TRUE(first);
  auto id2 = client->cms->connect(cp2);
  ASSERT_TRUE(id2.ok());
  auto rej = client->wait_for(RdmaCmEventType::Rejected);
  ASSERT_TRUE(rej);
  EXPECT_EQ(rej->id, *id2);
  EXPECT_EQ(rej->status, static_cast<std::uint16_t>(proto::RejReason::ConsumerDefined));
  EXPECT_FALSE(server->wait_for(RdmaCmEventType::ConnectRequest, 50 * kMilli));
  EXPECT_EQ(server->cms->counters().at("cm_agent_accept_queue_full"), 1u);
  ASSERT_TRUE(server->cms->reject(first->id).ok());
  EXPECT_TRUE(client->wait_for(RdmaCmEventType::Rejected));
  EXPECT_TRUE(client->conn.destroy(*q1).ok());
  EXPECT_TRUE(client->conn.destroy(*q2).ok());
}

TEST_F(CmServicePair, StoppingServiceSendsDreqForEveryLiveConnection) {
  client->start_cm();
  server->start_cm();
  ASSERT_TRUE(server->cms->listen(RdmaPortSpace::Tcp, 7174).ok());
  auto cq = client->conn.create(client::QpParams{});
  ASSERT_TRUE(cq.ok());
  cm::RdmaConnectParams cp = connect_params(*cq, 7174);
  auto id = client->cms->connect(cp);
  ASSERT_TRUE(id.ok());
  const client::LocalQp sq = serve_one(64);
  auto rep = client->wait_for(RdmaCmEventType::ConnectResponse);
  ASSERT_TRUE(rep);
  ASSERT_TRUE(client->cms->connect_qp(*cq, IBV_QPT_RC,
                                      cm::active_qp_attrs(cp.ib, std::get<cm::RepInfo>(rep->detail), client->cms->qp_limits())).ok());
  ASSERT_TRUE(client->cms->ready_to_use(*id).ok());
  ASSERT_TRUE(server->wait_for(RdmaCmEventType::Established));

  server->cms->stop();  // the appliance stops
  auto d = client->wait_for(RdmaCmEventType::Disconnected);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id, *id);
  EXPECT_EQ(server->cms->counters().at("cm_tx_msgs.DREQ"), 1u);
  EXPECT_TRUE(client->conn.destroy(*cq).ok());
  EXPECT_TRUE(server->conn.destroy(sq).ok());
}

}  // namespace
}  // namespace roce::test::cm_service_test
