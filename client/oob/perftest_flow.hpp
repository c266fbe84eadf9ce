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

#include "client/traffic/spec.hpp"

namespace roce::client {

enum class FlowStep : std::uint8_t {
  RecordsAll,   // one record per QP, QP 0 first (ctx_hand_shake in a loop over the QPs)
  RecordFirst,  // QP 0's record alone (ctx_hand_shake on my_dest / &my_dest[0])
  Connect,      // local: the QPs go to RTR and RTS with the records of the first RecordsAll
  Traffic,      // local: one message size's traffic
  Results,      // xchg_bw_reports: size, iterations, peak, average, message rate
  Done,         // "done": both sides write it and close, neither reads it (ctx_close_connection)
  // -R (rdma_cm, create_rdma_cm_connection): the data QPs connect through the CM between two
  // syncs that carry QP 0's record while it is still all zeros (main's memset).
  CmSync,       // a swap of the zeroed record
  CmConnect,    // local: the client connects every data QP through rdma_cm, the server accepts them
};

std::string to_string(FlowStep s);

struct FlowOp {
  FlowStep step;
  std::uint32_t size_index = 0;  // Traffic: which size of a -a sweep
};

// What decides the sequence. `all_sizes` is a -a sweep of `sizes` sizes (perftest's RUN_ALL; its
// atomic tests refuse -a). `duplex` is -b, `duration` -D, `infinite` --run_infinitely (whose
// client perftest ends only by a signal: the steps after its traffic are those a server still
// waits for when the client stops).
struct PerftestTest {
  Verb verb = Verb::Write;
  Measure measure = Measure::Bandwidth;
  std::uint32_t sizes = 1;
  bool all_sizes = false;
  bool duplex = false;
  bool duration = false;
  bool infinite = false;
  // -R: the exchange runs over an rdma_cm RC connection of its own, the data QPs connect
  // through rdma_cm (CmSync, CmConnect, CmSync before the first record), and
  // ctx_close_connection sends no "done" there.
  bool rdma_cm = false;
};

// The perftest program that runs a test: "ib_write_bw", "ib_send_lat", ...
std::string perftest_program(Verb verb, Measure measure);
// "ib_read_lat" -> (read, latency); nullopt for any other name.
std::optional<std::pair<Verb, Measure>> parse_perftest_program(std::string_view name);

std::vector<FlowOp> perftest_flow(const PerftestTest& t);

// Where in the exchange a wire step is, for errors: "QP 2's record in the 2nd round of QP
// records", "the results (after the traffic)", ...
std::string describe_step(const std::vector<FlowOp>& flow, std::size_t index, unsigned qp = 0);

// A server's view of a client's records: it knows neither the test nor -q, but the order tells.
// ib_{write,read,atomic}_lat open with QP 0's record alone (q0 | q0..qN-1 | q0..qN-1 | q0 before
// their traffic); every other test opens with all its QPs (q0..qN-1 | ...). Once QP 0 comes round
// again in a latency test's order, N and the end of its 2N+2 records before the traffic are known.
// (With one QP the orders look alike until the traffic.)
class RecordOrder {
 public:
  void add(std::uint32_t qpn) { qpns_.push_back(qpn); }
  std::size_t count() const { return qpns_.size(); }
  // The second record named another QP than the first: not a latency test.
  bool bandwidth_order() const { return qpns_.size() >= 2 && qpns_[1] != qpns_[0]; }
  // N, once a latency test's order shows it (the third record of QP 0 opens the 2nd round).
  std::optional<unsigned> latency_qps() const;
  // All 2N+2 records before a latency test's traffic are in, in that test's order.
  bool latency_prelude_complete() const;

 private:
  std::vector<std::uint32_t> qpns_;
};

}  // namespace roce::client
