// perftest 4.5's exchange test by test, in the order its mains run it (src/{write,read,send,
// atomic}_{bw,lat}.c at tag v4.5-0.17): which QP records cross the socket when, where the QPs come
// up, where each message size's traffic runs, where the results and "done" are. Every wire step
// is a swap (the client writes then reads, the server reads then writes), so both roles walk the
// same list; Connect and Traffic are local steps between them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/common/traffic/spec.hpp"

namespace roce::app {

enum class FlowStep : std::uint8_t {
  RecordsAll,   // one record per QP, QP 0 first (ctx_hand_shake in a loop over the QPs)
  RecordFirst,  // QP 0's record alone (ctx_hand_shake on my_dest / &my_dest[0])
  Connect,      // local: the QPs go to RTR and RTS with the records of the first RecordsAll
  Traffic,      // local: one message size's traffic
  Results,      // xchg_bw_reports: size, iterations, peak, average, message rate
  Done,         // "done": both sides write it and close, neither reads it (ctx_close_connection)
};

std::string to_string(FlowStep s);

struct FlowOp {
  FlowStep step;
  std::uint32_t size_index = 0;  // Traffic: which size of a -a sweep
};

// What decides the sequence. `sizes` > 1 is a -a sweep (perftest's RUN_ALL: atomics have one size
// there too). `duplex` is -b, `duration` -D, `infinite` --run_infinitely.
struct PerftestTest {
  Verb verb = Verb::Write;
  Measure measure = Measure::Bandwidth;
  std::uint32_t sizes = 1;
  bool all_sizes = false;
  bool duplex = false;
  bool duration = false;
  bool infinite = false;
};

// The perftest program that runs a test: "ib_write_bw", "ib_send_lat", ...
std::string perftest_program(Verb verb, Measure measure);
// "ib_read_lat" -> (read, latency); nullopt for any other name.
std::optional<std::pair<Verb, Measure>> parse_perftest_program(std::string_view name);

std::vector<FlowOp> perftest_flow(const PerftestTest& t);

// Where in the exchange a wire step is, for errors: "QP 2's record in the 2nd round of QP
// records", "the results (after the traffic)", ...
std::string describe_step(const std::vector<FlowOp>& flow, std::size_t index, unsigned qp = 0);

}  // namespace roce::app
