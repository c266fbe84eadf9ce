// The /rocev2/ telemetry commands, read over DPDK's telemetry socket the way
// dpdk-telemetry.py reads it, against the engines' own counters and the JSON report.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "dataplane/telemetry.hpp"
#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/dataplane/telemetry_client.hpp"
#include "tests/support/json.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::telemetry_test {
namespace {

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// Every key of `expected` is in `actual` with the same value (recursively).
void expect_contains(const Json& expected, const Json& actual, const std::string& path) {
  if (expected.is_object()) {
    ASSERT_TRUE(actual.is_object()) << path;
    for (const auto& [k, v] : expected.object()) {
      ASSERT_TRUE(actual.has(k)) << path << "." << k << " missing";
      expect_contains(v, actual[k], path + "." + k);
    }
  } else if (expected.is_number()) {
    ASSERT_TRUE(actual.is_number()) << path;
    EXPECT_EQ(expected.num(), actual.num()) << path;
  } else if (expected.is_string()) {
    ASSERT_TRUE(actual.is_string()) << path;
    EXPECT_EQ(expected.str(), actual.str()) << path;
  } else if (expected.is_array()) {
    ASSERT_TRUE(actual.is_array()) << path;
    ASSERT_EQ(expected.array().size(), actual.array().size()) << path;
    for (std::size_t i = 0; i < expected.array().size(); ++i)
      expect_contains(expected.array()[i], actual.array()[i], path + "[" + std::to_string(i) + "]");
  }
}

void expect_counters(const Json& j, const rdma::Counters& c, const std::string& what) {
  for (std::size_t k = 0; k < rdma::kCounterCount; ++k) {
    const std::string name(rdma::counter_name(static_cast<rdma::Counter>(k)));
    ASSERT_TRUE(j.has(name)) << what << " lacks " << name;
    EXPECT_EQ(j[name].u64(), c.values()[k]) << what << " " << name;
  }
}

void expect_engine(const Json& j, const rdma::Engine& e, const std::string& what) {
  EXPECT_EQ(j["received"].u64(), e.received()) << what;
  for (std::size_t i = 0; i < static_cast<std::size_t>(rdma::EngineDrop::Count); ++i)
    EXPECT_EQ(j["drops"][to_string(static_cast<rdma::EngineDrop>(i))].u64(), e.drops(static_cast<rdma::EngineDrop>(i))) << what;
  for (std::size_t i = 1; i < static_cast<std::size_t>(proto::ParseError::Count); ++i) {
    const auto pe = static_cast<proto::ParseError>(i);
    std::string name = proto::to_string(pe);  // telemetry names take '_' for '-'
    std::replace(name.begin(), name.end(), '-', '_');
    EXPECT_EQ(j["parse_drops"][name].u64(), e.parse_drops(pe)) << what;
  }
  expect_counters(j["counters"], e.total_counters(), what);
}

void expect_qp(const Json& j, const rdma::QueuePair& qp, const std::string& what) {
  EXPECT_EQ(j["qpn"].u64(), qp.qpn()) << what;
  EXPECT_EQ(j["state"].str(), to_string(qp.state())) << what;
  EXPECT_EQ(j["type"].str(), "RC") << what;
  EXPECT_EQ(j["dest_qpn"].u64(), qp.config().dest_qpn) << what;
  expect_counters(j["counters"], qp.counters(), what);
  const Json& cc = j["dcqcn"];
  ASSERT_NE(qp.congestion(), nullptr);
  const cc::ReactionPoint& rp = qp.congestion()->reaction_point();
  EXPECT_EQ(cc["enabled"].u64(), 1u) << what;
  EXPECT_EQ(cc["active"].u64(), rp.cc_active() ? 1u : 0u) << what;
  EXPECT_EQ(cc["rc_bps"].u64(), static_cast<std::uint64_t>(std::llround(rp.rc_bps()))) << what;
  EXPECT_EQ(cc["rt_bps"].u64(), static_cast<std::uint64_t>(std::llround(rp.rt_bps()))) << what;
  EXPECT_EQ(cc["alpha_ppm"].u64(), static_cast<std::uint64_t>(std::llround(rp.alpha() * 1e6))) << what;
  EXPECT_EQ(cc["cnp_sent"].u64(), qp.counters().get(rdma::Counter::CnpSent)) << what;
  EXPECT_EQ(cc["cnp_received"].u64(), qp.counters().get(rdma::Counter::CnpReceived)) << what;
  EXPECT_EQ(cc["cnp_ignored"].u64(), qp.counters().get(rdma::Counter::CnpIgnored)) << what;
  EXPECT_EQ(cc["reaction_point"]["cnp_received"].u64(), rp.counters().cnp_received) << what;
  EXPECT_EQ(cc["reaction_point"]["rate_decreases"].u64(), rp.counters().rate_decreases) << what;
  EXPECT_EQ(cc["reaction_point"]["increases_fast_recovery"].u64(), rp.counters().increases_fast_recovery) << what;
  EXPECT_EQ(cc["reaction_point"]["alpha_updates"].u64(), rp.counters().alpha_updates) << what;
  const cc::NpCounters& np = qp.congestion()->notification_point().counters();
  EXPECT_EQ(cc["notification_point"]["ce_packets"].u64(), np.ce_packets) << what;
  EXPECT_EQ(cc["notification_point"]["cnp_sent"].u64(), np.cnp_sent) << what;
}

// One reply of a command: the value under the command's name.
Json ask(TelemetryClient& c, const std::string& cmd) {
  const std::string reply = c.command(cmd);
  EXPECT_FALSE(reply.empty()) << cmd;
  Json j = parse_json(reply);
  const std::string name = cmd.substr(0, cmd.find(','));
  EXPECT_TRUE(j.has(name)) << reply;
  return j[name];
}

class Telemetry : public ::testing::Test {
 protected:
  void SetUp() override {
    PairOptions o;
    o.mode = mode;
    o.workers = workers;
    // Every data packet leaves CE-marked, so both notification points answer with CNPs and
    // both reaction points cut: DCQCN counters and rates are not at their start values.
    o.engine.tuning.congestion.enabled = true;
    o.engine.tuning.congestion.rp = cc::paper_params(25e9);
    o.engine.tuning.data_ecn = proto::Ecn::Ce;
    pair = DataplanePair::create("tel", o);
    ASSERT_NE(pair, nullptr);
    const std::string why = client.connect_to(dp::telemetry_socket_path());
    ASSERT_EQ(why, "") << "the dataplane tests run the EAL with telemetry on";
  }
  void TearDown() override {
    if (pair) pair->expect_no_mbuf_leak();
  }

  // WRITE, READ and SEND of 64 KiB on every connected QP pair, all completed.
  void run_traffic(std::vector<std::pair<Endpoint, Endpoint>>& qps) {
    for (auto& [a, b] : qps) {
      src.emplace_back(65536, std::byte{0x5A});
      remote.emplace_back(65536);
      back.emplace_back(65536);
      recv.emplace_back(65536);
      auto* sm = reg(*a.engine, a.pd, src.back(), IBV_ACCESS_LOCAL_WRITE);
      auto* bm = reg(*a.engine, a.pd, back.back(), IBV_ACCESS_LOCAL_WRITE);
      auto* rm = reg(*b.engine, b.pd, remote.back(), kAll);
      auto* vm = reg(*b.engine, b.pd, recv.back(), IBV_ACCESS_LOCAL_WRITE);
      ibv_sge g = sge(src.back().data(), 65536, sm);
      ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(remote.back().data()), rm->rkey()), 0);
      ibv_sge r = sge(back.back().data(), 65536, bm);
      ASSERT_EQ(post(a, IBV_WR_RDMA_READ, 2, &r, 1, reinterpret_cast<std::uint64_t>(remote.back().data()), rm->rkey()), 0);
      ibv_sge v = sge(recv.back().data(), 65536, vm);
      ASSERT_EQ(post_recv(b, 3, &v, 1), 0);
      ASSERT_EQ(post(a, IBV_WR_SEND, 3, &g, 1), 0);
      std::size_t sends = 0, recvs = 0;
      // Named references: clang 14 (the sanitizer and fuzz builds) cannot capture structured bindings.
      Endpoint& sender = a;
      Endpoint& receiver = b;
      ASSERT_TRUE(pair->step_until([&] {
        for (const ibv_wc& w : drain(sender)) sends += w.status == IBV_WC_SUCCESS;
        for (const ibv_wc& w : drain(receiver)) recvs += w.status == IBV_WC_SUCCESS;
        return sends == 3 && recvs == 1;
      }));
      EXPECT_EQ(remote.back(), src.back());
      EXPECT_EQ(back.back(), src.back());
    }
    pair->step_until([] { return false; }, 2000);  // the last ACKs and CNPs land
    pair->a->publish_stats();
    pair->b->publish_stats();
  }

  dp::Mode mode = dp::Mode::RunToCompletion;
  unsigned workers = 1;
  std::unique_ptr<DataplanePair> pair;
  TelemetryClient client;
  std::vector<std::vector<std::byte>> src, remote, back, recv;
};

TEST_F(Telemetry, GreetingAndCommandListAreDpdkTelemetryV2) {
  const Json g = parse_json(client.greeting());
  EXPECT_GT(g["max_output_len"].u64(), 0u);
  EXPECT_EQ(g["pid"].u64(), static_cast<std::uint64_t>(getpid()));
  const Json cmds = ask(client, "/");
  std::vector<std::string> names;
  for (const Json& c : cmds.array()) names.push_back(c.str());
  for (const char* want : {"/rocev2/dataplanes", "/rocev2/ports", "/rocev2/workers", "/rocev2/engine", "/rocev2/qps", "/rocev2/qp"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST_F(Telemetry, QpEngineWorkerAndPortCommandsMatchTheEngineCounters) {
  QpOptions qo;
  std::vector<std::pair<Endpoint, Endpoint>> qps;
  qps.emplace_back(make_endpoint(pair->a->worker(0).engine(), qo), make_endpoint(pair->b->worker(0).engine(), qo));
  connect_pair(qps[0].first, qps[0].second, qo);
  run_traffic(qps);
  if (HasFatalFailure()) return;
  const std::string an = pair->a->name(), bn = pair->b->name();
  const rdma::QueuePair& qa = *qps[0].first.qp;
  const rdma::QueuePair& qb = *qps[0].second.qp;

  // DCQCN really acted, so the comparisons below are not of zeros.
  ASSERT_GT(qa.counters().get(rdma::Counter::CnpReceived), 0u);
  ASSERT_GT(qa.congestion()->reaction_point().counters().rate_decreases, 0u);
  ASSERT_GT(qb.congestion()->notification_point().counters().cnp_sent, 0u);

  expect_qp(ask(client, "/rocev2/qp," + an + "," + std::to_string(qa.qpn())), qa, "qp of a");
  expect_qp(ask(client, "/rocev2/qp," + bn + "," + std::to_string(qb.qpn())), qb, "qp of b");
  const Json first = ask(client, "/rocev2/qp," + std::to_string(qa.qpn()));
  EXPECT_TRUE(first.has("dataplane") && first.has("counters"));

  const rdma::Engine& ea = pair->a->worker(0).engine();
  expect_engine(ask(client, "/rocev2/engine," + an), ea, "engine of a");
  expect_engine(ask(client, "/rocev2/engine," + an + ",0"), ea, "worker 0 engine of a");
  const Json all = ask(client, "/rocev2/engine");
  expect_engine(all[an], ea, "engine of a in the list");
  expect_engine(all[bn], pair->b->worker(0).engine(), "engine of b in the list");
  const Json sums = ask(client, "/rocev2/engine," + an)["dcqcn"];
  EXPECT_EQ(sums["rate_decreases"].u64(), qa.congestion()->reaction_point().counters().rate_decreases);
  EXPECT_EQ(sums["cnp_sent"].u64(), qa.congestion()->notification_point().counters().cnp_sent);

  const dp::WorkerStats& ws = pair->a->worker(0).stats();
  const Json w = ask(client, "/rocev2/workers," + an)["0"];
  EXPECT_EQ(w["rx_packets"].u64(), ws.rx_packets);
  EXPECT_EQ(w["tx_packets"].u64(), ws.tx_packets);
  EXPECT_EQ(w["rx_bytes"].u64(), ws.rx_bytes);
  EXPECT_EQ(w["iterations"].u64(), ws.iterations);
  EXPECT_EQ(w["lcore"].num(), static_cast<double>(rte_lcore_id()));  // stepped from the main lcore
  EXPECT_GE(w["sequence"].u64(), 1u);

  rte_eth_stats es{};
  ASSERT_EQ(rte_eth_stats_get(pair->a->port().id, &es), 0);
  const Json p = ask(client, "/rocev2/ports," + an);
  EXPECT_EQ(p["name"].str(), pair->a->port().name);
  EXPECT_EQ(p["stats"]["ipackets"].u64(), es.ipackets);
  EXPECT_EQ(p["stats"]["opackets"].u64(), es.opackets);
  EXPECT_EQ(p["stats"]["imissed"].u64(), es.imissed);
  EXPECT_EQ(p["stats"]["rx_nombuf"].u64(), es.rx_nombuf);
  // Run to completion: the port's packets are the worker's.
  EXPECT_EQ(es.ipackets, ws.rx_packets);
  EXPECT_EQ(es.opackets, ws.tx_packets - ws.tx_dropped);

  const Json list = ask(client, "/rocev2/qps");
  ASSERT_TRUE(list.has(an) && list.has(bn));
  ASSERT_EQ(list[an].array().size(), 1u);
  EXPECT_EQ(list[an].array()[0].u64(), qa.qpn());
  EXPECT_EQ(ask(client, "/rocev2/qps," + bn).array()[0].u64(), qb.qpn());
  const Json dps = ask(client, "/rocev2/dataplanes");
  EXPECT_EQ(dps[an]["ip"].str(), "10.0.0.1");
  EXPECT_EQ(dps[bn]["mode"].str(), "run-to-completion");

  // Bad parameters answer null, as DPDK's own commands do.
  for (const std::string& bad : std::vector<std::string>{"/rocev2/qp," + an + ",999999", "/rocev2/qp,", "/rocev2/qp,x", "/rocev2/engine,nosuch",
                                "/rocev2/engine," + an + ",7", "/rocev2/ports,nosuch"}) {
    const Json j = parse_json(client.command(bad));
    const std::string name = bad.substr(0, bad.find(','));
    EXPECT_TRUE(std::holds_alternative<std::nullptr_t>(j[name].v)) << bad;
  }

  // The JSON report carries the same objects.
  const Json report = parse_json(pair->a->report_json());
  EXPECT_EQ(report["name"].str(), an);
  expect_contains(report["qps"][std::to_string(qa.qpn())], ask(client, "/rocev2/qp," + an + "," + std::to_string(qa.qpn())), "qp");
  expect_contains(report["engine"], ask(client, "/rocev2/engine," + an), "engine");
  expect_contains(report["workers"]["0"], ask(client, "/rocev2/workers," + an)["0"], "worker");
  expect_qp(report["qps"][std::to_string(qa.qpn())], qa, "report qp");
  expect_engine(report["engine"], ea, "report engine");
  EXPECT_EQ(report["port"]["stats"]["ipackets"].u64(), es.ipackets);
}

TEST_F(Telemetry, DpdkTelemetryScriptReadsTheCommands) {
  const char* script = "/usr/bin/dpdk-telemetry.py";
  if (!std::filesystem::exists(script))
    GTEST_SKIP() << script << " is not installed (Debian package dpdk-dev); the socket protocol is checked by the other tests";
  QpOptions qo;
  Endpoint a = make_endpoint(pair->a->worker(0).engine(), qo);
  Endpoint b = make_endpoint(pair->b->worker(0).engine(), qo);
  connect_pair(a, b, qo);
  pair->a->publish_stats();
  const std::string prefix = std::filesystem::path(dp::telemetry_socket_path()).parent_path().filename();
  const std::string cmd = "echo /rocev2/qp," + pair->a->name() + "," + std::to_string(a.qp->qpn()) +
                          " | /usr/bin/python3 " + script + " -f " + prefix + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  ASSERT_EQ(pclose(f), 0) << out;
  // Non-interactive, the script prints the greeting's reply-less lines not at all and one
  // JSON line per command.
  const Json j = parse_json(out);
  EXPECT_EQ(j["/rocev2/qp"]["qpn"].u64(), a.qp->qpn()) << out;
  EXPECT_EQ(j["/rocev2/qp"]["state"].str(), "RTS") << out;
}

class TelemetryPipeline : public Telemetry {
 protected:
  void SetUp() override {
    mode = dp::Mode::Pipeline;
    workers = 2;
    Telemetry::SetUp();
  }
};

TEST_F(TelemetryPipeline, WorkersIoLcoreAndPerWorkerEnginesAreSeparate) {
  QpOptions qo;
  std::vector<std::pair<Endpoint, Endpoint>> qps;
  for (unsigned i = 0; i < 2; ++i) {
    qps.emplace_back(make_endpoint(pair->a->worker(i).engine(), qo), make_endpoint(pair->b->worker(i).engine(), qo));
    connect_pair(qps[i].first, qps[i].second, qo);
  }
  run_traffic(qps);
  if (HasFatalFailure()) return;
  const std::string bn = pair->b->name();
  const Json w = ask(client, "/rocev2/workers," + bn);
  ASSERT_TRUE(w.has("io") && w.has("0") && w.has("1"));
  const dp::IoStats* io = pair->b->io_stats();
  ASSERT_NE(io, nullptr);
  EXPECT_EQ(w["io"]["rx_packets"].u64(), io->rx_packets);
  EXPECT_EQ(w["io"]["steered"].u64(), io->steered);
  EXPECT_EQ(w["io"]["steered"].u64(), pair->b->worker(0).stats().rx_packets + pair->b->worker(1).stats().rx_packets);
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_EQ(w[std::to_string(i)]["rx_packets"].u64(), pair->b->worker(i).stats().rx_packets);
    EXPECT_GT(pair->b->worker(i).stats().rx_packets, 0u);
    expect_engine(ask(client, "/rocev2/engine," + bn + "," + std::to_string(i)), pair->b->worker(i).engine(), "worker engine");
    const Json q = ask(client, "/rocev2/qp," + bn + "," + std::to_string(qps[i].second.qp->qpn()));
    EXPECT_EQ(q["worker"].u64(), i);
    expect_qp(q, *qps[i].second.qp, "pipeline qp");
  }
  const Json total = ask(client, "/rocev2/engine," + bn);
  EXPECT_EQ(total["received"].u64(), pair->b->worker(0).engine().received() + pair->b->worker(1).engine().received());
  EXPECT_EQ(total["qps"].u64(), 2u);
}

TEST_F(Telemetry, WorkersPublishFromTheirLoopEveryInterval) {
  // Default interval 10 ms. The loop publishes on its own, at most once an interval: step until
  // it has published three times (a descheduled thread takes longer, never fewer publications
  // than it stepped intervals for), then at most one more than the intervals that went by.
  const std::uint64_t before = pair->a->worker(0).published_sequence();
  const Nanos from = pair->a->now();
  ASSERT_TRUE(pair->step_until([&] {
    return pair->a->worker(0).published_sequence() - before >= 3 || pair->a->now() - from > 10 * kSecond;
  }));
  const std::uint64_t after = pair->a->worker(0).published_sequence();
  const Nanos elapsed = pair->a->now() - from;
  EXPECT_GE(after - before, 3u) << "in " << elapsed / kMilli << " ms";
  EXPECT_LE(after - before, static_cast<std::uint64_t>(elapsed / (10 * kMilli)) + 1) << "in " << elapsed / kMilli << " ms";
  const dp::WorkerSnapshot s = pair->a->worker(0).published_stats();
  EXPECT_EQ(s.sequence, after);
  EXPECT_GT(s.stats.iterations, 0u);
  EXPECT_LE(s.stats.iterations, pair->a->worker(0).stats().iterations);
}

}  // namespace
}  // namespace roce::test::telemetry_test
