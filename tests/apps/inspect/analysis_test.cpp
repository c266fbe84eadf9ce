// The flow analysis behind --summary, -Y retransmission and --plot: retransmissions and
// duplicates, pairing of requests with responses, RTT, ACK coalescing, NAKs, CE and CNPs.
#include "apps/inspect/analysis.hpp"

#include <gtest/gtest.h>

#include "apps/inspect/psn_plot.hpp"
#include "apps/inspect/rate_timeline.hpp"
#include "apps/inspect/summary.hpp"
#include "tests/apps/inspect/frames.hpp"
#include "tests/support/json.hpp"

namespace roce::inspect::analysis_test {
namespace {

using proto::NakCode;
using proto::Syndrome;
using test::ack;
using test::send;

constexpr std::int64_t kUs = 1000;

struct Capture {
  Analysis a{AnalysisOptions{true}};
  Summary s;
  std::vector<FrameView> views;
  void add(const std::vector<std::byte>& frame, std::int64_t t_us) {
    FrameView v = test::view_of(frame, views.size() + 1, 1'000'000'000 + t_us * kUs);
    a.observe_all(v);
    s.add(v);
    views.push_back(v);
  }
  const Flow* flow(std::uint32_t qpn) const {
    for (const auto& f : a.flows())
      if (f->key.qpn == qpn) return f.get();
    return nullptr;
  }
};

// A sends PSN 0..4 (AckReq on 2 and 4); B ACKs 2; A retransmits 3 (not yet acknowledged) and
// 1 (acknowledged: a duplicate); B NAKs once, ACKs 4, then an RNR NAK.
Capture retransmissions() {
  Capture r;
  for (std::uint32_t psn = 0; psn < 5; ++psn) r.add(send(psn, psn == 2 || psn == 4), 10 * psn);
  r.add(ack(2), 60);
  r.add(send(3), 70);
  r.add(send(1), 80);
  r.add(ack(5, Syndrome::nak(NakCode::PsnSequenceError)), 85);
  r.add(ack(4, Syndrome::ack(), 2), 90);
  r.add(ack(4, Syndrome::rnr_nak(3)), 95);
  return r;
}

TEST(Analysis, MarksRetransmissionsAndDuplicates) {
  const Capture r = retransmissions();
  for (std::size_t i = 0; i < 5; ++i) EXPECT_FALSE(r.views[i].flag(FrameFlag::Retransmission)) << i;
  EXPECT_TRUE(r.views[6].flag(FrameFlag::Retransmission));
  EXPECT_FALSE(r.views[6].flag(FrameFlag::Duplicate));  // PSN 3 was not acknowledged yet
  EXPECT_TRUE(r.views[7].flag(FrameFlag::Retransmission));
  EXPECT_TRUE(r.views[7].flag(FrameFlag::Duplicate));   // PSN 1 was, by the ACK of 2
  const Flow* req = r.flow(test::kB.qpn);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->requests, 7u);
  EXPECT_EQ(req->retransmitted, 2u);
  EXPECT_EQ(req->duplicates, 1u);
  EXPECT_EQ(req->retransmitted_distinct, 2u);
  EXPECT_EQ(req->goodput.total(), 5u * 64);  // retransmitted payload is not goodput
}

TEST(Analysis, PairsResponsesWithTheirRequestsAndTimesThem) {
  const Capture r = retransmissions();
  const Flow* req = r.flow(test::kB.qpn);
  const Flow* resp = r.flow(test::kA.qpn);
  ASSERT_TRUE(req && resp);
  EXPECT_EQ(req->peer, resp);
  EXPECT_EQ(resp->peer, req);
  // RTT: PSN 2 sent at 20 us, ACKed at 60; PSN 4 at 40, ACKed at 90.
  EXPECT_EQ(req->rtt.samples, 2u);
  EXPECT_EQ(req->rtt.min_ns, 40 * kUs);
  EXPECT_EQ(req->rtt.max_ns, 50 * kUs);
  EXPECT_EQ(resp->acks, 2u);
  EXPECT_EQ(resp->packets_acked, 5u);   // 0..2, then 3..4
  EXPECT_EQ(resp->coalesced_acks, 2u);  // each covers more than one packet
  EXPECT_EQ(resp->naks.at(0x60), 1u);
  EXPECT_EQ(resp->naks.at(Syndrome::rnr_nak(3).raw), 1u);
  EXPECT_EQ(resp->nak_psns.at(0x60).front(), 5u);
}

TEST(Analysis, RetransmittedRequestsGiveNoRttSample) {
  Capture r;
  r.add(send(0), 0);
  r.add(send(0), 100);  // retransmitted before any answer: which one the ACK answers is unknown
  r.add(ack(0), 110);
  EXPECT_EQ(r.flow(test::kB.qpn)->rtt.samples, 0u);
}

TEST(Analysis, CountsCeMarksAndCnpsPerFlow) {
  Capture r;
  r.add(send(0, true, 64, true), 0);
  r.add(test::cnp_to_a(), 5);
  r.add(ack(0), 10);
  EXPECT_EQ(r.flow(test::kB.qpn)->ce, 1u);
  EXPECT_EQ(r.flow(test::kA.qpn)->cnps, 1u);
  EXPECT_EQ(r.flow(test::kA.qpn)->acks, 1u);
}

TEST(Analysis, AFilterDecidesWhatIsCountedButEveryFrameIsSequenced) {
  Analysis a;
  std::vector<std::vector<std::byte>> frames{send(0), send(1), send(1)};
  int shown = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    FrameView v = test::view_of(frames[i], i + 1, static_cast<std::int64_t>(i));
    shown += a.observe(v, [](const FrameView& f) { return f.flag(FrameFlag::Retransmission); });
  }
  EXPECT_EQ(shown, 1);
  ASSERT_EQ(a.flows().size(), 1u);
  EXPECT_EQ(a.flows()[0]->frames, 1u);
  EXPECT_EQ(a.flows()[0]->retransmitted, 1u);
}

TEST(Summary, PerQpAndPerConnectionInTextAndJson) {
  const Capture r = retransmissions();
  const std::string text = r.s.human(true, r.a, {});
  EXPECT_NE(text.find("A 10.0.0.1 qp 0x000011 <-> B 10.0.0.2 qp 0x000022  RC"), std::string::npos) << text;
  EXPECT_NE(text.find("requests A->B: 7, 2 retransmitted (2 PSNs: 1 3), 1 duplicates"), std::string::npos) << text;
  EXPECT_NE(text.find("ACKs B->A: 2 covering 5 packets (2.50 packets per ACK, 2 coalesced)"), std::string::npos) << text;
  EXPECT_NE(text.find("NAK psn-sequence-error x1 (PSNs 5)"), std::string::npos) << text;
  EXPECT_NE(text.find("RTT A->B request to its response: 2 samples, min 40.0 us"), std::string::npos) << text;
  EXPECT_NE(text.find("goodput per"), std::string::npos) << text;

  const auto j = roce::test::parse_json(r.s.json(true, r.a, {}));
  ASSERT_EQ(j["connections"].array().size(), 1u);
  const auto& c = j["connections"].array()[0];
  EXPECT_EQ(c["a"].str(), "10.0.0.1");
  EXPECT_EQ(c["a_qpn"].u64(), 0x11u);
  EXPECT_EQ(c["b_qpn"].u64(), 0x22u);
  EXPECT_EQ(c["a_to_b"]["retransmitted"].u64(), 2u);
  EXPECT_EQ(c["a_to_b"]["rtt"]["samples"].u64(), 2u);
  EXPECT_EQ(c["b_to_a"]["naks"].array().size(), 2u);
  EXPECT_FALSE(c["goodput_series_bps"].array().empty());
  EXPECT_EQ(j["qps"].array().size(), 2u);
}

TEST(PsnPlot, DrawsFlowsWithRetransmissionsAndNaksMarked) {
  const Capture r = retransmissions();
  PlotOptions o;
  o.title = "t";
  const std::string svg = psn_plot_svg(r.a, o);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("10.0.0.1 \u2192 10.0.0.2 QP 0x000022: 5 packets, 2 retransmitted, 2 NAKs"), std::string::npos) << svg;
  EXPECT_NE(svg.find("#d62728"), std::string::npos);  // the retransmission marks
  EXPECT_EQ(psn_plot_svg(Analysis{}, o), "");
}

TEST(RateTimeline, KeepsItsBucketCountBoundedAndItsTotalExact) {
  RateTimeline t;
  for (std::int64_t i = 0; i < 100000; ++i) t.add(i * 997 * kUs, 100);
  EXPECT_EQ(t.total(), 100u * 100000);
  EXPECT_GT(t.bucket_ns(), 1000);
  EXPECT_NEAR(t.bytes_between(0, 200000LL * 997 * kUs), 100.0 * 100000, 1e-6);
  EXPECT_NEAR(t.bytes_between(0, 50000LL * 997 * kUs), 100.0 * 50000, 100.0 * 2);
  EXPECT_EQ(nice_interval_ns(11'650'000, 10), 2'000'000);
  EXPECT_EQ(nice_interval_ns(1000, 10), 100);
}

}  // namespace
}  // namespace roce::inspect::analysis_test
