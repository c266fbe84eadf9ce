// Connect, hold, disconnect over a seeded lossy link that also duplicates MADs, many times:
// the outcomes are counted (both sides established, neither, or one side only until the
// other's timers settle it), and whatever happened, both CMs end with no ID, no half-open
// state and no timer: nothing leaks.
#include <gtest/gtest.h>

#include <cstdio>

#include "protocol/cma_header.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::cm_lossy_link_test {
namespace {

using proto::CmAttribute;

constexpr std::uint64_t kService = proto::rdma_service_id(proto::RdmaPortSpace::Tcp, 7471);

struct Tally {
  int runs = 0;
  int both_established = 0;
  int neither = 0;
  int one_side = 0;
  int passive_saw_disconnect = 0;
  std::uint64_t retransmissions = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t leaks = 0;
};

std::uint64_t sum(const CmCounters::PerAttribute& a) {
  std::uint64_t s = 0;
  for (auto v : a) s += v;
  return s;
}

void one_run(std::uint64_t seed, double loss, double duplicate, Tally& t) {
  CmPair p(config_a(), config_b(), seed);
  EXPECT_TRUE(p.b.cm.listen(kService).ok());
  auto_accept(p.b);
  auto_rtu(p.a);
  p.loss = loss;
  p.duplicate = duplicate;
  p.latency = 20 * kMicro + static_cast<Nanos>(seed % 7) * 10 * kMicro;
  auto id = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(p.a, p.b, kService, static_cast<std::uint32_t>(0x40 + seed)), now, out);
  });
  ASSERT_TRUE(id.ok());
  // Long enough for every REQ and REP retry (16 * 6144 ms) to have played out.
  p.run_for(120 * kSecond);
  const bool a_up = p.a.count(CmEventType::Established) == 1;
  const bool b_up = p.b.count(CmEventType::Established) == 1;
  if (p.a.cm.state_of(*id) == CmState::Established) {
    EXPECT_TRUE(p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.disconnect(*id, now, out); }).ok());
  }
  p.run_to_quiet();
  ++t.runs;
  if (a_up && b_up) ++t.both_established;
  else if (!a_up && !b_up) ++t.neither;
  else ++t.one_side;
  if (b_up && (p.b.count(CmEventType::DreqReceived) == 1 || p.b.count(CmEventType::RejReceived) == 1))
    ++t.passive_saw_disconnect;
  for (Side* s : {&p.a, &p.b}) {
    t.retransmissions += sum(s->cm.counters().tx_retries);
    t.duplicates += sum(s->cm.counters().rx_duplicates);
    const bool leaked = s->cm.id_count() != 0 || s->cm.half_open_count() != 0 || s->cm.next_deadline() != kNever;
    t.leaks += leaked;
    EXPECT_FALSE(leaked) << "seed " << seed << ": " << s->cm.id_count() << " IDs left";
    // Each side reports at most one of each outcome for its one ID.
    EXPECT_LE(s->count(CmEventType::Established), 1u) << "seed " << seed;
    EXPECT_LE(s->count(CmEventType::ReqReceived), 1u) << "seed " << seed;
    EXPECT_LE(s->count(CmEventType::TimewaitExit), 1u) << "seed " << seed;
  }
  EXPECT_EQ(p.in_flight(), 0u);
}

void print(const char* name, const Tally& t) {
  std::printf("%s: %d runs, %d both established, %d neither, %d one side; passive told of the end %d; "
              "%llu retransmissions, %llu duplicates received, %llu leaks\n",
              name, t.runs, t.both_established, t.neither, t.one_side, t.passive_saw_disconnect,
              static_cast<unsigned long long>(t.retransmissions), static_cast<unsigned long long>(t.duplicates),
              static_cast<unsigned long long>(t.leaks));
}

TEST(CmLossyLink, TwentyPercentLossAndTenPercentDuplicatesAlwaysConnectAndRelease) {
  Tally t;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) one_run(seed, 0.2, 0.1, t);
  print("loss 20%, dup 10%", t);
  EXPECT_EQ(t.both_established, 200);
  EXPECT_EQ(t.passive_saw_disconnect, 200);
  EXPECT_GT(t.retransmissions, 100u);
  EXPECT_GT(t.duplicates, 50u);
  EXPECT_EQ(t.leaks, 0u);
}

TEST(CmLossyLink, HalfTheMadsLostStillEndsEveryRunCleanly) {
  Tally t;
  for (std::uint64_t seed = 1000; seed < 1100; ++seed) one_run(seed, 0.5, 0.2, t);
  print("loss 50%, dup 20%", t);
  EXPECT_EQ(t.both_established + t.neither + t.one_side, 100);
  EXPECT_GE(t.both_established, 90);  // 16 tries of each message
  EXPECT_LE(t.one_side, 5);           // the RTU lost 16 times: REP_ERROR, REJ timeout
  EXPECT_EQ(t.leaks, 0u);
}

TEST(CmLossyLink, SidrOverALossyLinkAnswersOnceAndLeavesNothing) {
  int answered = 0, delivered_twice = 0;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    CmPair p(config_a(), config_b(), seed);
    const std::uint64_t ud = proto::rdma_service_id(proto::RdmaPortSpace::Udp, 7174);
    ASSERT_TRUE(p.b.cm.listen(ud).ok());
    p.loss = 0.3;
    p.duplicate = 0.1;
    p.b.consumer = [&p](Side& s, const CmEvent& e) {
      if (e.type != CmEventType::SidrReqReceived) return;
      SidrReplyParams r;
      r.qpn = 0x99;
      r.qkey = 0x01234567;
      p.call(s, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_reply(e.id, r, now, out); });
    };
    SidrRequestParams r;
    r.service_id = ud;
    r.peer = MadPeer{p.b.gid};
    ASSERT_TRUE(p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_request(r, now, out); }).ok());
    p.run_to_quiet();
    answered += p.a.count(CmEventType::SidrRepReceived) == 1;
    delivered_twice += p.b.count(CmEventType::SidrReqReceived) > 1;
    EXPECT_EQ(p.a.cm.id_count() + p.b.cm.id_count() + p.b.cm.sidr_reply_cache_size(), 0u) << "seed " << seed;
  }
  std::printf("SIDR, loss 30%%, dup 10%%: %d of 100 answered, %d delivered to the consumer twice\n", answered,
              delivered_twice);
  EXPECT_EQ(answered, 100);
  EXPECT_EQ(delivered_twice, 0);
}

}  // namespace
}  // namespace roce::cm::test::cm_lossy_link_test
