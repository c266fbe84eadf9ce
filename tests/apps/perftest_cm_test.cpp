// perftest -R in one process over a net_ring pair: roce-gen's client (run_perftest_client with
// rdma_cm) against roce-appliance's perftest listener (CmListeners, --rdma-cm perftest) and an
// OobServer session on the control channel, as roce-appliance runs it. Each test: the control
// connection, the two zeroed syncs around the data QPs' rdma_cm connections, the exchange as
// 56-byte records and raw fields one SEND each, the traffic, the data connections' DREQs and
// the control connection's end, with nothing left on either side. The real programs are the
// interop suite's (tests/interop/lib/perftest_cm.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "apps/appliance/cm_listeners.hpp"
#include "client/oob_server.hpp"
#include "client/perftest_client.hpp"
#include "client/perftest_server_print.hpp"
#include "tests/support/dataplane_pair.hpp"

namespace roce::test::perftest_cm_test {
namespace {

using namespace roce::client;

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

class PerftestCm : public DataplanePairTest {
 protected:
  explicit PerftestCm(proto::IpVersion family = proto::IpVersion::V4)
      : DataplanePairTest(family == proto::IpVersion::V4 ? "pcm" : "pc6", family) {}
  void SetUp() override {
    DataplanePairTest::SetUp();
    server_drivers = std::make_unique<DriverSet>(*server_dp_);
    server_conn = std::make_unique<Connector>(*server_dp_, 0x77);
    auto ex = MappedBuffer::anonymous(4 << 20);
    auto rv = MappedBuffer::anonymous(4 << 20);
    ASSERT_TRUE(ex.ok() && rv.ok());
    exposed = std::move(*ex);
    recv = std::move(*rv);
    auto emr = server_conn->register_memory(exposed.data(), exposed.size(), kAll);
    auto rmr = server_conn->register_memory(recv.data(), recv.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(emr.ok() && rmr.ok());
    exposed_mr = *emr;
    recv_mr = *rmr;
    auto parsed = parse_cm_listeners("perftest");
    ASSERT_TRUE(parsed.ok());
    parsed->selective_repeat = server_selective_repeat;
    PerftestCmServe serve;
    serve.qp.type = qp_type;
    serve.ud_qpn_message = served && (served->measure == Measure::Latency || served->duplex);
    serve.start_session = [this](std::shared_ptr<CmChannel> ch, std::shared_ptr<PerftestCmQps> qps) {
      ServerConfig cfg;
      cfg.qp.type = qp_type;
      cfg.exposed = LocalBuffer{exposed.data(), exposed.size(), exposed_mr->lkey()};
      cfg.recv_region = LocalBuffer{recv.data(), recv.size(), recv_mr->lkey()};
      cfg.test = served;
      const Nanos wait = qp_type == IBV_QPT_UD ? 5 * kSecond : 0;
      cfg.cm_qp = [qps, wait](std::uint32_t qpn) { return qps->take(qpn, wait); };
      cfg.cm_sync = [qps] { qps->synced(); };
      std::lock_guard lock(mutex);
      sessions.emplace_back([this, cfg, ch, qps] {
        Result<SessionReport> r = make_error(EINVAL, "not run");
        {
          OobServer server(*server_conn, *server_drivers, cfg);
          r = server.serve(*ch, stop);
        }
        for (const LocalQp& q : qps->close()) (void)server_conn->destroy(q);
        std::lock_guard l(mutex);
        reports.push_back(std::move(r));
      });
    };
    listeners = std::make_unique<CmListeners>(*server_dp_, *server_drivers, *server_conn, *parsed, nullptr, std::move(serve));
    ASSERT_TRUE(listeners->start().ok());
  }
  void TearDown() override {
    stop = true;
    for (auto& t : sessions) t.join();
    listeners.reset();
    if (exposed_mr) server_dp_->memory().deregister(exposed_mr->rkey());
    if (recv_mr) server_dp_->memory().deregister(recv_mr->rkey());
    server_conn.reset();
    server_drivers.reset();
    DataplanePairTest::TearDown();
  }

  Result<ClientRun> run(Verb v, Measure m, std::uint32_t size, std::uint64_t iters, unsigned qps = 1) {
    ClientOptions o;
    o.server = to_string(host_ip(2));
    o.port = 18515;
    o.spec.verb = v;
    o.spec.measure = m;
    o.spec.size = size;
    o.spec.iters = iters;
    o.spec.tx_depth = m == Measure::Latency ? 1 : 32;
    o.qps = qps;
    o.rdma_cm = true;
    o.qp.type = qp_type;
    o.oob_timeout_ms = 5'000;
    o.selective_repeat = client_selective_repeat;
    auto r = run_perftest_client(*client_dp_, o, nullptr);
    if (!r.ok())
      for (const auto& [k, v] : listeners->cm_counters())
        if (v) std::fprintf(stderr, "server %s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
    return r;
  }
  // The server's session ends once the client's control connection is gone.
  Result<SessionReport> report() {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(mutex);
        if (!reports.empty()) return reports.back();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return make_error(ETIMEDOUT, "no session report");
  }

  std::unique_ptr<DriverSet> server_drivers;
  std::unique_ptr<Connector> server_conn;
  std::unique_ptr<CmListeners> listeners;
  MappedBuffer exposed, recv;
  const rdma::MemoryRegion* exposed_mr = nullptr;
  const rdma::MemoryRegion* recv_mr = nullptr;
  std::optional<ServedTest> served;
  ibv_qp_type qp_type = IBV_QPT_RC;  // both sides' -c
  std::uint32_t client_selective_repeat = 0;  // the window the data QPs' REQs offer
  std::uint32_t server_selective_repeat = 0;  // ... and the listener's REPs accept
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<std::thread> sessions;
  std::vector<Result<SessionReport>> reports;
};

TEST_F(PerftestCm, WriteBandwidthTwoQpsConnectThroughRdmaCm) {
  auto r = run(Verb::Write, Measure::Bandwidth, 4096, 200, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->bw.size(), 1u);
  EXPECT_EQ(r->bw[0].iterations, 400u);  // both QPs
  EXPECT_EQ(r->counters.errors, 0u);
  auto rep = report();
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->qps, 2u);
  ASSERT_TRUE(rep->client_results.has_value());
  EXPECT_EQ(rep->client_results->size, 4096u);
  // The records each side got are the other's data QPs (the ones rdma_cm connected).
  ASSERT_EQ(r->remote.size(), 2u);
  EXPECT_EQ(rep->records.size(), 2u);
  const auto t = listeners->totals();
  EXPECT_EQ(t.perftest_sessions, 1u);
  EXPECT_EQ(t.perftest_qps, 2u);
  // The server's printout says what perftest -R's server says about the exchange.
  const std::string printed = perftest_server_printout(*rep, ServerPrintSettings{});
  EXPECT_NE(printed.find(" rdma_cm QPs\t : ON\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find(" Data ex. method : rdma_cm\n"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("Data ex. method : Ethernet"), std::string::npos) << printed;
}

// Selective repeat over rdma_cm: the data QPs' REQs offer it in their ECE, the listener's REPs
// answer with the smaller window; a listener that does not do it answers with no ECE.
class PerftestCmSelectiveRepeat : public PerftestCm {
 protected:
  void SetUp() override {
    server_selective_repeat = 32;
    PerftestCm::SetUp();
  }
};

TEST_F(PerftestCmSelectiveRepeat, TheDataQpsAgreeOnItInTheirReqAndRep) {
  client_selective_repeat = 64;
  auto r = run(Verb::Write, Measure::Bandwidth, 65536, 100, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 32u);
  EXPECT_EQ(r->bw[0].iterations, 200u);
  EXPECT_EQ(r->counters.errors, 0u);
  ASSERT_TRUE(report().ok());
}

TEST_F(PerftestCmSelectiveRepeat, AClientThatOffersNothingGetsGoBackN) {
  auto r = run(Verb::Write, Measure::Bandwidth, 4096, 100, 1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 0u);
  EXPECT_EQ(r->counters.errors, 0u);
}

TEST_F(PerftestCm, AListenerThatDoesNotDoSelectiveRepeatGivesGoBackN) {
  client_selective_repeat = 64;
  auto r = run(Verb::Write, Measure::Bandwidth, 4096, 100, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 0u);
  EXPECT_EQ(r->counters.errors, 0u);
  EXPECT_EQ(r->counters.sacks_received, 0u);
}

TEST_F(PerftestCm, ReadAndSendBandwidthAndReadLatency) {
  {
    auto r = run(Verb::Read, Measure::Bandwidth, 8192, 100);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->bw.at(0).iterations, 100u);
  }
  {
    auto r = run(Verb::Send, Measure::Bandwidth, 1024, 100);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->bw.at(0).iterations, 100u);
  }
  {
    auto r = run(Verb::Read, Measure::Latency, 64, 50);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->lat.size(), 1u);
  }
  for (int i = 0; i < 300 && listeners->totals().perftest_sessions < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(listeners->totals().perftest_sessions, 3u);
}

// perftest -c UD -R: the data QPs resolved by SIDR in the UDP port space (the control channel
// stays RC), SENDs with rdma_cm's Q_Key; a bandwidth client sends no QPN (the session takes the
// QPs in order), a latency client SENDs its QPN as immediate data first.
class PerftestCmUd : public PerftestCm {
 protected:
  void SetUp() override {
    qp_type = IBV_QPT_UD;
    PerftestCm::SetUp();
  }
};

TEST_F(PerftestCmUd, SendBandwidthTwoQpsResolvedBySidr) {
  auto r = run(Verb::Send, Measure::Bandwidth, 1024, 200, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->bw.size(), 1u);
  EXPECT_EQ(r->bw[0].iterations, 400u);
  EXPECT_EQ(r->counters.errors, 0u);
  auto rep = report();
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->qps, 2u);
  // Every datagram arrived with the Q_Key the SIDR_REP gave (a wrong one is dropped).
  EXPECT_EQ(rep->received_messages, 400u);
  const auto t = listeners->totals();
  EXPECT_EQ(t.perftest_sessions, 1u);
  EXPECT_EQ(t.perftest_qps, 2u);
  const auto c = listeners->cm_counters();
  EXPECT_GE(c.at("cm_rx_msgs.SIDR_REQ"), 2u);
  const std::string printed = perftest_server_printout(*rep, ServerPrintSettings{});
  EXPECT_NE(printed.find(" Connection type : UD"), std::string::npos) << printed;
}

class PerftestCmUdLatency : public PerftestCm {
 protected:
  void SetUp() override {
    qp_type = IBV_QPT_UD;
    served = ServedTest{};
    served->verb = Verb::Send;
    served->measure = Measure::Latency;
    PerftestCm::SetUp();
  }
};

TEST_F(PerftestCmUdLatency, SendLatencyClientSendsItsQpnFirst) {
  auto r = run(Verb::Send, Measure::Latency, 64, 100);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->lat.size(), 1u);
  auto rep = report();
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  // The QPN message is the listener's; the session echoed every one of the client's SENDs.
  EXPECT_EQ(rep->received_messages, 100u);
}

// -R over IPv6: the cma_hdr carries both IPv6 addresses, the path the IPv6 GIDs, the peers
// found by neighbour discovery; RC data QPs connected and UD ones resolved by SIDR.
class PerftestCmV6 : public PerftestCm {
 protected:
  PerftestCmV6() : PerftestCm(proto::IpVersion::V6) {}
};

TEST_F(PerftestCmV6, WriteBandwidthTwoQpsConnectOverIpv6) {
  auto r = run(Verb::Write, Measure::Bandwidth, 4096, 100, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->bw.at(0).iterations, 200u);
  EXPECT_EQ(r->counters.errors, 0u);
  auto rep = report();
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->qps, 2u);
}

class PerftestCmUdV6 : public PerftestCmV6 {
 protected:
  void SetUp() override {
    qp_type = IBV_QPT_UD;
    PerftestCmV6::SetUp();
  }
};

TEST_F(PerftestCmUdV6, SendBandwidthResolvedBySidrOverIpv6) {
  auto r = run(Verb::Send, Measure::Bandwidth, 1024, 100);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->bw.at(0).iterations, 100u);
  auto rep = report();
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->received_messages, 100u);
}

}  // namespace
}  // namespace roce::test::perftest_cm_test
