// perftest's printout, checked line for line against what the real perftest 4.5 printed
// (tests/apps/fixtures/perftest_output, recorded on rxe): given the values a fixture shows, our
// formatter must print the very same characters, tabs and spaces included.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "client/traffic/perftest_text.hpp"

#ifndef ROCE_SOURCE_ROOT
#define ROCE_SOURCE_ROOT "."
#endif

namespace roce::client::perftest_text_test {
namespace {

std::vector<std::string> fixture(const std::string& name) {
  std::ifstream f(std::string(ROCE_SOURCE_ROOT) + "/tests/apps/fixtures/perftest_output/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l + "\n");
  return lines;
}

// The header block: from the line before the test title to the rule after "Data ex. method".
std::string header_of(const std::vector<std::string>& lines) {
  std::string s;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(" Test\n") == std::string::npos || lines[i].rfind("      ", 0) != 0) continue;
    s = lines[i - 1];
    for (std::size_t k = i; k < lines.size(); ++k) {
      s += lines[k];
      if (lines[k].rfind(" Data ex. method", 0) == 0) return s + lines[k + 1];
    }
  }
  return s;
}

std::string line_starting(const std::vector<std::string>& lines, const std::string& start, int nth = 0) {
  for (const auto& l : lines)
    if (l.rfind(start, 0) == 0 && nth-- == 0) return l;
  ADD_FAILURE() << "no line starting with '" << start << "'";
  return {};
}

// What rxe showed (device name, GID index 1, MTU 4096; PCIe relaxed ordering ON in Debian's
// build, except in ib_write_lat).
PerftestHeader rxe(Verb v, Measure m, bool server) {
  PerftestHeader h;
  h.verb = v;
  h.measure = m;
  h.server = server;
  h.device = "rxe0";
  h.pcie_relax_order = v == Verb::Write && m == Measure::Latency ? "OFF" : "ON";
  h.mtu_bytes = 4096;
  h.gid_index = 1;
  h.out_reads = 128;
  h.tx_depth = m == Measure::Bandwidth ? 128 : 1;
  return h;
}

TEST(PerftestText, HeadersAreThoseOfTheRealPrograms) {
  PerftestHeader h = rxe(Verb::Write, Measure::Bandwidth, false);
  h.cq_mod = 1;
  EXPECT_EQ(perftest_header(h), header_of(fixture("write_bw.client.txt")));
  h.server = true;
  EXPECT_EQ(perftest_header(h), header_of(fixture("write_bw.server.txt")));

  h = rxe(Verb::Write, Measure::Bandwidth, false);
  h.qps = 2;
  EXPECT_EQ(perftest_header(h), header_of(fixture("write_bw_gbits_q2.client.txt")));
  h.qps = 1;
  h.post_list = 4;
  h.cq_mod = 4;
  EXPECT_EQ(perftest_header(h), header_of(fixture("write_bw_post_list.client.txt")));
  h.post_list = 1;
  h.cq_mod = 100;
  h.duplex = true;
  EXPECT_EQ(perftest_header(h), header_of(fixture("write_bw_bidirectional.client.txt")));
  h.server = true;
  EXPECT_EQ(perftest_header(h), header_of(fixture("write_bw_bidirectional.server.txt")));

  h = rxe(Verb::Read, Measure::Bandwidth, false);
  h.cq_mod = 1;
  h.out_reads = 4;
  EXPECT_EQ(perftest_header(h), header_of(fixture("read_bw.client.txt")));

  h = rxe(Verb::Send, Measure::Bandwidth, false);
  h.tx_depth = 64;
  h.cq_mod = 64;
  EXPECT_EQ(perftest_header(h), header_of(fixture("send_bw.client.txt")));
  h.server = true;
  h.rx_depth = 200;
  EXPECT_EQ(perftest_header(h), header_of(fixture("send_bw.server.txt")));

  h = rxe(Verb::Atomic, Measure::Bandwidth, false);
  EXPECT_EQ(perftest_header(h), header_of(fixture("atomic_bw.client.txt")));

  for (const auto& [verb, name] : {std::pair{Verb::Read, "read_lat"}, {Verb::Write, "write_lat"}, {Verb::Atomic, "atomic_lat"}}) {
    h = rxe(verb, Measure::Latency, false);
    EXPECT_EQ(perftest_header(h), header_of(fixture(std::string(name) + ".client.txt"))) << name;
    h.server = true;
    EXPECT_EQ(perftest_header(h), header_of(fixture(std::string(name) + ".server.txt"))) << name;
  }
  h = rxe(Verb::Send, Measure::Latency, true);
  h.rx_depth = 200;
  EXPECT_EQ(perftest_header(h), header_of(fixture("send_lat.server.txt")));
}

TEST(PerftestText, TheServerBannerIsPerftests) {
  const auto lines = fixture("write_bw.server.txt");
  EXPECT_EQ(perftest_waiting_banner(), lines[0] + lines[1] + lines[2] + lines[3]);
}

// Reads the values back from a fixture's address line and prints them again.
PerftestDest dest_of(const std::string& line, bool& remote) {
  PerftestDest d;
  char side[8] = {};
  unsigned lid = 0, qpn = 0, psn = 0, out = 0, rkey = 0;
  unsigned long long vaddr = 0;
  if (line.find(" OUT ") != std::string::npos)
    std::sscanf(line.c_str(), " %7s address: LID %x QPN %x PSN %x OUT %x RKey %x VAddr %llx", side, &lid, &qpn, &psn, &out,
                &rkey, &vaddr);
  else
    std::sscanf(line.c_str(), " %7s address: LID %x QPN %x PSN %x RKey %x VAddr %llx", side, &lid, &qpn, &psn, &rkey, &vaddr);
  remote = std::string(side) == "remote";
  d.lid = static_cast<std::uint16_t>(lid);
  d.qpn = qpn;
  d.psn = psn;
  d.out_reads = static_cast<std::uint16_t>(out);
  d.rkey = rkey;
  d.vaddr = vaddr;
  const in_addr guest{htonl((10u << 24) | (77u << 16) | 2u)};
  d.gid.raw[10] = d.gid.raw[11] = 0xFF;
  std::memcpy(&d.gid.raw[12], &guest, 4);
  return d;
}

TEST(PerftestText, AddressLinesAreThoseOfTheRealPrograms) {
  for (const auto& [verb, name] : {std::pair{Verb::Write, "write_bw_gbits_q2.client.txt"}, {Verb::Read, "read_bw.client.txt"},
                                   {Verb::Send, "send_bw.server.txt"}, {Verb::Atomic, "atomic_bw.client.txt"},
                                   {Verb::Read, "read_lat.server.txt"}}) {
    const auto lines = fixture(name);
    int checked = 0;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
      if (lines[i].find(" address: LID ") == std::string::npos) continue;
      bool remote = false;
      const PerftestDest d = dest_of(lines[i], remote);
      EXPECT_EQ(perftest_address(d, verb, remote), lines[i] + lines[i + 1]) << name;
      ++checked;
    }
    EXPECT_GE(checked, 2) << name;
  }
}

BwFigures bw(std::uint32_t size, std::uint64_t iters, double peak, double avg, double mpps, bool gbits) {
  const double unit = gbits ? 125e6 : 1048576.0;
  BwFigures f;
  f.size = size;
  f.iterations = iters;
  f.bw_peak_bps = peak * unit;
  f.bw_avg_bps = avg * unit;
  f.msg_rate_mpps = mpps;
  return f;
}

// The line after the column titles.
std::string first_row(const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i + 1 < lines.size(); ++i)
    if (lines[i].rfind(" #bytes", 0) == 0) return lines[i + 1];
  ADD_FAILURE() << "no table";
  return {};
}

// The figures of a row, as printed (to print them again).
std::vector<double> numbers(const std::string& line) {
  std::istringstream in(line);
  std::vector<double> v;
  for (double x; in >> x;) v.push_back(x);
  return v;
}

BwFigures bw_row_of(const std::string& line, bool gbits) {
  const auto v = numbers(line);
  EXPECT_GE(v.size(), 5u) << line;
  return v.size() < 5 ? BwFigures{} : bw(static_cast<std::uint32_t>(v[0]), static_cast<std::uint64_t>(v[1]), v[2], v[3], v[4], gbits);
}

TEST(PerftestText, BandwidthTablesAreThoseOfTheRealPrograms) {
  for (const auto& [name, gbits] : {std::pair{"write_bw.client.txt", false}, {"write_bw_gbits_q2.client.txt", true},
                                    {"write_bw_duration.client.txt", false}, {"read_bw.client.txt", false},
                                    {"send_bw.server.txt", false}, {"atomic_bw.client.txt", false},
                                    {"write_bw_bidirectional.server.txt", false}}) {
    const auto lines = fixture(name);
    EXPECT_EQ(perftest_bw_columns(gbits, false), line_starting(lines, " #bytes")) << name;
    const std::string row = first_row(lines);
    EXPECT_EQ(perftest_bw_row(bw_row_of(row, gbits), gbits), row) << name;
  }
  int rows = 0;
  for (const auto& l : fixture("write_bw_all.client.txt")) {
    if (l.empty() || l[1] < '0' || l[1] > '9') continue;
    EXPECT_EQ(perftest_bw_row(bw_row_of(l, false), false), l);
    ++rows;
  }
  EXPECT_EQ(rows, 23) << "-a: 2 B to 8 MiB";
  const auto lines = fixture("write_bw_cpu_util.client.txt");
  EXPECT_EQ(perftest_bw_columns(false, true), line_starting(lines, " #bytes"));
  const std::string row = line_starting(lines, " 65536 ");
  EXPECT_EQ(perftest_bw_row(bw_row_of(row, false), false, numbers(row).back()), row);
  // Gb/sec below 0.1 gets six decimals (perftest's REPORT_FMT_EXT).
  EXPECT_EQ(perftest_bw_row(bw(2, 5000, 0.012345678, 0.0054321, 0.339, true), true),
            " 2          5000           0.012346            0.005432            0.339000\n");
}

LatFigures lat(std::uint32_t size, std::uint64_t iters, std::vector<double> v) {
  LatFigures f;
  f.size = size;
  f.iterations = iters;
  f.t_min_us = v[0];
  f.t_max_us = v[1];
  f.t_typical_us = v[2];
  f.t_avg_us = v[3];
  f.t_stdev_us = v[4];
  f.p99_us = v[5];
  f.p999_us = v[6];
  return f;
}

TEST(PerftestText, LatencyTablesAreThoseOfTheRealPrograms) {
  for (const char* name : {"read_lat.client.txt", "write_lat.client.txt", "write_lat.server.txt", "send_lat.client.txt",
                           "send_lat.server.txt", "atomic_lat.client.txt"}) {
    const auto lines = fixture(name);
    EXPECT_EQ(perftest_lat_columns(false, false), line_starting(lines, " #bytes")) << name;
    const std::string row = first_row(lines);
    const auto v = numbers(row);
    ASSERT_EQ(v.size(), 9u) << name << ": " << row;
    EXPECT_EQ(perftest_lat_row(lat(static_cast<std::uint32_t>(v[0]), static_cast<std::uint64_t>(v[1]),
                                   {v[2], v[3], v[4], v[5], v[6], v[7], v[8]})),
              row)
        << name;
  }
  const auto lines = fixture("read_lat_duration.client.txt");
  EXPECT_EQ(perftest_lat_columns(true, false), line_starting(lines, " #bytes"));
  const std::string row = line_starting(lines, " 2 ");
  const auto v = numbers(row);
  ASSERT_EQ(v.size(), 4u) << row;
  LatDurationFigures d;
  d.size = 2;
  d.iterations = static_cast<std::uint64_t>(v[1]);
  d.t_avg_us = v[2];
  d.tps = v[3];
  EXPECT_EQ(perftest_lat_duration_row(d), row);
}

TEST(PerftestText, OutputFlagPrintsTheOneFigure) {
  const std::string bw_only = fixture("write_bw_output_bw.client.txt").at(0);
  const PerftestStyle bs{false, PerftestOutput::Bandwidth, false, false};
  EXPECT_EQ(perftest_result(bs, bw(65536, 200, 1, std::stod(bw_only), 1, false)), bw_only);
  const std::string mr_only = fixture("read_bw_output_mr.client.txt").back();
  const PerftestStyle mr{false, PerftestOutput::MessageRate, false, false};
  EXPECT_EQ(perftest_result(mr, bw(65536, 200, 1, 2, std::stod(mr_only), false)), mr_only);
  const std::string lat_only = fixture("read_lat_output_lat.client.txt").back();
  const PerftestStyle lt{false, PerftestOutput::Latency, false, false};
  EXPECT_EQ(perftest_result(lt, lat(2, 200, {0, 0, 0, std::stod(lat_only), 0, 0, 0})), lat_only);
  EXPECT_EQ(perftest_preamble(rxe(Verb::Write, Measure::Bandwidth, false), mr, {}, {}), "");
  EXPECT_EQ(perftest_closing(mr), "");
  EXPECT_EQ(to_string(PerftestOutput::MessageRate), "message_rate");
  EXPECT_EQ(perftest_output_from_string("latency"), PerftestOutput::Latency);
  EXPECT_EQ(perftest_output_from_string("full"), std::nullopt) << "not a value of --output";
}

// The whole client printout of a run, in perftest's order, against write_bw.client.txt.
TEST(PerftestText, AClientRunPrintsAsTheRealClient) {
  const auto lines = fixture("write_bw.client.txt");
  PerftestHeader h = rxe(Verb::Write, Measure::Bandwidth, false);
  h.cq_mod = 1;
  bool remote = false;
  const PerftestDest mine = dest_of(line_starting(lines, " local address"), remote);
  const PerftestDest peer = dest_of(line_starting(lines, " remote address"), remote);
  const PerftestStyle st;
  const std::string ours = perftest_preamble(h, st, {mine}, {peer}) +
                           perftest_result(st, bw_row_of(line_starting(lines, " 65536 "), false)) + perftest_closing(st);
  std::string theirs;
  for (const auto& l : lines) theirs += l;
  EXPECT_EQ(ours, theirs);
  // A READ latency server shows no table.
  PerftestHeader s = rxe(Verb::Read, Measure::Latency, true);
  EXPECT_FALSE(perftest_side_shows_table(s));
  s.verb = Verb::Write;
  EXPECT_TRUE(perftest_side_shows_table(s));
}

}  // namespace
}  // namespace roce::client::perftest_text_test
