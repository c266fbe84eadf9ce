// roce-gen's printout against the real perftest's, field by field: roce-gen's client (the same
// option parsing and printing main uses) runs against the OobServer that roce-appliance and
// roce-gen --listen use, over two dataplanes on a net_ring pair, and both sides' printouts are
// reduced to their structure (the test title, the header's field names in order with their
// units, the address lines' field names, the table's column names and units, and rows of
// numbers) and compared with what perftest 4.5 printed on rxe (tests/apps/fixtures/perftest_output,
// recorded by tests/interop/record_perftest_output.sh). Values (device, QPNs, figures) differ by
// nature; names, order and units must not.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "client/buffers.hpp"
#include "client/oob_server.hpp"
#include "client/perftest_server_print.hpp"
#include "apps/gen/perftest_printout.hpp"
#include "tests/support/dataplane_pair.hpp"

#ifndef ROCE_SOURCE_ROOT
#define ROCE_SOURCE_ROOT "."
#endif

namespace roce::client {
namespace {

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(ROCE_SOURCE_ROOT) + "/tests/apps/fixtures/perftest_output/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool is_number(const std::string& w) {
  static const std::regex number(R"(-?[0-9]+(\.[0-9]+)?)");
  return std::regex_match(w, number);
}

// The structure of a printout from its test title on: one entry per line, rules collapsed
// (rxe makes perftest print some twice), values replaced by what they are.
std::vector<std::string> structure(const std::string& text) {
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::size_t from = 0;
  while (from < lines.size() && lines[from].find(" Test") == std::string::npos) ++from;
  if (from > 0 && lines[from - 1].rfind("-----", 0) == 0) --from;
  std::vector<std::string> out;
  static const std::regex address(R"( (local|remote) address: LID \S+ QPN \S+ PSN \S+( OUT \S+)?( RKey \S+ VAddr \S+)?)");
  static const std::regex gid(R"( GID: ([0-9]{2,3}:){15}[0-9]{2,3})");
  static const std::regex field(R"(^ ([^:]*[^: \t])[ \t]*: (\S+?)(\[[A-Za-z%]+\])?$)");
  for (std::size_t i = from; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (l.rfind("-----", 0) == 0) {
      if (out.empty() || out.back() != "RULE") out.push_back("RULE");
    } else if (l.find(" Test") != std::string::npos && l.rfind("        ", 0) == 0) {
      out.push_back("TITLE" + std::regex_replace(l, std::regex("^ +"), " "));
    } else if (std::regex_match(l, m, address)) {
      out.push_back("ADDRESS " + m[1].str() + " LID QPN PSN" + (m[2].matched ? " OUT" : "") + (m[3].matched ? " RKey VAddr" : ""));
    } else if (std::regex_match(l, gid)) {
      out.push_back("GID");
    } else if (l.rfind(" #bytes", 0) == 0) {
      out.push_back("COLUMNS" + std::regex_replace(l, std::regex(R"(\s+)"), " "));
    } else if (l.find("\t\t") != std::string::npos && l.find(" : ") != std::string::npos) {
      // Two fields on one line: " Dual-port       : OFF\t\tDevice         : rxe0"
      std::string names;
      std::istringstream parts(l);
      for (std::string part; std::getline(parts, part, '\t');)
        if (!part.empty()) names += " " + std::regex_replace(part.substr(0, part.find(':')), std::regex(R"(\s+$|^\s+)"), "");
      out.push_back("FIELDS" + names);
    } else if (std::regex_match(l, m, field)) {
      out.push_back("FIELD " + m[1].str() + (m[3].matched ? " " + m[3].str() : ""));
    } else {
      std::istringstream words(l);
      std::size_t n = 0;
      bool numbers = true;
      for (std::string w; words >> w; ++n) numbers = numbers && is_number(w);
      out.push_back(numbers && n > 0 ? "ROW " + std::to_string(n) : "OTHER " + l);
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

class PerftestOutput : public test::DataplanePairTest {
 protected:
  PerftestOutput() : DataplanePairTest("po") {}

  // roce-gen's client with `args` (its command line after the EAL's) against a fresh server
  // session; returns the client's printout, the server's in `server_text`.
  std::string run(std::vector<std::string> args, std::string& server_text) {
    args.insert(args.begin(), "roce-gen");
    for (const char* a : {"--dev", "net_ring0", "--ip", "10.0.0.1", "--server", "127.0.0.1"}) args.push_back(a);
    auto g = parse_gen_options(args);
    EXPECT_TRUE(g.ok()) << g.error().message;
    if (!g.ok()) return {};
    auto exposed = MappedBuffer::anonymous(32 << 20);
    auto recv = MappedBuffer::anonymous(4 << 20);
    Connector server_conn(*server_dp_, 77);
    auto emr = server_conn.register_memory(exposed->data(), exposed->size(), kAll);
    auto rmr = server_conn.register_memory(recv->data(), recv->size(), IBV_ACCESS_LOCAL_WRITE);
    DriverSet server_drivers(*server_dp_);
    ServerConfig cfg;
    cfg.exposed = LocalBuffer{exposed->data(), exposed->size(), (*emr)->lkey()};
    cfg.recv_region = LocalBuffer{recv->data(), recv->size(), (*rmr)->lkey()};
    cfg.test = served_test_of(*g);
    OobServer server(server_conn, server_drivers, cfg);
    std::atomic<bool> stop{false};
    Result<SessionReport> report = make_error(EINVAL, "not run");
    std::thread srv([&] {
      auto tcp = listener_->accept(10'000);
      report = tcp ? server.serve(*tcp, stop) : Result<SessionReport>(tcp.error());
    });
    ClientOptions co = client_options_of(*g);
    co.port = listener_->port();
    std::string printed;
    print_as_perftest(co, *g, [&](const std::string& s) { printed += s; });
    auto r = run_perftest_client(*client_dp_, co, nullptr);
    if (!r.ok()) stop = true;
    srv.join();
    EXPECT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(report.ok()) << report.error().message;
    if (r.ok()) printed += perftest_closing(style_of(*g));
    if (report.ok()) {
      ServerPrintSettings ps;
      ps.device = "net_ring0";
      ps.test = cfg.test;
      ps.gbits = g->perftest.gbits;  // perftest's server was given the client's flags
      server_text = perftest_server_printout(*report, ps);
    }
    server_dp_->memory().deregister((*emr)->rkey());
    server_dp_->memory().deregister((*rmr)->rkey());
    return printed;
  }

  void expect_like(const std::string& ours, const std::string& fixture_name) {
    const auto want = structure(fixture(fixture_name));
    const auto got = structure(ours);
    EXPECT_GT(want.size(), 10u) << fixture_name;
    EXPECT_EQ(joined(got), joined(want)) << "ours:\n" << ours << "\nperftest's (" << fixture_name << "):\n" << fixture(fixture_name);
  }

};

TEST(PerftestOutputStructure, SeesFieldsUnitsAndRows) {
  const auto s = structure(fixture("write_bw.client.txt"));
  const std::vector<std::string> want{"RULE",
                                      "TITLE RDMA_Write BW Test",
                                      "FIELDS Dual-port Device",
                                      "FIELDS Number of qps Transport type",
                                      "FIELDS Connection type Using SRQ",
                                      "FIELD PCIe relax order",
                                      "FIELD ibv_wr* API",
                                      "FIELD TX depth",
                                      "FIELD CQ Moderation",
                                      "FIELD Mtu [B]",
                                      "FIELD Link type",
                                      "FIELD GID index",
                                      "FIELD Max inline data [B]",
                                      "FIELD rdma_cm QPs",
                                      "FIELD Data ex. method",
                                      "RULE",
                                      "ADDRESS local LID QPN PSN RKey VAddr",
                                      "GID",
                                      "ADDRESS remote LID QPN PSN RKey VAddr",
                                      "GID",
                                      "RULE",
                                      "COLUMNS #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]",
                                      "ROW 5",
                                      "RULE"};
  EXPECT_EQ(joined(s), joined(want));
}

TEST_F(PerftestOutput, WriteBandwidthPrintsAsIbWriteBw) {
  std::string server;
  expect_like(run({"write", "-n", "200", "-s", "65536", "-x", "1", "-F"}, server), "write_bw.client.txt");
  expect_like(server, "write_bw.server.txt");
}

TEST_F(PerftestOutput, GbitsAndSeveralQpsPrintAsIbWriteBw) {
  std::string server;
  expect_like(run({"ib_write_bw", "-n", "200", "-s", "4096", "-q", "2", "--report_gbits"}, server),
              "write_bw_gbits_q2.client.txt");
  expect_like(server, "write_bw_gbits_q2.server.txt");
}

TEST_F(PerftestOutput, PostListPrintsAsIbWriteBw) {
  std::string server;
  expect_like(run({"write", "-n", "200", "-s", "4096", "-l", "4"}, server), "write_bw_post_list.client.txt");
}

TEST_F(PerftestOutput, DurationAndCpuUtilPrintAsIbWriteBw) {
  std::string server;
  expect_like(run({"write", "-D", "1", "--cpu_util"}, server), "write_bw_cpu_util.client.txt");
}

TEST_F(PerftestOutput, ReadSendAndAtomicBandwidthPrintAsPerftest) {
  std::string server;
  expect_like(run({"read", "-n", "200", "-s", "65536", "-o", "4"}, server), "read_bw.client.txt");
  expect_like(server, "read_bw.server.txt");
  expect_like(run({"send", "-n", "200", "-s", "4096", "-t", "64", "-r", "256"}, server), "send_bw.client.txt");
  expect_like(server, "send_bw.server.txt");
  expect_like(run({"atomic", "-n", "200"}, server), "atomic_bw.client.txt");
  expect_like(server, "atomic_bw.server.txt");
}

TEST_F(PerftestOutput, LatencyTestsPrintAsPerftest) {
  std::string server;
  expect_like(run({"ib_read_lat", "-n", "200"}, server), "read_lat.client.txt");
  expect_like(server, "read_lat.server.txt");
  expect_like(run({"ib_atomic_lat", "-n", "200"}, server), "atomic_lat.client.txt");
  expect_like(run({"ib_send_lat", "-n", "200", "-s", "64"}, server), "send_lat.client.txt");
  expect_like(run({"ib_write_lat", "-n", "200", "-s", "64"}, server), "write_lat.client.txt");
  expect_like(server, "write_lat.server.txt");
  expect_like(run({"ib_read_lat", "-D", "1"}, server), "read_lat_duration.client.txt");
}

TEST_F(PerftestOutput, ASweepPrintsARowPerSize) {
  std::string server;
  expect_like(run({"write", "-n", "20", "-a"}, server), "write_bw_all.client.txt");
}

TEST_F(PerftestOutput, OutputFlagPrintsOnlyTheFigure) {
  std::string server;
  const std::string bw = run({"write", "-n", "200", "--output=bandwidth"}, server);
  EXPECT_TRUE(std::regex_match(bw, std::regex(R"([0-9]+\.[0-9]{6}\n)"))) << bw;
  const std::string lat = run({"read", "--lat", "-n", "200", "--output=latency"}, server);
  EXPECT_TRUE(std::regex_match(lat, std::regex(R"([0-9]+\.[0-9]{6}\n)"))) << lat;
}

}  // namespace
}  // namespace roce::client
