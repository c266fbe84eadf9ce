// perftest 4.5's common flags as roce-gen takes them: the text of each flag in, perftest's
// values out, with perftest's defaults and the dependencies its parser enforces
// (init_perftest_params, parser and force_dependecies in src/perftest_parameters.c), and its
// messages for bad values. Flags that name things this transport does not have (-d, -i, -x,
// -F, -e) are accepted and mapped or ignored with a one-line note.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/traffic/perftest_text.hpp"
#include "client/traffic/spec.hpp"
#include "lib/status.hpp"

namespace roce::client {

// What the command line gave, as text (nullopt: not given).
struct PerftestFlagText {
  std::optional<std::string> size, iters, tx_depth, rx_depth, qps, cq_mod, post_list, inline_size, out_reads;
  std::optional<std::string> duration, margin, ib_dev, ib_port, gid_index, tos, tclass, output;
  bool all = false, gbits = false, bidirectional = false, events = false, cpu_util = false;
  bool run_infinitely = false, mr_per_qp = false, no_peak = false, cpu_freq = false, ipv6 = false;
  bool use_srq = false;
};

struct PerftestFlags {
  std::uint32_t size = 65536;
  std::uint64_t iters = 1000;
  bool all = false;                  // -a: every size from 2 B to 8 MiB
  double duration_s = 0;             // -D (0: count iterations)
  double margin_s = 0;               // -f: left out at both ends of a -D run
  bool run_infinitely = false;       // a result every duration_s seconds until stopped
  unsigned qps = 1;
  std::uint32_t tx_depth = 128;
  std::uint32_t rx_depth = 512;
  std::uint32_t cq_mod = 100;        // a completion every cq_mod send WRs
  std::uint32_t post_list = 1;
  std::uint32_t inline_size = 0;
  std::uint32_t out_reads = 1;       // READ/atomic requests in flight per QP (-o)
  bool no_peak = false;
  bool gbits = false;
  bool bidirectional = false;
  bool events = false;
  bool cpu_util = false;             // CPU_Util column (only under -D, as in perftest)
  bool mr_per_qp = false;
  // --use-srq (SEND tests): the receives come from one shared receive queue of rx_depth, where
  // perftest makes one (its server; a client's SEND latency test or -b).
  bool use_srq = false;
  int gid_index = 0;
  std::optional<std::uint8_t> traffic_class;  // -T / --tclass: the IP TOS byte of our packets
  PerftestOutput output = PerftestOutput::Full;
  std::vector<std::string> notes;    // one line each: how an accepted flag is mapped or ignored
};

// `device_max_reads`: the most READ/atomic requests a QP may have in flight (what perftest reads
// from the device as max_qp_rd_atom), the default and the cap of -o.
Result<PerftestFlags> resolve_perftest_flags(Verb verb, Measure measure, const PerftestFlagText& text,
                                             std::uint32_t device_max_reads);

}  // namespace roce::client
