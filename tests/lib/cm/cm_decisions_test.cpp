// The CM's pure decisions as tables (IBA 12.9, Linux cm.c), and the promise that every move
// they lead to is one the transition table allows.
#include <gtest/gtest.h>

#include <set>

#include "lib/cm/cm_decisions.hpp"
#include "lib/cm/cm_timing.hpp"
#include "lib/cm/cm_types.hpp"

namespace roce::cm::cm_decisions_test {
namespace {

using S = CmState;
using proto::CmMessage;

std::vector<CmState> all_states() {
  std::vector<CmState> v;
  for (unsigned i = 0; i < static_cast<unsigned>(S::Count); ++i) v.push_back(static_cast<CmState>(i));
  return v;
}

TEST(CmDecisions, DuplicateReq) {
  EXPECT_EQ(on_duplicate_req(S::ReqRcvd, true), DuplicateReqAction::SendMra);
  EXPECT_EQ(on_duplicate_req(S::ReqRcvd, false), DuplicateReqAction::Drop);
  EXPECT_EQ(on_duplicate_req(S::MraReqSent, true), DuplicateReqAction::ResendMra);
  EXPECT_EQ(on_duplicate_req(S::RepSent, true), DuplicateReqAction::ResendRep);
  EXPECT_EQ(on_duplicate_req(S::MraRepRcvd, true), DuplicateReqAction::ResendRep);
  EXPECT_EQ(on_duplicate_req(S::Timewait, true), DuplicateReqAction::RejectStale);
  for (CmState s : {S::Established, S::DreqSent, S::DreqRcvd, S::RepRcvd, S::ReqSent})
    EXPECT_EQ(on_duplicate_req(s, true), DuplicateReqAction::Drop) << to_string(s);
}

TEST(CmDecisions, NewReqIsCheckedStaleThenListenerThenRoomThenTransportThenMtu) {
  NewReqFacts f;
  f.listener = true;
  EXPECT_EQ(decide_new_req(f), NewReqVerdict::Deliver);
  NewReqFacts all_bad{true, false, false, false, false};
  EXPECT_EQ(decide_new_req(all_bad), NewReqVerdict::RejectStale);
  all_bad.remote_qpn_in_use = false;
  EXPECT_EQ(decide_new_req(all_bad), NewReqVerdict::RejectNoListener);
  all_bad.listener = true;
  EXPECT_EQ(decide_new_req(all_bad), NewReqVerdict::RejectNoResources);
  all_bad.room = true;
  EXPECT_EQ(decide_new_req(all_bad), NewReqVerdict::RejectTransport);
  all_bad.transport_supported = true;
  EXPECT_EQ(decide_new_req(all_bad), NewReqVerdict::RejectMtu);
  EXPECT_EQ(rej_reason_of(NewReqVerdict::RejectStale), proto::RejReason::StaleConnection);
  EXPECT_EQ(rej_reason_of(NewReqVerdict::RejectNoListener), proto::RejReason::InvalidServiceId);
  EXPECT_EQ(rej_reason_of(NewReqVerdict::RejectNoResources), proto::RejReason::NoResources);
  EXPECT_EQ(rej_reason_of(NewReqVerdict::RejectTransport), proto::RejReason::InvalidTransportType);
  EXPECT_EQ(rej_reason_of(NewReqVerdict::RejectMtu), proto::RejReason::InvalidMtu);
}

TEST(CmDecisions, RepRtuDrep) {
  EXPECT_EQ(on_rep(S::ReqSent), RepAction::Accept);
  EXPECT_EQ(on_rep(S::MraReqRcvd), RepAction::Accept);
  EXPECT_EQ(on_rep(S::Established), RepAction::ResendRtu);
  EXPECT_EQ(on_rep(S::MraRepSent), RepAction::ResendMra);
  EXPECT_EQ(on_rep(S::RepRcvd), RepAction::Duplicate);
  EXPECT_EQ(on_rep(S::Timewait), RepAction::Drop);
  for (CmState s : all_states()) {
    EXPECT_EQ(rtu_establishes(s), s == S::RepSent || s == S::MraRepRcvd) << to_string(s);
    EXPECT_EQ(drep_completes(s), s == S::DreqSent || s == S::DreqRcvd) << to_string(s);
  }
}

TEST(CmDecisions, RejFreesPendingIdsAndTimewaitsUsedOnes) {
  constexpr std::uint16_t kStale = 10, kConsumer = 28;
  for (CmState s : {S::ReqSent, S::MraReqRcvd, S::RepSent, S::MraRepRcvd, S::ReqRcvd, S::MraReqSent}) {
    EXPECT_EQ(on_rej(s, kConsumer), RejAction::Free) << to_string(s);
    EXPECT_EQ(on_rej(s, kStale), RejAction::Timewait) << to_string(s);
  }
  for (CmState s : {S::DreqSent, S::RepRcvd, S::MraRepSent, S::Established})
    EXPECT_EQ(on_rej(s, kConsumer), RejAction::Timewait) << to_string(s);
  for (CmState s : {S::Idle, S::DreqRcvd, S::Timewait, S::SidrReqSent, S::SidrReqRcvd})
    EXPECT_EQ(on_rej(s, kConsumer), RejAction::Drop) << to_string(s);
}

TEST(CmDecisions, MraExtendsOnlyTheMessageItNames) {
  EXPECT_EQ(on_mra(S::ReqSent, CmMessage::Req), MraAction::ExtendReq);
  EXPECT_EQ(on_mra(S::ReqSent, CmMessage::Rep), MraAction::Drop);
  EXPECT_EQ(on_mra(S::RepSent, CmMessage::Rep), MraAction::ExtendRep);
  EXPECT_EQ(on_mra(S::RepSent, CmMessage::Req), MraAction::Drop);
  EXPECT_EQ(on_mra(S::MraReqRcvd, CmMessage::Req), MraAction::Duplicate);
  EXPECT_EQ(on_mra(S::Established, CmMessage::Other), MraAction::Drop);
}

TEST(CmDecisions, Dreq) {
  for (CmState s : {S::RepSent, S::MraRepRcvd, S::Established, S::DreqSent}) EXPECT_EQ(on_dreq(s), DreqAction::Disconnect);
  EXPECT_EQ(on_dreq(S::Timewait), DreqAction::ResendDrep);
  EXPECT_EQ(on_dreq(S::DreqRcvd), DreqAction::Duplicate);
  EXPECT_EQ(on_dreq(S::ReqSent), DreqAction::Drop);
}

TEST(CmDecisions, Timeouts) {
  EXPECT_EQ(on_timeout(S::ReqSent, true), TimeoutAction::Retransmit);
  EXPECT_EQ(on_timeout(S::MraReqRcvd, false), TimeoutAction::ReqGiveUp);
  EXPECT_EQ(on_timeout(S::RepSent, false), TimeoutAction::RepGiveUp);
  EXPECT_EQ(on_timeout(S::DreqSent, false), TimeoutAction::DreqGiveUp);
  EXPECT_EQ(on_timeout(S::SidrReqSent, false), TimeoutAction::SidrGiveUp);
  EXPECT_EQ(on_timeout(S::Timewait, false), TimeoutAction::TimewaitExit);
  for (CmState s : {S::ReqRcvd, S::MraReqSent, S::RepRcvd, S::MraRepSent, S::DreqRcvd, S::SidrReqRcvd})
    EXPECT_EQ(on_timeout(s, true), TimeoutAction::ConsumerTooSlow) << to_string(s);
  EXPECT_EQ(on_timeout(S::Established, true), TimeoutAction::None);
}

TEST(CmDecisions, RejShapeAsCmFormatRej) {
  EXPECT_EQ(rej_shape(S::ReqRcvd).message, CmMessage::Req);
  EXPECT_TRUE(rej_shape(S::ReqRcvd).zero_local_id);
  EXPECT_EQ(rej_shape(S::MraReqSent).message, CmMessage::Req);
  EXPECT_FALSE(rej_shape(S::MraReqSent).zero_local_id);
  EXPECT_EQ(rej_shape(S::RepRcvd).message, CmMessage::Rep);
  EXPECT_EQ(rej_shape(S::MraRepSent).message, CmMessage::Rep);
  EXPECT_EQ(rej_shape(S::RepSent).message, CmMessage::Other);
  EXPECT_EQ(rej_shape(S::ReqSent).message, CmMessage::Other);
}

// Every state a decision sends an ID to is reachable by an allowed move.
TEST(CmDecisions, EveryDecidedMoveIsInTheTransitionTable) {
  auto allowed = [](CmState from, CmState to) { return transition_allowed(from, to); };
  for (CmState s : all_states()) {
    if (s == S::Idle) continue;
    for (std::uint16_t reason : {10, 28}) {
      const RejAction r = on_rej(s, reason);
      EXPECT_TRUE(r != RejAction::Free || allowed(s, S::Idle)) << to_string(s);
      EXPECT_TRUE(r != RejAction::Timewait || allowed(s, S::Timewait)) << to_string(s);
    }
    if (on_dreq(s) == DreqAction::Disconnect) {
      EXPECT_TRUE(allowed(s, S::DreqRcvd)) << to_string(s);
    }
    EXPECT_TRUE(!rtu_establishes(s) || allowed(s, S::Established)) << to_string(s);
    EXPECT_TRUE(!drep_completes(s) || allowed(s, S::Timewait)) << to_string(s);
    EXPECT_TRUE(on_rep(s) != RepAction::Accept || allowed(s, S::RepRcvd)) << to_string(s);
    EXPECT_TRUE(on_mra(s, CmMessage::Req) != MraAction::ExtendReq || allowed(s, S::MraReqRcvd)) << to_string(s);
    EXPECT_TRUE(on_mra(s, CmMessage::Rep) != MraAction::ExtendRep || allowed(s, S::MraRepRcvd)) << to_string(s);
    EXPECT_TRUE(on_duplicate_req(s, true) != DuplicateReqAction::SendMra || allowed(s, S::MraReqSent)) << to_string(s);
    switch (on_timeout(s, false)) {
      case TimeoutAction::ReqGiveUp:
      case TimeoutAction::SidrGiveUp:
      case TimeoutAction::TimewaitExit: EXPECT_TRUE(allowed(s, S::Idle)) << to_string(s); break;
      case TimeoutAction::RepGiveUp:
      case TimeoutAction::DreqGiveUp: EXPECT_TRUE(allowed(s, S::Timewait)) << to_string(s); break;
      case TimeoutAction::ConsumerTooSlow:
        EXPECT_TRUE(allowed(s, S::Idle) || allowed(s, S::Timewait)) << to_string(s);
        break;
      default: break;
    }
    switch (on_consumer_reject(s)) {
      case ConsumerRejectAction::Free: EXPECT_TRUE(allowed(s, S::Idle)) << to_string(s); break;
      case ConsumerRejectAction::Timewait: EXPECT_TRUE(allowed(s, S::Timewait)) << to_string(s); break;
      case ConsumerRejectAction::NotAllowed: break;
    }
  }
  EXPECT_FALSE(transition_allowed(S::Established, S::Idle));  // a live connection always passes TIMEWAIT
  EXPECT_FALSE(transition_allowed(S::Timewait, S::Established));
  EXPECT_FALSE(transition_allowed(S::Count, S::Idle));
}

TEST(CmDecisions, HalfOpenStatesArePassiveAndUnestablished) {
  std::set<CmState> half;
  for (CmState s : all_states())
    if (is_half_open(s)) half.insert(s);
  EXPECT_EQ(half, (std::set<CmState>{S::ReqRcvd, S::MraReqSent, S::RepSent, S::MraRepRcvd, S::SidrReqRcvd}));
}

TEST(CmDecisions, EveryStateEventAndActionHasADistinctName) {
  std::set<std::string> names;
  for (CmState s : all_states()) names.insert(to_string(s));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(S::Count));
  names.clear();
  for (unsigned i = 0; i < static_cast<unsigned>(CmEventType::Count); ++i) names.insert(to_string(static_cast<CmEventType>(i)));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(CmEventType::Count));
  EXPECT_EQ(to_string(DuplicateReqAction::ResendRep), "resend-rep");
  EXPECT_EQ(to_string(NewReqVerdict::RejectNoListener), "reject-no-listener");
  EXPECT_EQ(to_string(RepAction::ResendRtu), "resend-rtu");
  EXPECT_EQ(to_string(RejAction::Timewait), "timewait");
  EXPECT_EQ(to_string(MraAction::ExtendRep), "extend-rep");
  EXPECT_EQ(to_string(DreqAction::ResendDrep), "resend-drep");
  EXPECT_EQ(to_string(TimeoutAction::ConsumerTooSlow), "consumer-too-slow");
  EXPECT_EQ(to_string(ConsumerRejectAction::NotAllowed), "not-allowed");
}

TEST(CmTiming, LinuxMillisecondScale) {
  EXPECT_EQ(cm_time(0), 1 * kMilli);
  EXPECT_EQ(cm_time(8), 1 * kMilli);
  EXPECT_EQ(cm_time(19), 2048 * kMilli);
  EXPECT_EQ(cm_time(24), 65536 * kMilli);
  EXPECT_EQ(cm_time(31), (Nanos{1} << 23) * kMilli);
  EXPECT_EQ(cm_ack_timeout(0, 30), 31);
  EXPECT_EQ(cm_ack_timeout(31, 31), 31);
}

}  // namespace
}  // namespace roce::cm::cm_decisions_test
