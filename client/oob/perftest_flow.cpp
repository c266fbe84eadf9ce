#include "client/oob/perftest_flow.hpp"

namespace roce::client {

namespace {

using enum FlowStep;

void add(std::vector<FlowOp>& f, FlowStep s, std::uint32_t size_index = 0) { f.push_back(FlowOp{s, size_index}); }

// ib_{write,read,atomic}_bw: the records, the "remote print" round, one sync after RTR; the
// server then waits in its next sync while the client runs every size.
void rdma_bw(const PerftestTest& t, std::vector<FlowOp>& f) {
  add(f, RecordsAll);
  add(f, Connect);
  add(f, RecordsAll);
  add(f, RecordFirst);
  if (t.infinite) {
    // --run_infinitely: no sync before the traffic, and perftest's client posts until it is
    // killed. A -b server posts for ever too, so nothing follows; a one-way server waits in its
    // closing sync for the client's results, which is where a client that stops cleanly goes.
    add(f, Traffic);
    if (t.duplex) return;
    add(f, RecordFirst);
    add(f, Results);
    add(f, RecordFirst);
    add(f, Done);
    return;
  }
  const bool sweep = t.all_sizes;
  const std::uint32_t sizes = sweep ? t.sizes : 1;
  for (std::uint32_t i = 0; i < sizes; ++i) {
    if (t.duplex) add(f, RecordFirst);
    add(f, Traffic, i);
    // Only the sweep syncs again after each size (perftest >= 4.6, which 6.06 is).
    if (t.duplex && sweep) add(f, RecordFirst);
    if (t.duplex) add(f, Results);
  }
  if (!t.duplex) {
    add(f, RecordFirst);
    add(f, Results);
  }
  add(f, RecordFirst);
  add(f, Done);
}

// ib_send_bw / ib_send_lat: the records, one sync after RTR (before the remote print), the
// remote print round; then per size a sync once the server's receives are up.
void send_test(const PerftestTest& t, std::vector<FlowOp>& f) {
  add(f, RecordsAll);
  add(f, Connect);
  add(f, RecordFirst);
  add(f, RecordsAll);
  const std::uint32_t sizes = t.all_sizes ? t.sizes : 1;
  for (std::uint32_t i = 0; i < sizes; ++i) {
    add(f, RecordFirst);
    add(f, Traffic, i);
    if (t.infinite) return;
    if (t.measure == Measure::Bandwidth) {
      if (t.duplex && !t.duration) add(f, Results);
      // send_bw.c syncs after each size of a sweep, not after a single size.
      if (t.all_sizes) add(f, RecordFirst);
    }
  }
  add(f, RecordFirst);
  add(f, Done);
}

// ib_{write,read,atomic}_lat: QP 0's record alone first, the records, the remote print round,
// one sync after RTR. ib_write_lat ends there (no close); the read and atomic servers close
// right away and the client closes after its traffic.
void rdma_lat(const PerftestTest& t, std::vector<FlowOp>& f) {
  add(f, RecordFirst);
  add(f, RecordsAll);
  add(f, Connect);
  add(f, RecordsAll);
  add(f, RecordFirst);
  const std::uint32_t sizes = t.all_sizes ? t.sizes : 1;
  for (std::uint32_t i = 0; i < sizes; ++i) add(f, Traffic, i);
  if (t.verb == Verb::Write) return;
  add(f, RecordFirst);
  add(f, Done);
}

std::string ordinal(std::size_t n) {
  const char* suffix = n % 100 / 10 == 1 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

}  // namespace

std::string to_string(FlowStep s) {
  switch (s) {
    case RecordsAll: return "records";
    case RecordFirst: return "sync";
    case Connect: return "connect";
    case Traffic: return "traffic";
    case CmSync: return "rdma_cm sync";
    case CmConnect: return "rdma_cm connect";
    case Results: return "results";
    case Done: return "done";
  }
  return "unknown";
}

std::string perftest_program(Verb verb, Measure measure) { return "ib_" + to_string(verb) + "_" + to_string(measure); }

std::optional<std::pair<Verb, Measure>> parse_perftest_program(std::string_view name) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send, Verb::Atomic})
    for (Measure m : {Measure::Bandwidth, Measure::Latency})
      if (name == perftest_program(v, m)) return std::pair{v, m};
  return std::nullopt;
}

std::vector<FlowOp> perftest_flow(const PerftestTest& t) {
  std::vector<FlowOp> f;
  if (t.rdma_cm) {
    // Every main calls create_rdma_cm_connection before its first ctx_hand_shake.
    add(f, CmSync);
    add(f, CmConnect);
    add(f, CmSync);
  }
  if (t.verb == Verb::Send) send_test(t, f);
  else if (t.measure == Measure::Bandwidth) rdma_bw(t, f);
  else rdma_lat(t, f);
  if (t.rdma_cm && !f.empty() && f.back().step == Done) f.pop_back();
  return f;
}

std::string describe_step(const std::vector<FlowOp>& flow, std::size_t index, unsigned qp) {
  if (index >= flow.size()) return "after the end of the exchange";
  bool traffic_before = false;
  std::size_t rounds = 0, cm_syncs = 0;
  for (std::size_t i = 0; i < index; ++i) {
    cm_syncs += flow[i].step == CmSync;
    traffic_before = traffic_before || flow[i].step == Traffic;
    rounds += flow[i].step == RecordsAll || flow[i].step == RecordFirst;
  }
  const std::string when = traffic_before ? " (after the traffic)" : " (before the traffic)";
  switch (flow[index].step) {
    case RecordsAll: return "QP " + std::to_string(qp) + "'s record in the " + ordinal(rounds + 1) + " round of QP records" + when;
    case RecordFirst: return "QP 0's record in the " + ordinal(rounds + 1) + " round of QP records" + when;
    case Results: return "the results" + when;
    case Done: return "\"done\"";
    case Connect: return "bringing the QPs up";
    case Traffic: return "the traffic";
    case CmSync: return std::string(cm_syncs == 0 ? "the sync before" : "the sync after") + " the rdma_cm connections of the data QPs";
    case CmConnect: return "connecting the data QPs through rdma_cm";
  }
  return "?";
}

std::optional<unsigned> RecordOrder::latency_qps() const {
  if (qpns_.size() < 3 || bandwidth_order()) return std::nullopt;
  for (std::size_t k = 2; k < qpns_.size(); ++k)
    if (qpns_[k] == qpns_[0]) return static_cast<unsigned>(k - 1);
  return std::nullopt;
}

bool RecordOrder::latency_prelude_complete() const {
  const auto n = latency_qps();
  if (!n || qpns_.size() < 2 * *n + 2) return false;
  // The second round repeats the first, and QP 0's sync closes it.
  for (unsigned i = 0; i < *n; ++i)
    if (qpns_[1 + *n + i] != qpns_[1 + i]) return false;
  return qpns_[2 * *n + 1] == qpns_[0];
}

}  // namespace roce::client
