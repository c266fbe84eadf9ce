// roce-gen's perftest client against the appliance's server over two dataplanes joined by a
// net_ring pair, the out-of-band exchange over loopback TCP: every verb, bandwidth and latency,
// data verified where the test allows.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <thread>

#include "client/buffers.hpp"
#include "client/oob_server.hpp"
#include "client/perftest_client.hpp"
#include "client/perftest_server_print.hpp"
#include "dataplane/signals.hpp"
#include "tests/support/dataplane_pair.hpp"

namespace roce::client::perftest_loop_test {
namespace {

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

class PerftestLoop : public test::DataplanePairTest {
 protected:
  PerftestLoop() : DataplanePairTest("pl") {}

  // Runs one client test against a fresh server session.
  // The server knows its test, as roce-gen's server and perftest's do.
  Result<ClientRun> run(TrafficSpec spec, bool verify, unsigned qps = 1, std::vector<std::uint32_t> sizes = {}) {
    auto exposed = MappedBuffer::anonymous(16 << 20);
    auto recv = MappedBuffer::anonymous(4 << 20);
    EXPECT_TRUE(exposed.ok() && recv.ok());
    Connector server_conn(*server_dp_, 77);
    auto emr = server_conn.register_memory(exposed->data(), exposed->size(), exposed_access_);
    auto rmr = server_conn.register_memory(recv->data(), recv->size(), IBV_ACCESS_LOCAL_WRITE);
    EXPECT_TRUE(emr.ok() && rmr.ok());
    DriverSet server_drivers(*server_dp_);
    ServerConfig cfg;
    cfg.exposed = LocalBuffer{exposed->data(), exposed->size(), (*emr)->lkey()};
    cfg.recv_region = LocalBuffer{recv->data(), recv->size(), (*rmr)->lkey()};
    ServedTest served;
    served.verb = spec.verb;
    served.measure = spec.measure;
    served.sizes = sizes.empty() ? std::vector<std::uint32_t>{spec.size} : sizes;
    served.iters = spec.iters;
    served.duplex = duplex_ && served_duplex_;
    if (served.duplex) {
      // -D / --run_infinitely: perftest's server is told them as the client is.
      served.duration = spec.duration;
      served.margin = spec.margin;
      served.infinite = run_infinitely_;
    }
    cfg.test = served;
    cfg.qp.type = type_;
    cfg.selective_repeat = server_selective_repeat_;
    if (tweak_server_) tweak_server_(cfg);
    OobServer server(server_conn, server_drivers, cfg);
    std::atomic<bool> stop{false};
    Result<SessionReport> report = make_error(EINVAL, "not run");
    std::thread srv([&] {
      auto tcp = listener_->accept(10'000);
      if (!tcp) {
        report = tcp.error();
        return;
      }
      report = server.serve(*tcp, stop);
    });
    ClientOptions o;
    o.server = "127.0.0.1";
    o.port = listener_->port();
    o.spec = spec;
    o.qps = qps;
    o.verify = verify;
    o.sizes = std::move(sizes);
    o.qp.type = type_;
    o.stall_timeout = stall_timeout_;
    o.duplex = duplex_;
    o.run_infinitely = run_infinitely_;
    o.selective_repeat = client_selective_repeat_;
    if (tweak_client_) tweak_client_(o);
    auto r = run_perftest_client(*client_dp_, o, nullptr);
    if (!r.ok()) stop = true;
    srv.join();
    if (r.ok()) {
      EXPECT_TRUE(report.ok()) << report.error().message;
    }
    if (report.ok()) last_report_ = *report;
    server_error_ = report.ok() ? "" : report.error().message;
    server_dp_->memory().deregister((*emr)->rkey());
    server_dp_->memory().deregister((*rmr)->rkey());
    return r;
  }

  SessionReport last_report_;
  std::string server_error_;
  int exposed_access_ = kAll;
  ibv_qp_type type_ = IBV_QPT_RC;
  Nanos stall_timeout_ = 10 * kSecond;
  bool duplex_ = false;  // the client runs -b
  bool served_duplex_ = true;  // the server is told -b when the client runs it
  bool run_infinitely_ = false;
  std::uint32_t client_selective_repeat_ = 0;  // the window our client offers (0: none)
  std::uint32_t server_selective_repeat_ = 0;  // ... and our server accepts
  std::function<void(ServerConfig&)> tweak_server_;
  std::function<void(ClientOptions&)> tweak_client_;
};

TrafficSpec spec(Verb v, Measure m, std::uint32_t size, std::uint64_t iters) {
  TrafficSpec s;
  s.verb = v;
  s.measure = m;
  s.size = size;
  s.iters = iters;
  s.tx_depth = 32;
  return s;
}

TEST_F(PerftestLoop, WriteBandwidthVerifiesRemoteMemory) {
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 65536, 200), true, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->bw.size(), 1u);
  EXPECT_EQ(r->bw[0].iterations, 400u);
  EXPECT_GT(r->bw[0].bw_avg_bps, 0);
  EXPECT_GE(r->bw[0].bw_peak_bps, r->bw[0].bw_avg_bps);
  EXPECT_TRUE(r->verified);
  EXPECT_EQ(r->counters.errors, 0u);
  EXPECT_EQ(last_report_.qps, 2u);
  EXPECT_EQ(last_report_.tool, "perftest");
}

// Selective repeat over the TCP exchange (docs/loss.md): our client offers it in its version
// record, our server answers; the QPs of both run it only when both sides want it.
TEST_F(PerftestLoop, SelectiveRepeatIsAgreedInTheExchangeWhenBothSidesDoIt) {
  client_selective_repeat_ = 64;
  server_selective_repeat_ = 32;
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 65536, 200), true, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 32u);  // the smaller window
  EXPECT_EQ(last_report_.selective_repeat, 32u);
  EXPECT_TRUE(r->verified);
  EXPECT_EQ(r->counters.errors, 0u);
  EXPECT_GT(r->counters.packets_sent, 0u);
}

TEST_F(PerftestLoop, AServerThatDoesNotOfferSelectiveRepeatGetsGoBackN) {
  client_selective_repeat_ = 64;
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 65536, 100), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 0u);
  EXPECT_EQ(last_report_.selective_repeat, 0u);
  EXPECT_EQ(r->counters.sacks_received, 0u);
  EXPECT_TRUE(r->verified);
}

TEST_F(PerftestLoop, AClientThatDoesNotOfferSelectiveRepeatGetsGoBackN) {
  server_selective_repeat_ = 64;
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 65536, 100), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 0u);
  EXPECT_EQ(last_report_.selective_repeat, 0u);
  EXPECT_TRUE(r->verified);
}

TEST_F(PerftestLoop, UcQpsNeverAgreeOnSelectiveRepeat) {
  client_selective_repeat_ = server_selective_repeat_ = 64;
  type_ = IBV_QPT_UC;
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 4096, 50), false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->selective_repeat, 0u);
  EXPECT_EQ(last_report_.selective_repeat, 0u);
}

TEST_F(PerftestLoop, ReadBandwidthReadsWhatWasWritten) {
  auto r = run(spec(Verb::Read, Measure::Bandwidth, 8192, 300), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->bw[0].iterations, 300u);
  EXPECT_TRUE(r->verified);
}

TEST_F(PerftestLoop, SendBandwidthLandsInTheServersReceives) {
  auto r = run(spec(Verb::Send, Measure::Bandwidth, 4096, 500), false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->bw[0].iterations, 500u);
  EXPECT_EQ(last_report_.received_messages, 500u);
  EXPECT_EQ(last_report_.received_bytes, 500u * 4096);
}

TEST_F(PerftestLoop, AtomicBandwidthAddsExactlyOncePerOperation) {
  auto r = run(spec(Verb::Atomic, Measure::Bandwidth, 8, 1000), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->bw[0].iterations, 1000u);
  EXPECT_TRUE(r->verified);
}

// IBTA 1.5's ATOMIC_WRITE and FLUSH (roce-gen atomic_write / flush), run as READ is, against a
// server whose region and QPs allow FLUSH of global visibility (as roce-appliance's): every
// ATOMIC_WRITE stores the 8 bytes it carries, every FLUSH of the range completes and the range
// still holds what was written before it; both as latency tests too.
TEST_F(PerftestLoop, AtomicWriteStoresItsEightBytesAndFlushKeepsTheRange) {
  exposed_access_ = kAll | rdma::kAccessFlushGlobal;
  tweak_server_ = [](ServerConfig& c) { c.qp.access |= rdma::kAccessFlushGlobal; };
  {
    auto r = run(spec(Verb::AtomicWrite, Measure::Bandwidth, 8, 500), true, 2);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->bw.at(0).iterations, 1000u);
    EXPECT_EQ(r->bw.at(0).size, 8u);
    EXPECT_TRUE(r->verified);
    EXPECT_EQ(r->counters.errors, 0u);
  }
  {
    auto r = run(spec(Verb::Flush, Measure::Bandwidth, 65536, 300), true);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->bw.at(0).iterations, 300u);
    EXPECT_TRUE(r->verified);
    EXPECT_EQ(r->counters.errors, 0u);
  }
  for (Verb v : {Verb::AtomicWrite, Verb::Flush}) {
    auto r = run(spec(v, Measure::Latency, 8, 100), false);
    ASSERT_TRUE(r.ok()) << to_string(v) << ": " << r.error().message;
    ASSERT_EQ(r->lat.size(), 1u);
    EXPECT_EQ(r->lat[0].iterations, 100u);
  }
}

// A region registered without IBV_ACCESS_FLUSH_GLOBAL refuses a FLUSH: remote access error.
TEST_F(PerftestLoop, FlushOfARegionWithoutFlushAccessIsARemoteAccessError) {
  tweak_server_ = [](ServerConfig& c) { c.qp.access |= rdma::kAccessFlushGlobal; };
  auto r = run(spec(Verb::Flush, Measure::Bandwidth, 4096, 20), false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("remote access error"), std::string::npos) << r.error().message;
}

TEST_F(PerftestLoop, LatencyTestsReportEveryColumn) {
  for (Verb v : {Verb::Read, Verb::Send, Verb::Atomic}) {
    auto r = run(spec(v, Measure::Latency, 64, 300), false);
    ASSERT_TRUE(r.ok()) << to_string(v) << ": " << r.error().message;
    ASSERT_EQ(r->lat.size(), 1u);
    const LatFigures& f = r->lat[0];
    EXPECT_EQ(f.iterations, 300u) << to_string(v);
    EXPECT_GT(f.t_min_us, 0) << to_string(v);
    EXPECT_LE(f.t_min_us, f.t_typical_us);
    EXPECT_LE(f.t_typical_us, f.p99_us);
    EXPECT_LE(f.p99_us, f.p999_us);
    EXPECT_LE(f.p999_us, f.t_max_us);
  }
}

TEST_F(PerftestLoop, WriteLatencyWithTheServerWritingFirst) {
  auto r = run(spec(Verb::Write, Measure::Latency, 256, 200), false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->lat[0].iterations, 200u);
}

TEST_F(PerftestLoop, AllSizesRunInOneConnection) {
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 2, 50), true, 1, {2, 64, 4096, 65536});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->bw.size(), 4u);
  EXPECT_EQ(r->bw[0].size, 2u);
  EXPECT_EQ(r->bw[3].size, 65536u);
  EXPECT_TRUE(r->verified);
}

TEST_F(PerftestLoop, CmpAndSwapSwapsZeroForZeroAndLeavesTheWordAsItWas) {
  TrafficSpec s = spec(Verb::Atomic, Measure::Bandwidth, 8, 300);
  s.atomic = AtomicOp::CmpAndSwap;
  auto r = run(s, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->bw[0].iterations, 300u);
  EXPECT_TRUE(r->verified);
  s.measure = Measure::Latency;
  r = run(s, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->verified);
}

TEST_F(PerftestLoop, UcCarriesWritesAndSendsBothWays) {
  type_ = IBV_QPT_UC;
  auto w = run(spec(Verb::Write, Measure::Bandwidth, 4096, 100), false, 2);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->bw[0].iterations, 200u);
  auto sb = run(spec(Verb::Send, Measure::Bandwidth, 4096, 100), false);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(last_report_.received_messages, 100u);
  for (Verb v : {Verb::Send, Verb::Write}) {
    auto l = run(spec(v, Measure::Latency, 64, 100), false);
    ASSERT_TRUE(l.ok()) << to_string(v) << ": " << l.error().message;
    EXPECT_EQ(l->lat[0].iterations, 100u);
  }
}

TEST_F(PerftestLoop, UdSendsFitTheMtuAndAreAnsweredThroughAnAddressHandle) {
  type_ = IBV_QPT_UD;
  auto bw = run(spec(Verb::Send, Measure::Bandwidth, 1024, 100), false, 2);
  ASSERT_TRUE(bw.ok()) << bw.error().message;
  EXPECT_EQ(last_report_.received_messages, 200u);
  EXPECT_EQ(last_report_.received_bytes, 200u * 1024);  // the GRH in front is not payload
  auto lat = run(spec(Verb::Send, Measure::Latency, 256, 100), false);
  ASSERT_TRUE(lat.ok()) << lat.error().message;
  EXPECT_EQ(lat->lat[0].iterations, 100u);
  // A sweep stops at the MTU (1024 here), as perftest's does; a larger -s is refused.
  auto sweep = run(spec(Verb::Send, Measure::Bandwidth, 2, 20), false, 1, {2, 512, 1024, 2048, 4096});
  ASSERT_TRUE(sweep.ok()) << sweep.error().message;
  EXPECT_EQ(sweep->bw.size(), 3u);
  auto big = run(spec(Verb::Send, Measure::Bandwidth, 4096, 20), false);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("must fit the path MTU of 1024 bytes"), std::string::npos) << big.error().message;
}

TEST_F(PerftestLoop, LatencySweepsRunEverySizeInOneConnection) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send}) {
    auto r = run(spec(v, Measure::Latency, 2, 20), false, 1, {2, 64, 4096, 65536});
    ASSERT_TRUE(r.ok()) << to_string(v) << ": " << r.error().message;
    ASSERT_EQ(r->lat.size(), 4u);
    EXPECT_EQ(r->lat[3].size, 65536u);
    EXPECT_EQ(r->lat[3].iterations, 20u);
  }
}

// Both sides ours, and the server not told the test it serves: each side says what is missing.
TEST_F(PerftestLoop, ALatencyTestWhoseServerDoesNotActEndsWithTheReasonOnBothSides) {
  // The server notices first here; the client gives up later (by default 15 s and 10 s).
  stall_timeout_ = 2 * kSecond;
  tweak_server_ = [](ServerConfig& c) {
    c.test.reset();
    c.quiet_timeout = kSecond / 2;
  };
  auto w = run(spec(Verb::Write, Measure::Latency, 64, 20), false);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("in ib_write_lat the server WRITEs first"), std::string::npos) << w.error().message;
  EXPECT_NE(server_error_.find("--perftest ib_write_lat"), std::string::npos) << server_error_;
  auto s = run(spec(Verb::Send, Measure::Latency, 64, 20), false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("in ib_send_lat the server answers each SEND"), std::string::npos) << s.error().message;
  EXPECT_NE(server_error_.find("--perftest ib_send_lat"), std::string::npos) << server_error_;
}

// A failed WRITE never reaches the server, which then waits for it instead of answering the
// closing exchange: the client must say what failed, not wait out the exchange's timeout.
TEST_F(PerftestLoop, FailedOperationsAreReportedBeforeTheClosingExchange) {
  exposed_access_ = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;  // no remote write
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 4096, 20), false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("completed with an error (first: remote access error)"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find("timed out"), std::string::npos) << r.error().message;
}

// perftest's -b client expects the server to send too, which ours does not: its results come
// straight after its traffic (a one-way client syncs first), and the server says so instead of
// letting the client print a one-way figure as a bidirectional one.
TEST_F(PerftestLoop, ABidirectionalClientIsToldTheServerServesOneWayTests) {
  duplex_ = true;
  served_duplex_ = false;
  for (Verb v : {Verb::Write, Verb::Read}) {
    SCOPED_TRACE(to_string(v));
    auto r = run(spec(v, Measure::Bandwidth, 4096, 50), false);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(server_error_.find("right after its traffic, with no sync between: it runs -b (bidirectional)"),
              std::string::npos)
        << server_error_;
    EXPECT_NE(server_error_.find("serve it with --perftest ib_VERB_bw -b"), std::string::npos) << server_error_;
  }
  // -a -b syncs after each size as well: its second results give it away.
  auto a = run(spec(Verb::Write, Measure::Bandwidth, 0, 20), false, 1, {64, 128, 256});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(server_error_.find("a second time: it runs -b"), std::string::npos) << server_error_;
}

// A server told -b (perftest's server given -b) runs the same traffic toward the client between
// the client's sync and the results, and both sides send their own figures: each side's row is the
// sum. SEND -b also waits for the other side's SENDs (run_iter_bi): both counts are exact.
TEST_F(PerftestLoop, ABidirectionalClientGetsTheServersTrafficAndFigures) {
  duplex_ = true;
  struct Case {
    Verb verb;
    ibv_qp_type type;
    unsigned qps;
  };
  for (const Case c : {Case{Verb::Write, IBV_QPT_RC, 2}, Case{Verb::Read, IBV_QPT_RC, 1}, Case{Verb::Send, IBV_QPT_RC, 2},
                       Case{Verb::Write, IBV_QPT_UC, 1}, Case{Verb::Send, IBV_QPT_UC, 1}, Case{Verb::Send, IBV_QPT_UD, 2}}) {
    SCOPED_TRACE(to_string(c.verb) + (c.type == IBV_QPT_UC ? " UC" : c.type == IBV_QPT_UD ? " UD" : " RC"));
    type_ = c.type;
    const std::uint32_t size = c.type == IBV_QPT_UD ? 1024 : 4096;  // a datagram fits the MTU
    auto r = run(spec(c.verb, Measure::Bandwidth, size, 200), false, c.qps);
    ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
    ASSERT_EQ(r->bw.size(), 1u);
    ASSERT_TRUE(last_report_.client_results && last_report_.server_results);
    // Each side's operations, as each sent them: the client's own, the server's own.
    EXPECT_EQ(last_report_.client_results->iters, 200u * c.qps);
    EXPECT_EQ(last_report_.server_results->iters, 200u * c.qps);
    EXPECT_EQ(last_report_.server_results->size, size);
    EXPECT_GT(last_report_.server_results->bw_avg, 0);
    // The client's row is both sides' sum (perftest's print_full_bw_report).
    const double client_own = last_report_.client_results->bw_avg * 1048576.0;
    EXPECT_NEAR(r->bw[0].bw_avg_bps, client_own + last_report_.server_results->bw_avg * 1048576.0, 1.0);
    if (c.verb == Verb::Send) {
      EXPECT_EQ(last_report_.received_messages, 200u * c.qps);  // the client's SENDs, into our receives
      EXPECT_EQ(last_report_.received_bytes, 200u * c.qps * size);
    }
  }
}

// -a -b: the sync after each size and the results per size, the server's traffic for each.
TEST_F(PerftestLoop, ABidirectionalSweepRunsEverySizeBothWays) {
  duplex_ = true;
  for (Verb v : {Verb::Write, Verb::Send}) {
    SCOPED_TRACE(to_string(v));
    auto r = run(spec(v, Measure::Bandwidth, 0, 30), false, 1, {64, 1024, 65536});
    ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
    ASSERT_EQ(r->bw.size(), 3u);
    ASSERT_TRUE(last_report_.server_results);
    EXPECT_EQ(last_report_.server_results->size, 65536u);
    EXPECT_EQ(last_report_.server_results->iters, 30u);
    // Every size's figures, both sides', for the server's row per size.
    ASSERT_EQ(last_report_.duplex_sizes.size(), 3u);
    EXPECT_EQ(last_report_.duplex_sizes[0].first.size, 64u);
    EXPECT_EQ(last_report_.duplex_sizes[0].second.size, 64u);
    EXPECT_EQ(last_report_.duplex_sizes[1].second.iters, 30u);
    // The server prints a row per size (perftest's server: print_full_bw_report in its loop).
    ServerPrintSettings ps;
    ps.test = ServedTest{v, Measure::Bandwidth, {64, 1024, 65536}, 30, true};
    const std::string printed = perftest_server_printout(last_report_, ps);
    for (const char* size : {"\n 64 ", "\n 1024 ", "\n 65536 "})
      EXPECT_NE(printed.find(size), std::string::npos) << size << " in\n" << printed;
  }
}

// -b -D (perftest's server told -D too): both sides run for the seconds from the sync. WRITE and
// READ swap their figures over the window and print the sum; SEND -D exchanges none (each side
// prints its own row), the server receiving until its deadline.
TEST_F(PerftestLoop, ABidirectionalDurationRunSendsBothWaysForItsSeconds) {
  duplex_ = true;
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send}) {
    SCOPED_TRACE(to_string(v));
    TrafficSpec s = spec(v, Measure::Bandwidth, 1024, 1000);
    s.duration = kSecond;
    s.margin = kSecond / 5;
    auto r = run(s, false);
    ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
    ASSERT_EQ(r->bw.size(), 1u);
    ASSERT_TRUE(last_report_.server_results);
    EXPECT_EQ(last_report_.server_results->size, 1024u);
    EXPECT_GT(last_report_.server_results->iters, 0u) << "client: " << r->bw[0].iterations;
    EXPECT_GT(last_report_.server_results->bw_avg, 0);
    if (v == Verb::Send) {
      EXPECT_FALSE(last_report_.client_results);  // no results under -D
      // The server's row is its own (print_report_bw).
      ServerPrintSettings ps;
      ps.test = ServedTest{v, Measure::Bandwidth, {1024}, 1000, true};
      const std::string printed = perftest_server_printout(last_report_, ps);
      const auto row = printed.find("\n 1024 ");
      ASSERT_NE(row, std::string::npos) << printed;
      const std::string line = printed.substr(row + 1, printed.find('\n', row + 1) - row - 1);
      EXPECT_NE(line.find(" " + std::to_string(last_report_.server_results->iters) + " "), std::string::npos) << line;
      EXPECT_GT(last_report_.received_messages, 0u);
      // The client's row is its own.
      EXPECT_GT(r->bw[0].iterations, 0u);
    } else {
      ASSERT_TRUE(last_report_.client_results);
      EXPECT_GT(last_report_.client_results->iters, 0u);
      const double client_own = last_report_.client_results->bw_avg * 1048576.0;
      EXPECT_NEAR(r->bw[0].bw_avg_bps, client_own + last_report_.server_results->bw_avg * 1048576.0, 1.0);
    }
  }
}

// -b --run_infinitely: the server's WRITEs go on until the client leaves (a SIGINT ends
// perftest's client there); the session ends cleanly, without figures.
TEST_F(PerftestLoop, ABidirectionalEndlessRunEndsWhenTheClientLeaves) {
  duplex_ = true;
  run_infinitely_ = true;
  ASSERT_TRUE(dp::StopSignals::install().ok());
  TrafficSpec s = spec(Verb::Write, Measure::Bandwidth, 4096, 1000);
  s.duration = kSecond / 4;  // the reporting period
  // The stop comes after the third row, not after a fixed time: on a loaded machine setting up
  // the session can take most of a second. The 20 s bound only keeps a broken run from hanging.
  std::atomic<unsigned> rows{0};
  tweak_client_ = [&rows](ClientOptions& o) { o.on_bw = [&rows](const BwFigures&) { ++rows; }; };
  std::thread interrupt([&rows] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (rows.load() < 3 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::raise(SIGINT);
  });
  auto r = run(s, false);
  interrupt.join();
  dp::StopSignals::clear();
  dp::StopSignals::restore();
  ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
  EXPECT_TRUE(r->stopped);
  EXPECT_GE(r->bw.size(), 3u);  // a row per period
  EXPECT_EQ(server_error_, "");
  EXPECT_FALSE(last_report_.client_results);
  // Our WRITEs landed in the client's buffer: the client's QP took them.
  EXPECT_GT(last_report_.qps, 0u);
}

// A server told -b and a one-way client: the client's traffic comes before the sync -b puts
// before it, and the server says so.
TEST_F(PerftestLoop, AOneWayClientOfABidirectionalServerIsNamed) {
  tweak_server_ = [](ServerConfig& c) { c.test->duplex = true; };
  auto r = run(spec(Verb::Write, Measure::Bandwidth, 4096, 50), false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(server_error_.find("it runs a one-way test (no -b); this server was told -b"), std::string::npos)
      << server_error_;
}

// perftest's --use-srq on the server: every QP of the session takes the client's SENDs from one
// shared receive queue, shallower than the messages (its limit event refills it), nothing lost.
TEST_F(PerftestLoop, UseSrqServerTakesEverySendFromOneSharedReceiveQueue) {
  tweak_server_ = [](ServerConfig& c) {
    c.use_srq = true;
    c.recv_depth = 32;
  };
  auto r = run(spec(Verb::Send, Measure::Bandwidth, 2048, 300), false, 4);
  ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
  EXPECT_EQ(r->bw[0].iterations, 1200u);
  EXPECT_EQ(last_report_.received_messages, 1200u);
  EXPECT_EQ(last_report_.received_bytes, 1200u * 2048);
  EXPECT_TRUE(last_report_.shared_srq);
  EXPECT_GT(last_report_.srq_limit_events, 0u);
  EXPECT_NE(perftest_server_printout(last_report_, ServerPrintSettings{}).find("Using SRQ      : ON"), std::string::npos);
}

// --use-srq on the client, where perftest's client makes its SRQ: the answers of ib_send_lat's
// server, and the server's SENDs of -b (both sides on SRQs), land in receives of one shared
// receive queue refilled at its limit event.
TEST_F(PerftestLoop, UseSrqClientTakesLatencyAnswersAndBidirectionalSendsFromAnSrq) {
  tweak_client_ = [](ClientOptions& o) {
    o.use_srq = true;
    o.qp.recv_depth = 16;
  };
  auto r = run(spec(Verb::Send, Measure::Latency, 64, 200), false);
  ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
  EXPECT_EQ(r->lat[0].iterations, 200u);
  EXPECT_TRUE(r->shared_srq);
  EXPECT_GT(r->srq_limit_events, 0u);

  duplex_ = true;
  tweak_server_ = [](ServerConfig& c) {
    c.use_srq = true;
    c.recv_depth = 32;
  };
  r = run(spec(Verb::Send, Measure::Bandwidth, 4096, 200), false, 2);
  ASSERT_TRUE(r.ok()) << r.error().message << " / server: " << server_error_;
  EXPECT_TRUE(r->shared_srq);
  EXPECT_GT(r->srq_limit_events, 0u);
  EXPECT_TRUE(last_report_.shared_srq);
  EXPECT_EQ(last_report_.received_messages, 400u);
  ASSERT_TRUE(last_report_.server_results);
  EXPECT_EQ(last_report_.server_results->iters, 400u);

  // One-way bandwidth: perftest's client makes no SRQ then.
  duplex_ = false;
  tweak_server_ = nullptr;
  r = run(spec(Verb::Send, Measure::Bandwidth, 4096, 100), false, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->shared_srq);
}

TEST_F(PerftestLoop, RefusedConnectionIsAClearError) {
  ClientOptions o;
  o.server = "127.0.0.1";
  o.port = 1;  // nothing listens there
  auto r = run_perftest_client(*client_dp_, o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot connect"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace roce::client::perftest_loop_test
