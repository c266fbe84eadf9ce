// CmConfig::unmatched_request_hold: a REQ or SIDR_REQ for a Service ID nobody listens on is held
// unanswered for a while and delivered when a listener comes within it; refused as without a
// hold when none does; its retransmissions wait with it; and the hold is bounded.
#include <gtest/gtest.h>

#include "protocol/cma_header.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::cm_hold_test {
namespace {

using proto::CmAttribute;
using proto::SidrStatus;

constexpr std::uint64_t kUdService = proto::rdma_service_id(proto::RdmaPortSpace::Udp, 7180);
constexpr std::uint64_t kRcService = proto::rdma_service_id(proto::RdmaPortSpace::Tcp, 7180);
constexpr Nanos kHold = 1 * kSecond;

CmConfig holding_b(std::size_t max_held = 64) {
  CmConfig c = config_b();
  c.unmatched_request_hold = kHold;
  c.max_held_requests = max_held;
  return c;
}

class CmHold : public ::testing::Test {
 protected:
  CmHold() : p(config_a(), holding_b()) {
    p.b.consumer = [this](Side& s, const CmEvent& e) {
      if (e.type != CmEventType::SidrReqReceived) return;
      SidrReplyParams r;
      r.qpn = 0x345;
      r.qkey = 0x01234567;
      p.call(s, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_reply(e.id, r, now, out); });
    };
  }
  CmId sidr(std::uint64_t service = kUdService, Nanos timeout = 4096 * kMilli) {
    SidrRequestParams r;
    r.service_id = service;
    r.peer = MadPeer{p.b.gid};
    r.timeout = timeout;
    auto id = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_request(r, now, out); });
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }
  SidrStatus answer() const {
    const CmEvent* e = p.a.last(CmEventType::SidrRepReceived);
    return e ? static_cast<SidrStatus>(std::get<SidrRepInfo>(e->detail).status) : SidrStatus::Rejected;
  }
  CmPair p;
};

// The perftest -R -c UD race: the SIDR_REQ comes 300 ms before the listen. Held, nothing goes
// back; the listen delivers it, and the answer is the consumer's.
TEST_F(CmHold, SidrRequestBeforeTheListenIsDeliveredWhenTheListenerComes) {
  sidr();
  p.run_for(300 * kMilli);
  EXPECT_EQ(p.b.cm.counters().unmatched_held, 1u);
  EXPECT_EQ(p.b.count(CmEventType::SidrReqReceived), 0u);
  EXPECT_EQ(p.sent(false, CmAttribute::SidrRep), 0u);  // nothing answered yet
  ASSERT_TRUE(p.b.cm.listen(kUdService).ok());
  EXPECT_EQ(p.b.cm.next_deadline(), 0);  // due at once
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.b.count(CmEventType::SidrReqReceived), 1u);
  ASSERT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);
  EXPECT_EQ(answer(), SidrStatus::Success);
  EXPECT_EQ(p.b.cm.counters().unmatched_held_delivered, 1u);
  EXPECT_EQ(p.b.cm.counters().sidr_no_listener, 0u);
  EXPECT_EQ(p.b.cm.counters().rx_msgs[attribute_slot(CmAttribute::SidrReq)], 1u);  // counted once
}

// Nobody comes: at the end of the hold the refusal is the one without a hold.
TEST_F(CmHold, SidrRequestNobodyListensForIsRefusedWhenTheHoldEnds) {
  sidr();
  p.run_for(kHold - 1 * kMilli);
  EXPECT_EQ(p.sent(false, CmAttribute::SidrRep), 0u);
  p.run_for(2 * kMilli);
  ASSERT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);
  EXPECT_EQ(answer(), SidrStatus::ServiceIdUnsupported);
  EXPECT_EQ(p.b.cm.counters().sidr_no_listener, 1u);
  EXPECT_EQ(p.b.cm.counters().unmatched_held_delivered, 0u);
  EXPECT_EQ(p.b.cm.next_deadline(), kNever);  // nothing held any more
  // A listener that comes afterwards gets nothing.
  ASSERT_TRUE(p.b.cm.listen(kUdService).ok());
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.b.count(CmEventType::SidrReqReceived), 0u);
}

// The peer's retransmissions (every 100 ms here) wait with the held request as duplicates: the
// consumer gets it once.
TEST_F(CmHold, RetransmissionsOfAHeldRequestAreDuplicates) {
  sidr(kUdService, 100 * kMilli);
  p.run_for(350 * kMilli);
  EXPECT_GE(p.sent(true, CmAttribute::SidrReq), 4u);
  EXPECT_EQ(p.b.cm.counters().unmatched_held, 1u);
  EXPECT_GE(p.b.cm.counters().rx_duplicates[attribute_slot(CmAttribute::SidrReq)], 3u);
  ASSERT_TRUE(p.b.cm.listen(kUdService).ok());
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.b.count(CmEventType::SidrReqReceived), 1u);
  EXPECT_EQ(answer(), SidrStatus::Success);
}

// A connected REQ is held the same way, and the connection comes up once the listener is there.
TEST_F(CmHold, ConnectRequestBeforeTheListenIsEstablished) {
  auto_accept(p.b);
  auto_rtu(p.a);
  auto r = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(p.a, p.b, kRcService), now, out);
  });
  ASSERT_TRUE(r.ok());
  p.run_for(500 * kMilli);
  EXPECT_EQ(p.sent(false, CmAttribute::Rej), 0u);
  ASSERT_TRUE(p.b.cm.listen(kRcService).ok());
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.a.cm.state_of(*r), CmState::Established);
  EXPECT_EQ(p.b.count(CmEventType::Established), 1u);
  EXPECT_EQ(p.b.cm.counters().req_no_listener, 0u);
  EXPECT_EQ(p.b.cm.counters().unmatched_held_delivered, 1u);
}

// At most max_held_requests wait: the next is refused at once and counted.
TEST(CmHoldBound, ARequestPastTheBoundIsRefusedAtOnce) {
  CmPair p(config_a(), holding_b(1));
  for (std::uint64_t service : {kUdService, kUdService + 1}) {
    SidrRequestParams r;
    r.service_id = service;
    r.peer = MadPeer{p.b.gid};
    ASSERT_TRUE(p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_request(r, now, out); }).ok());
  }
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.b.cm.counters().unmatched_held, 1u);
  EXPECT_EQ(p.b.cm.counters().unmatched_hold_full, 1u);
  EXPECT_EQ(p.b.cm.counters().sidr_no_listener, 1u);
  EXPECT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);  // the second, refused at once
  p.run_for(kHold);
  EXPECT_EQ(p.b.cm.counters().sidr_no_listener, 2u);
  EXPECT_EQ(p.a.count(CmEventType::SidrRepReceived), 2u);
}

}  // namespace
}  // namespace roce::cm::test::cm_hold_test
