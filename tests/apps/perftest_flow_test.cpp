// perftest 4.5's exchange per test, pinned to what its mains do (src/*_bw.c, *_lat.c at tag
// v4.5-0.17; docs/perftest.md walks through them): R = one record per QP, F = QP 0's record
// alone, C = QPs up, T = one size's traffic, X = results, D = "done"; under -R, S = the sync
// around M, the data QPs' rdma_cm connections.
#include <gtest/gtest.h>

#include "client/oob/perftest_flow.hpp"

namespace roce::client {
namespace {

std::string letters(const std::vector<FlowOp>& f) {
  std::string s;
  for (const FlowOp& op : f) {
    switch (op.step) {
      case FlowStep::RecordsAll: s += 'R'; break;
      case FlowStep::RecordFirst: s += 'F'; break;
      case FlowStep::Connect: s += 'C'; break;
      case FlowStep::Traffic: s += 'T'; break;
      case FlowStep::Results: s += 'X'; break;
      case FlowStep::Done: s += 'D'; break;
      case FlowStep::CmSync: s += 'S'; break;
      case FlowStep::CmConnect: s += 'M'; break;
    }
  }
  return s;
}

std::string flow(Verb v, Measure m, std::uint32_t sizes = 1, bool duplex = false, bool duration = false,
                 bool infinite = false, bool rdma_cm = false) {
  PerftestTest t;
  t.rdma_cm = rdma_cm;
  t.verb = v;
  t.measure = m;
  t.sizes = sizes;
  t.all_sizes = sizes > 1;
  t.duplex = duplex;
  t.duration = duration;
  t.infinite = infinite;
  return letters(perftest_flow(t));
}

TEST(PerftestFlow, RdmaBandwidthTestsSyncThenTheClientReportsAndBothClose) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Atomic}) {
    SCOPED_TRACE(to_string(v));
    EXPECT_EQ(flow(v, Measure::Bandwidth), "RCRFTFXFD");
  }
  // A sweep runs its sizes back to back with no sync between them.
  EXPECT_EQ(flow(Verb::Write, Measure::Bandwidth, 3), "RCRFTTTFXFD");
  EXPECT_EQ(flow(Verb::Read, Measure::Bandwidth, 2), "RCRFTTFXFD");
}

TEST(PerftestFlow, BidirectionalBandwidthSyncsAndReportsPerSize) {
  EXPECT_EQ(flow(Verb::Write, Measure::Bandwidth, 1, true), "RCRFFTXFD");
  EXPECT_EQ(flow(Verb::Read, Measure::Bandwidth, 2, true), "RCRFFTFXFTFXFD");
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth, 1, true), "RCFRFTXFD");
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth, 1, true, true), "RCFRFTFD");
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth, 2, true), "RCFRFTXFFTXFFD");
}

TEST(PerftestFlow, SendTestsSyncAfterRtrAndBeforeEachSize) {
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth), "RCFRFTFD");
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth, 2), "RCFRFTFFTFFD");
  EXPECT_EQ(flow(Verb::Send, Measure::Latency), "RCFRFTFD");
  EXPECT_EQ(flow(Verb::Send, Measure::Latency, 3), "RCFRFTFTFTFD");
}

TEST(PerftestFlow, LatencyTestsSendQpZerosRecordFirstAndWriteLatNeverCloses) {
  EXPECT_EQ(flow(Verb::Write, Measure::Latency), "FRCRFT");
  EXPECT_EQ(flow(Verb::Write, Measure::Latency, 3), "FRCRFTTT");
  EXPECT_EQ(flow(Verb::Read, Measure::Latency), "FRCRFTFD");
  EXPECT_EQ(flow(Verb::Read, Measure::Latency, 2), "FRCRFTTFD");
  EXPECT_EQ(flow(Verb::Atomic, Measure::Latency), "FRCRFTFD");
}

// --run_infinitely: a one-way RDMA server waits in its closing sync whenever the client ends;
// a -b server and a SEND server post for ever, so nothing follows the traffic.
TEST(PerftestFlow, RunInfinitelyClosesOnlyWhereTheServerWaits) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Atomic}) {
    SCOPED_TRACE(to_string(v));
    EXPECT_EQ(flow(v, Measure::Bandwidth, 1, false, true, true), "RCRFTFXFD");
    EXPECT_EQ(flow(v, Measure::Bandwidth, 1, true, true, true), "RCRFT");
  }
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth, 1, false, true, true), "RCFRFT");
}

TEST(PerftestFlow, TrafficStepsCountTheSizes) {
  PerftestTest t;
  t.verb = Verb::Send;
  t.measure = Measure::Latency;
  t.sizes = 3;
  t.all_sizes = true;
  std::vector<std::uint32_t> seen;
  for (const FlowOp& op : perftest_flow(t))
    if (op.step == FlowStep::Traffic) seen.push_back(op.size_index);
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(PerftestFlow, ProgramNamesRoundTrip) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send, Verb::Atomic})
    for (Measure m : {Measure::Bandwidth, Measure::Latency}) {
      const auto p = parse_perftest_program(perftest_program(v, m));
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(p->first, v);
      EXPECT_EQ(p->second, m);
    }
  EXPECT_EQ(perftest_program(Verb::Write, Measure::Latency), "ib_write_lat");
  EXPECT_FALSE(parse_perftest_program("ib_write").has_value());
  EXPECT_FALSE(parse_perftest_program("ib_send_bw ").has_value());
}

TEST(PerftestFlow, StepsAreDescribedByRoundAndPhase) {
  PerftestTest t;
  t.verb = Verb::Read;
  t.measure = Measure::Bandwidth;
  const auto f = perftest_flow(t);
  EXPECT_EQ(describe_step(f, 0, 2), "QP 2's record in the 1st round of QP records (before the traffic)");
  EXPECT_EQ(describe_step(f, 2, 3), "QP 3's record in the 2nd round of QP records (before the traffic)");
  EXPECT_EQ(describe_step(f, 3), "QP 0's record in the 3rd round of QP records (before the traffic)");
  EXPECT_EQ(describe_step(f, 5), "QP 0's record in the 4th round of QP records (after the traffic)");
  EXPECT_EQ(describe_step(f, 6), "the results (after the traffic)");
  EXPECT_EQ(describe_step(f, 8), "\"done\"");
}

// The records a client of each test sends before its traffic, QP numbers 10, 11, ...
std::vector<std::uint32_t> prelude(const PerftestTest& t, unsigned qps) {
  std::vector<std::uint32_t> out;
  for (const FlowOp& op : perftest_flow(t)) {
    if (op.step == FlowStep::Traffic) break;
    if (op.step == FlowStep::RecordFirst) out.push_back(10);
    if (op.step == FlowStep::RecordsAll)
      for (unsigned i = 0; i < qps; ++i) out.push_back(10 + i);
  }
  return out;
}

TEST(RecordOrder, FindsTheEndOfALatencyTestsRecordsForEveryQpCount) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Atomic})
    for (unsigned n = 1; n <= 8; ++n) {
      SCOPED_TRACE(to_string(v) + " -q " + std::to_string(n));
      PerftestTest t;
      t.verb = v;
      t.measure = Measure::Latency;
      const auto qpns = prelude(t, n);
      ASSERT_EQ(qpns.size(), 2 * n + 2);
      RecordOrder order;
      for (std::size_t k = 0; k < qpns.size(); ++k) {
        EXPECT_FALSE(order.latency_prelude_complete()) << "after " << k << " records";
        order.add(qpns[k]);
        EXPECT_FALSE(order.bandwidth_order());
      }
      EXPECT_TRUE(order.latency_prelude_complete());
      EXPECT_EQ(order.latency_qps(), n);
    }
}

TEST(RecordOrder, OtherTestsShowTheirOrderFromTheSecondRecordWithMoreThanOneQp) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Atomic, Verb::Send})
    for (Measure m : {Measure::Bandwidth, Measure::Latency}) {
      if (m == Measure::Latency && v != Verb::Send) continue;
      PerftestTest t;
      t.verb = v;
      t.measure = m;
      RecordOrder order;
      for (std::uint32_t q : prelude(t, 4)) order.add(q);
      EXPECT_TRUE(order.bandwidth_order()) << perftest_program(v, m);
      EXPECT_FALSE(order.latency_prelude_complete()) << perftest_program(v, m);
    }
}

TEST(RecordOrder, OneQpLooksTheSameInEveryTest) {
  PerftestTest t;
  t.verb = Verb::Write;
  t.measure = Measure::Bandwidth;
  RecordOrder order;
  for (std::uint32_t q : prelude(t, 1)) order.add(q);
  EXPECT_FALSE(order.bandwidth_order());
  EXPECT_FALSE(order.latency_prelude_complete());  // 3 records: a latency test would send a 4th
  order.add(10);
  EXPECT_TRUE(order.latency_prelude_complete());
}

// -R (create_rdma_cm_connection before the first ctx_hand_shake in every main; no "done" in
// ctx_close_connection on the rdma_cm channel): the same order inside.
TEST(PerftestFlow, RdmaCmConnectsBetweenTwoSyncsFirstAndSendsNoDone) {
  EXPECT_EQ(flow(Verb::Write, Measure::Bandwidth, 1, false, false, false, true), "SMSRCRFTFXF");
  EXPECT_EQ(flow(Verb::Read, Measure::Bandwidth, 3, false, false, false, true), "SMSRCRFTTTFXF");
  EXPECT_EQ(flow(Verb::Send, Measure::Bandwidth, 1, false, false, false, true), "SMSRCFRFTF");
  EXPECT_EQ(flow(Verb::Send, Measure::Latency, 1, false, false, false, true), "SMSRCFRFTF");
  EXPECT_EQ(flow(Verb::Read, Measure::Latency, 1, false, false, false, true), "SMSFRCRFTF");
  // ib_write_lat has no closing exchange either way.
  EXPECT_EQ(flow(Verb::Write, Measure::Latency, 1, false, false, false, true), "SMSFRCRFT");
  EXPECT_EQ(flow(Verb::Write, Measure::Bandwidth, 1, true, false, false, true), "SMSRCRFFTXF");
  PerftestTest t;
  t.rdma_cm = true;
  const auto f = perftest_flow(t);
  EXPECT_EQ(describe_step(f, 0), "the sync before the rdma_cm connections of the data QPs");
  EXPECT_EQ(describe_step(f, 2), "the sync after the rdma_cm connections of the data QPs");
  EXPECT_EQ(describe_step(f, 3), "QP 0's record in the 1st round of QP records (before the traffic)");
}

}  // namespace
}  // namespace roce::client
