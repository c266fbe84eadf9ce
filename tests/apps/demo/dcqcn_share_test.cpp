// roce-demo's DCQCN picture: flows that join one after another on the bottleneck settle at their
// fair share, the trace has what the picture needs, and a seed gives the same picture twice.
#include "apps/demo/dcqcn_share.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace roce::client {
namespace {

struct Shared {
  ShareResult result;
  std::string csv;
};

Shared share(unsigned flows) {
  ShareConfig c;
  c.flows = flows;
  std::ostringstream csv;
  Shared r{run_dcqcn_share(c, csv), csv.str()};
  return r;
}

TEST(DcqcnShare, FlowsJoiningOneAfterAnotherSettleAtTheirFairShare) {
  for (unsigned flows : {2u, 3u}) {
    SCOPED_TRACE(flows);
    const Shared r = share(flows);
    ASSERT_EQ(r.result.throughput_bps.size(), flows);
    const double fair = 2e9 / flows;
    double total = 0;
    for (double bps : r.result.throughput_bps) {
      EXPECT_NEAR(bps, fair, 0.25 * fair);
      total += bps;
    }
    EXPECT_GT(total, 0.85 * 2e9);  // the bottleneck is used
    EXPECT_LE(total, 2e9 * 1.001);
    EXPECT_GT(r.result.jain, 0.95);
    EXPECT_GT(r.result.cnps, 0u);
    EXPECT_EQ(r.result.dropped, 0u);  // RED marks long before the 4 MB buffer fills
  }
}

TEST(DcqcnShare, TheTraceStartsEachFlowAtItsJoinTimeAtLineRate) {
  const Shared r = share(2);
  std::istringstream in(r.csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "t_us,qp,rc_gbps,rt_gbps,alpha");
  std::map<int, std::pair<double, double>> first;  // qp -> (t_us, rc)
  while (std::getline(in, line)) {
    double t, rc, rt, alpha;
    int qp;
    char c;
    std::istringstream f(line);
    ASSERT_TRUE(f >> t >> c >> qp >> c >> rc >> c >> rt >> c >> alpha) << line;
    first.try_emplace(qp, t, rc);
  }
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1].first, 0);
  EXPECT_NEAR(first[2].first, 15000, 100);  // 15 ms later
  EXPECT_EQ(first[1].second, 10);           // the 10 Gb/s line rate
  EXPECT_EQ(first[2].second, 10);
}

TEST(DcqcnShare, TheSameSeedDrawsTheSamePicture) { EXPECT_EQ(share(2).csv, share(2).csv); }

}  // namespace
}  // namespace roce::client
