// roce-gen's command line: perftest 4.5's (every common flag of the ib_* tests, with its
// meaning, defaults and messages: apps/gen/perftest_flags.hpp) plus where to run (DPDK port,
// IP) and congestion control.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client/connector.hpp"
#include "client/traffic/spec.hpp"
#include "apps/gen/perftest_flags.hpp"
#include "dataplane/rx_backlog.hpp"
#include "lib/cc/params.hpp"

namespace roce::client {

struct GenOptions {
  bool help = false;                 // --help: print `help_text` and exit
  std::string help_text;
  TrafficSpec spec;
  bool pingpong = false;             // ibv_rc_pingpong's exchange and SEND ping-pong
  bool ud_pingpong = false;          // ibv_ud_pingpong's: UD datagrams, echoed
  std::string server;                // client mode: the peer's address for the TCP exchange
  bool listen = false;               // server mode
  bool rdma_cm = false;              // -R: the exchange and the QPs' connections over rdma_cm
  std::uint16_t oob_port = 18515;
  // Selective repeat with a rocev2-dp peer that agrees (docs/loss.md); 0 = go-back-N always.
  std::uint32_t selective_repeat = kDefaultSelectiveRepeatWindow;
  PerftestFlags perftest;            // the common flags of the perftest tests (write, read, send, atomic)
  bool json = false;
  bool verify = false;
  QpParams qp;
  std::string dev;                   // DPDK port name
  std::vector<std::string> vdevs;    // virtual devices to create first
  rdma::IpAddress ip{};                    // IPv4 or IPv6: the port's one GID
  bool dcqcn = false;
  cc::Profile dcqcn_profile = cc::Profile::Paper;
  double line_rate_gbps = 10;
  dp::BacklogConfig backlog_marks{};  // marks from the RX queue's backlog (dataplane/rx_backlog.hpp); off by default
  bool overrun_marks = true;  // the port's receive drops marked CE (dataplane/overrun.hpp); false: only counted
  unsigned workers = 1;
};

// Parses the arguments after `--` (argv[0] included). On error returns the one-line reason.
Result<GenOptions> parse_gen_options(const std::vector<std::string>& args);

// Whether --json is among the arguments: errors are then reported as JSON too, including the
// ones that stop the parser.
bool json_requested(const std::vector<std::string>& args);

}  // namespace roce::client
