// roce-gen's rdma_cm clients against roce-appliance's --rdma-cm listeners, in one process over
// a net_ring pair: rping rounds with -V (the server READs the client's buffer and WRITEs it
// back; the client checks every byte) and ucmatose's messages both ways, each connection
// established through QP1 and ended by DREQ; udaddy's datagrams both ways after SIDR;
// rdma_client's one 16-byte inline SEND and rdma_server's one back, then the server's DREQ
// (rdma_server on 7472 beside ucmatose on 7471). The real programs are the interop suite's
// (tests/interop/lib/rdmacm.sh); this pins both of our sides to each other.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "apps/appliance/cm_listeners.hpp"
#include "apps/gen/cm_clients.hpp"
#include "tests/support/dataplane_pair.hpp"

namespace roce::test::cm_tools_test {
namespace {

class CmTools : public DataplanePairTest {
 protected:
  explicit CmTools(proto::IpVersion family = proto::IpVersion::V4)
      : DataplanePairTest(family == proto::IpVersion::V4 ? "cmt" : "cm6", family) {}
  void SetUp() override {
    DataplanePairTest::SetUp();
    server_drivers = std::make_unique<client::DriverSet>(*server_dp_);
    server_conn = std::make_unique<client::Connector>(*server_dp_, 0x77);
    auto parsed = client::parse_cm_listeners("all");
    ASSERT_TRUE(parsed.ok());
    client::CmListenOptions lo = *parsed;
    lo.messages = 10;
    lo.message_size = 100;
    lo.selective_repeat = server_selective_repeat;
    listeners = std::make_unique<client::CmListeners>(*server_dp_, *server_drivers, *server_conn, lo);
    ASSERT_TRUE(listeners->start().ok());
    client_drivers = std::make_unique<client::DriverSet>(*client_dp_);
    client_conn = std::make_unique<client::Connector>(*client_dp_, 0x99);
    client_cm = std::make_unique<client::CmService>(*client_dp_, *client_drivers);
  }
  void TearDown() override {
    client_cm.reset();
    listeners.reset();
    client_conn.reset();
    server_conn.reset();
    client_drivers.reset();
    server_drivers.reset();
    DataplanePairTest::TearDown();
  }
  // The server counts a connection once its client's DREQ came.
  client::CmListeners::Totals settled_totals(std::uint64_t completed) {
    client::CmListeners::Totals t;
    for (int i = 0; i < 300; ++i) {
      t = listeners->totals();
      if (t.completed + t.failed >= completed) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return t;
  }
  client::CmClientOptions client(const std::string& tool) {
    client::CmClientOptions o;
    o.tool = tool;
    o.server = host_ip(2);
    o.timeout = 5 * kSecond;
    return o;
  }

  std::uint32_t server_selective_repeat = 0;  // what the listeners accept (the appliance's default: 128)
  std::unique_ptr<client::DriverSet> server_drivers, client_drivers;
  std::unique_ptr<client::Connector> server_conn, client_conn;
  std::unique_ptr<client::CmListeners> listeners;
  std::unique_ptr<client::CmService> client_cm;
  std::vector<std::string> said;
  std::function<void(const std::string&)> say = [this](const std::string& l) { said.push_back(l); };
};

TEST_F(CmTools, RpingRoundsAreReadAndWrittenBackVerified) {
  auto o = client("rping");
  o.count = 5;
  o.size = 4000;  // several packets each way at MTU 1024
  o.verify = true;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rounds, 5u);
  EXPECT_EQ(r->mismatches, 0u);
  const auto t = settled_totals(1);
  EXPECT_EQ(t.connections, 1u);
  EXPECT_EQ(t.completed, 1u);
  EXPECT_EQ(t.failed, 0u);
  EXPECT_EQ(t.rping_rounds, 5u);
}

TEST_F(CmTools, AServerThatDoesNotAgreeGivesGoBackN) {
  auto o = client("rping");  // offers selective repeat (the default window, 128)
  o.count = 2;
  o.verify = true;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 0u);
  EXPECT_EQ(r->mismatches, 0u);
}

// roce-gen's rping and ucmatose offer selective repeat in their REQ's ECE; the appliance's
// listeners agree (docs/loss.md, part 2).
class CmToolsSelectiveRepeat : public CmTools {
 protected:
  CmToolsSelectiveRepeat() { server_selective_repeat = 32; }
};

TEST_F(CmToolsSelectiveRepeat, RpingAndUcmatoseAgreeOnItAndRunVerified) {
  auto o = client("rping");
  o.count = 5;
  o.size = 4000;
  o.verify = true;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 32u);  // the smaller of the two windows
  EXPECT_EQ(r->rounds, 5u);
  EXPECT_EQ(r->mismatches, 0u);
  auto u = client::run_cm_client(*client_dp_, *client_cm, *client_conn, client("ucmatose"), say);
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->selective_repeat, 32u);
  EXPECT_EQ(u->messages_received, 10u);
  auto quiet = client("rping");
  quiet.selective_repeat = 0;  // offers nothing: go-back-N
  quiet.count = 1;
  auto g = client::run_cm_client(*client_dp_, *client_cm, *client_conn, quiet, say);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->selective_repeat, 0u);
  EXPECT_EQ(settled_totals(3).completed, 3u);
}

TEST_F(CmTools, RpingSizeAboveRpingsLargestIsRefusedBeforeConnecting) {
  // rping takes -S up to 65535 and refuses more itself; so does roce-gen rping.
  auto o = client("rping");
  o.size = 70000;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("rping -S"), std::string::npos);
}

TEST_F(CmTools, UcmatoseMessagesGoBothWaysAndTheServerDisconnects) {
  auto o = client("ucmatose");
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages_received, 10u);
  EXPECT_EQ(r->messages_sent, 10u);
  ASSERT_FALSE(said.empty());
  EXPECT_EQ(said.back(), "disconnected");
  const auto t = settled_totals(1);
  EXPECT_EQ(t.completed, 1u);
  EXPECT_EQ(t.messages_sent, 10u);
  EXPECT_EQ(t.messages_received, 10u);
}

TEST_F(CmTools, UdaddyDatagramsGoBothWaysAfterSidr) {
  auto o = client("udaddy");
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages_sent, 10u);
  EXPECT_EQ(r->messages_received, 10u);
  const auto t = settled_totals(1);
  EXPECT_EQ(t.completed, 1u);
  EXPECT_EQ(t.datagrams, 20u);
  // SIDR leaves no connection state behind on either side.
  EXPECT_EQ(client_cm->live_ids(), 0u);
}

TEST_F(CmTools, RdmaClientSendsSixteenBytesInlineAndGetsRdmaServersSixteenBack) {
  auto o = client("rdma_client");
  o.port = 7472;  // rdma_server's port beside ucmatose's 7471
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages_sent, 1u);
  EXPECT_EQ(r->messages_received, 1u);
  ASSERT_FALSE(said.empty());
  EXPECT_EQ(said.back(), "rdma_client: end 0");
  const auto t = settled_totals(1);
  EXPECT_EQ(t.connections, 1u);
  EXPECT_EQ(t.completed, 1u);
  EXPECT_EQ(t.failed, 0u);
  EXPECT_EQ(t.rdma_server_exchanges, 1u);
}

TEST_F(CmTools, RdmaClientAgainstUcmatosesServerReportsTheOversizedMessage) {
  // 7471 is ucmatose's here: its server sends 10 messages of 100 bytes into rdma_client's one
  // 16-byte receive, which the client must report, not take as rdma_server's answer.
  auto o = client("rdma_client");
  o.timeout = 2 * kSecond;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("work completion error"), std::string::npos) << r.error().message;
}

TEST(CmListenerNames, PortsAndClashes) {
  auto one = client::parse_cm_listeners("rdma_server");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->rdma_server_port, 7471);  // alone: rdma_server's own default
  auto both = client::parse_cm_listeners("ucmatose,rdma_server");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->ucmatose_port, 7471);
  EXPECT_EQ(both->rdma_server_port, 7472);
  auto moved = client::parse_cm_listeners("ucmatose:7000,rdma_server");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->rdma_server_port, 7471);
  auto chosen = client::parse_cm_listeners("rping:9000,rdma_server:9001");
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->rping_port, 9000);
  EXPECT_EQ(chosen->rdma_server_port, 9001);
  EXPECT_FALSE(client::parse_cm_listeners("ucmatose,rdma_server:7471").ok());
  EXPECT_FALSE(client::parse_cm_listeners("rping:0").ok());
  EXPECT_FALSE(client::parse_cm_listeners("rping:70000").ok());
  EXPECT_FALSE(client::parse_cm_listeners("rping:7x").ok());
  EXPECT_FALSE(client::parse_cm_listeners("all:1").ok());
  auto bad = client::parse_cm_listeners("rdma_srv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("rdma_srv"), std::string::npos);
}

TEST_F(CmTools, UnknownPortIsRejected) {
  auto o = client("rping");
  o.port = 7999;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("reason 8"), std::string::npos) << r.error().message;
}

// The same clients over IPv6: the cma_hdr with both IPv6 addresses, IPv6 GIDs in the REQ's
// path and the SIDR AH, MADs and data over IPv6 to a peer found by neighbour discovery.
class CmToolsV6 : public CmTools {
 protected:
  CmToolsV6() : CmTools(proto::IpVersion::V6) {}
};

TEST_F(CmToolsV6, RpingRoundsVerifiedOverIpv6) {
  auto o = client("rping");
  o.count = 3;
  o.size = 4000;
  o.verify = true;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rounds, 3u);
  EXPECT_EQ(r->mismatches, 0u);
  EXPECT_EQ(settled_totals(1).completed, 1u);
}

TEST_F(CmToolsV6, UdaddyDatagramsBothWaysAfterSidrOverIpv6) {
  auto o = client("udaddy");
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, say);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages_sent, 10u);
  EXPECT_EQ(r->messages_received, 10u);
  EXPECT_EQ(settled_totals(1).datagrams, 20u);
}

}  // namespace
}  // namespace roce::test::cm_tools_test
