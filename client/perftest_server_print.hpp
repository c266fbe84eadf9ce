// What a perftest server prints, for a session roce-appliance or roce-gen --listen served: the
// banner, the test information, both sides' address lines, and the table with the figures
// perftest's server shows (the client's, which RDMA bandwidth tests send over, or its own for
// SEND bandwidth). perftest's server knows its test by its program name; ours takes it from the
// session (what its QPs answered, whether figures came), or from the settings when given.
#pragma once

#include <optional>
#include <string>

#include "client/oob_server.hpp"
#include "client/traffic/perftest_text.hpp"

namespace roce::client {

struct ServerPrintSettings {
  std::string device;               // the DPDK port
  std::uint32_t recv_depth = 256;   // receives kept posted per QP (perftest's RX depth)
  std::uint32_t max_rd_atomic = 16; // READ/atomic requests a QP takes in flight
  std::optional<ServedTest> test;   // the test, when the server was told it (--perftest)
  bool gbits = false;               // the server's --report_gbits (the column titles' unit)
};

struct SessionTest {
  Verb verb = Verb::Write;
  Measure measure = Measure::Bandwidth;
};
SessionTest perftest_test_of(const SessionReport& r, const ServerPrintSettings& s);

// Empty for sessions that were not perftest's.
std::string perftest_server_printout(const SessionReport& r, const ServerPrintSettings& s);

}  // namespace roce::client
