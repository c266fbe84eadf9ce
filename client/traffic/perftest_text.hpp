// perftest 4.5's printout, character for character: the test information block
// (ctx_print_test_info), the address line of each QP (ctx_print_pingpong_data), the result
// tables (RESULT_FMT*, REPORT_FMT* and print_full_bw_report / print_report_lat in
// src/perftest_parameters.c and .h). tests/apps/fixtures/perftest_output holds what the real
// programs print, and tests/apps/perftest_text_test.cpp compares.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client/oob/records.hpp"
#include "client/traffic/perftest_math.hpp"
#include "client/traffic/spec.hpp"

namespace roce::client {

// RESULT_LINE: the rule between the blocks.
std::string perftest_rule();
// What a perftest server prints before it waits for its client.
std::string perftest_waiting_banner();

// --output: the full printout, or only the average bandwidth, message rate or latency.
enum class PerftestOutput : std::uint8_t { Full, Bandwidth, MessageRate, Latency };
std::string to_string(PerftestOutput o);
std::optional<PerftestOutput> perftest_output_from_string(std::string_view s);

struct PerftestHeader {
  Verb verb = Verb::Write;
  Measure measure = Measure::Bandwidth;
  bool server = false;
  std::string atomic_type = "FETCH_AND_ADD";  // CMP_AND_SWAP or FETCH_AND_ADD (atomic tests)
  bool duplex = false;                         // -b
  std::string device;
  unsigned qps = 1;
  std::string connection = "RC";
  std::string pcie_relax_order = "Unsupported";  // ON, OFF, or Unsupported (a build without it)
  bool wr_api = false;                           // ibv_wr_* posting (OFF: ibv_post_send)
  std::uint32_t tx_depth = 128;
  std::uint32_t rx_depth = 512;
  std::uint32_t post_list = 1;
  std::uint32_t cq_mod = 100;
  std::uint32_t mtu_bytes = 1024;
  std::string link_type = "Ethernet";
  int gid_index = 0;                             // -1: no GID (InfiniBand without -x): not shown
  std::uint32_t inline_size = 0;
  std::uint32_t out_reads = 1;
  bool rdma_cm = false;                          // -R: "rdma_cm QPs : ON", "Data ex. method : rdma_cm"
  bool use_srq = false;                          // --use-srq: "Using SRQ : ON"
};

// From the first rule to the rule after "Data ex. method".
std::string perftest_header(const PerftestHeader& h);

// " local address: LID 0000 QPN 0x0011 PSN 0x7506f2 RKey 0x0002ad VAddr 0x007ff9c9c36000" and
// the GID line, as perftest prints a QP record of `verb`'s test.
std::string perftest_address(const PerftestDest& d, Verb verb, bool remote, bool with_gid = true);

// Column titles (with the CPU_Util column for --cpu_util under -D) and rows.
std::string perftest_bw_columns(bool gbits, bool cpu_util);
std::string perftest_bw_row(const BwFigures& f, bool gbits, std::optional<double> cpu_util_percent = {});
std::string perftest_lat_columns(bool duration, bool cpu_util);
std::string perftest_lat_row(const LatFigures& f, std::optional<double> cpu_util_percent = {});
std::string perftest_lat_duration_row(const LatDurationFigures& f, std::optional<double> cpu_util_percent = {});
// --output=bandwidth|message_rate|latency: the one figure, "%lf\n".
std::string perftest_single_figure(double v);

// How the results are shown: perftest's --report_gbits, --output, --cpu_util and -D.
struct PerftestStyle {
  bool gbits = false;
  PerftestOutput output = PerftestOutput::Full;
  bool cpu_util = false;
  bool duration = false;  // latency tests under -D have their own columns
};

// The printout of a run in the order perftest prints it: the preamble once the QPs are up (the
// header, every QP's local then remote address line, and the column titles of the table when
// this side shows one and `table`), a row per result, and the closing rule. With --output only
// the figure.
std::string perftest_preamble(const PerftestHeader& h, const PerftestStyle& st, const std::vector<PerftestDest>& mine,
                              const std::vector<PerftestDest>& peers, bool table = true);
std::string perftest_result(const PerftestStyle& st, const BwFigures& f, std::optional<double> cpu_util_percent = {});
std::string perftest_result(const PerftestStyle& st, const LatFigures& f, std::optional<double> cpu_util_percent = {});
std::string perftest_result(const PerftestStyle& st, const LatDurationFigures& f, std::optional<double> cpu_util_percent = {});
std::string perftest_closing(const PerftestStyle& st);
// A perftest server of READ and atomic latency tests shows no table (the client alone times).
bool perftest_side_shows_table(const PerftestHeader& h);

// Bandwidth in perftest's units: MB/sec (2^20 bytes) or Gb/sec (10^9 bits).
double perftest_bw_units(double bytes_per_s, bool gbits);

}  // namespace roce::client
