// Connection establishment and release between an active and a passive CM, message by
// message: what each side sends, when (to the millisecond of the CM timers), and what its
// consumer is told, with and without lost MADs.
#include <gtest/gtest.h>

#include "lib/cm/cm_timing.hpp"
#include "protocol/cm_disconnect.hpp"
#include "protocol/cma_header.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::cm_exchange_test {
namespace {

using proto::CmAttribute;
using proto::RejReason;

constexpr std::uint64_t kService = proto::rdma_service_id(proto::RdmaPortSpace::Tcp, 7174);
constexpr Nanos kReqTimeout = 6144 * kMilli;  // 2 * cm_time(18) + cm_time(20)
constexpr Nanos kRepTimeout = 4096 * kMilli;  // cm_time(REQ local CM response timeout 20)

template <typename T>
T payload(const Mad& m) {
  proto::ParsedMad p;
  EXPECT_EQ(proto::parse_mad(m, p), proto::MadError::None);
  return p.as<T>();
}

std::uint64_t tid(const Mad& m) {
  proto::ParsedMad p;
  proto::parse_mad(m, p);
  return p.header.tid();
}

class CmExchange : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(p.b.cm.listen(kService).ok()); }

  CmId connect(std::uint32_t qpn = 0x11) {
    auto r = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
      return cm.connect(connect_params(p.a, p.b, kService, qpn), now, out);
    });
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : 0;
  }
  void establish() {
    auto_accept(p.b);
    auto_rtu(p.a);
    a_id = connect();
    p.run_for(10 * kMilli);
    ASSERT_EQ(p.a.cm.state_of(a_id), CmState::Established);
    ASSERT_EQ(p.b.count(CmEventType::Established), 1u);
    b_id = p.b.last(CmEventType::Established)->id;
  }
  Status disconnect(Side& s, CmId id) {
    return p.call(s, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.disconnect(id, now, out); });
  }

  CmPair p;
  CmId a_id = 0, b_id = 0;
};

TEST_F(CmExchange, RequestReplyReadyToUseCarryTheQpParametersBothWays) {
  std::vector<std::uint8_t> pd(proto::kCmReqPrivateBytes, 0);
  for (std::size_t i = 0; i < pd.size(); ++i) pd[i] = static_cast<std::uint8_t>(i);
  ConnectParams cp = connect_params(p.a, p.b, kService);
  cp.private_data = pd;
  cp.path_mtu = proto::PathMtu::Mtu4096;
  cp.path.flow_label = 0xB4EC6;
  auto r = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(cp, now, out); });
  ASSERT_TRUE(r.ok());
  a_id = *r;
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::ReqSent);
  p.run_for(1 * kMilli);

  ASSERT_EQ(p.b.count(CmEventType::ReqReceived), 1u);
  const CmEvent& ev = *p.b.last(CmEventType::ReqReceived);
  const auto& req = std::get<ReqInfo>(ev.detail);
  b_id = ev.id;
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::ReqRcvd);
  EXPECT_EQ(req.service_id, kService);
  EXPECT_EQ(req.listen_id, kService);
  EXPECT_EQ(req.from.gid, p.a.gid);
  EXPECT_EQ(req.remote_comm_id, a_id);
  EXPECT_EQ(req.remote_ca_guid, config_a().local_ca_guid);
  EXPECT_EQ(req.remote_qpn, 0x11u);
  EXPECT_EQ(req.starting_psn, 0x61A80Cu);  // the passive side sends with the REQ's PSN
  EXPECT_EQ(req.responder_resources, 2);  // swapped into the passive side's view
  EXPECT_EQ(req.initiator_depth, 1);
  EXPECT_EQ(req.path_mtu, 5);
  EXPECT_EQ(req.retry_count, 6);
  EXPECT_EQ(req.rnr_retry_count, 5);
  EXPECT_EQ(req.local_ack_timeout, 19);  // cm_ack_timeout(15, 18)
  EXPECT_EQ(req.max_cm_retries, 15);
  EXPECT_EQ(req.primary.flow_label(), 0xB4EC6u);
  EXPECT_EQ(req.primary.local_lid.get(), 0xFFFF);
  EXPECT_EQ(req.primary.hop_limit, 64);
  EXPECT_EQ(ev.private_data, pd);

  ASSERT_TRUE(p.call(p.b, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
                 return cm.accept(b_id, accept_params(0x22), now, out);
               }).ok());
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::RepSent);
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.a.count(CmEventType::RepReceived), 1u);
  const auto& rep = std::get<RepInfo>(p.a.last(CmEventType::RepReceived)->detail);
  EXPECT_EQ(rep.remote_comm_id, b_id);
  EXPECT_EQ(rep.remote_qpn, 0x22u);
  EXPECT_EQ(rep.starting_psn, 0x184BCEu);
  EXPECT_EQ(rep.responder_resources, 1);
  EXPECT_EQ(rep.initiator_depth, 2);
  EXPECT_EQ(rep.target_ack_delay, 15);
  EXPECT_EQ(rep.rnr_retry_count, 7);
  EXPECT_EQ(rep.remote_ca_guid, config_b().local_ca_guid);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::RepRcvd);

  ASSERT_TRUE(p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.ready_to_use(a_id, now, out); }).ok());
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Established);
  EXPECT_EQ(p.b.count(CmEventType::Established), 1u);

  // One of each on the wire; REP and RTU echo the REQ's TID (rdma-cm.md 2).
  EXPECT_EQ(p.sent(true, CmAttribute::Req), 1u);
  EXPECT_EQ(p.sent(false, CmAttribute::Rep), 1u);
  EXPECT_EQ(p.sent(true, CmAttribute::Rtu), 1u);
  const std::uint64_t req_tid = tid(p.records(true, CmAttribute::Req)[0]->mad);
  EXPECT_EQ(req_tid, std::uint64_t{0xA} << 32 | a_id);
  EXPECT_EQ(tid(p.records(false, CmAttribute::Rep)[0]->mad), req_tid);
  EXPECT_EQ(tid(p.records(true, CmAttribute::Rtu)[0]->mad), req_tid);
  const auto rtu = payload<proto::CmRtu>(p.records(true, CmAttribute::Rtu)[0]->mad);
  EXPECT_EQ(rtu.local_comm_id.get(), a_id);
  EXPECT_EQ(rtu.remote_comm_id.get(), b_id);
  EXPECT_EQ(p.a.cm.counters().established + p.b.cm.counters().established, 2u);
}

TEST_F(CmExchange, DisconnectDreqDrepThenTimewaitFreesBothIds) {
  establish();
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::DreqSent);
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.b.count(CmEventType::DreqReceived), 1u);
  EXPECT_EQ(p.a.count(CmEventType::DrepReceived), 1u);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Timewait);
  const auto dreq = payload<proto::CmDreq>(p.records(true, CmAttribute::Dreq)[0]->mad);
  EXPECT_EQ(dreq.remote_qpn(), 0x100u);  // the receiver's QPN
  EXPECT_EQ(tid(p.records(false, CmAttribute::Drep)[0]->mad), tid(p.records(true, CmAttribute::Dreq)[0]->mad));
  // TIMEWAIT: cm_time(av timeout). A: cm_ack_timeout(target ack delay 15, 18) = 19 -> 2048 ms;
  // B: the REQ's local ACK timeout 19 -> 2048 ms.
  const Nanos t0 = p.now;
  p.run_for(2048 * kMilli - 2 * kMilli);
  EXPECT_EQ(p.a.count(CmEventType::TimewaitExit), 0u);
  p.run_until(t0 + 2048 * kMilli);
  EXPECT_EQ(p.a.count(CmEventType::TimewaitExit), 1u);
  EXPECT_EQ(p.b.count(CmEventType::TimewaitExit), 1u);
  EXPECT_EQ(p.a.cm.id_count(), 0u);
  EXPECT_EQ(p.b.cm.id_count(), 0u);
  EXPECT_EQ(p.b.cm.half_open_count(), 0u);
}

TEST_F(CmExchange, LostReqIsSentAgainAfterTheReqTimeout) {
  auto_accept(p.b);
  auto_rtu(p.a);
  p.drop_filter = drop_nth(p, true, CmAttribute::Req, 0);
  a_id = connect();
  p.run_for(kReqTimeout - 1 * kMilli);
  EXPECT_EQ(p.sent(true, CmAttribute::Req), 1u);
  p.run_for(2 * kMilli);
  ASSERT_EQ(p.sent(true, CmAttribute::Req), 2u);
  EXPECT_EQ(p.records(true, CmAttribute::Req)[1]->at, kReqTimeout);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  EXPECT_EQ(p.a.cm.counters().tx_retries[attribute_slot(CmAttribute::Req)], 1u);
  EXPECT_EQ(p.b.count(CmEventType::Established), 1u);
}

TEST_F(CmExchange, ReqNeverAnsweredGivesUpAfterMaxCmRetriesWithRejTimeout) {
  p.drop_filter = drop_all(true, CmAttribute::Req);
  a_id = connect();
  p.run_for(16 * kReqTimeout - 1 * kMilli);
  EXPECT_EQ(p.sent(true, CmAttribute::Req), 16u);  // 1 + max CM retries 15
  EXPECT_EQ(p.a.count(CmEventType::ReqError), 0u);
  p.run_for(2 * kMilli);
  EXPECT_EQ(p.a.count(CmEventType::ReqError), 1u);
  EXPECT_FALSE(p.a.cm.state_of(a_id));
  ASSERT_EQ(p.sent(true, CmAttribute::Rej), 1u);
  const auto rej = payload<proto::CmRej>(p.records(true, CmAttribute::Rej)[0]->mad);
  EXPECT_EQ(rej.reason_code(), static_cast<std::uint16_t>(RejReason::Timeout));
  EXPECT_EQ(rej.reject_info_length(), 8);  // ARI = our CA GUID (cm_destroy_id)
  EXPECT_EQ(rej.ari[7], 0x01);
  EXPECT_EQ(p.a.cm.counters().req_timeouts, 1u);
  EXPECT_EQ(p.a.cm.counters().tx_retries[attribute_slot(CmAttribute::Req)], 15u);
}

TEST_F(CmExchange, LostRepIsSentAgainByTheRepTimer) {
  auto_accept(p.b);
  auto_rtu(p.a);
  p.drop_filter = drop_nth(p, false, CmAttribute::Rep, 0);
  a_id = connect();
  p.run_for(kRepTimeout - 1 * kMilli);
  EXPECT_EQ(p.sent(false, CmAttribute::Rep), 1u);
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.sent(false, CmAttribute::Rep), 2u);
  EXPECT_EQ(p.sent(true, CmAttribute::Req), 1u);  // the REP came before the REQ timer
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  EXPECT_EQ(p.b.count(CmEventType::Established), 1u);
}

TEST_F(CmExchange, DuplicateReqInRepSentResendsTheRep) {
  auto_accept(p.b);
  auto_rtu(p.a);
  p.drop_filter = drop_nth(p, false, CmAttribute::Rep, 0);
  ConnectParams cp = connect_params(p.a, p.b, kService);
  cp.local_cm_response_timeout = 23;  // the REP timer (8 s) runs longer than the REQ's (6 s)
  a_id = *p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(cp, now, out); });
  p.run_for(kReqTimeout + 1 * kMilli);
  EXPECT_EQ(p.sent(true, CmAttribute::Req), 2u);
  EXPECT_EQ(p.sent(false, CmAttribute::Rep), 2u);
  EXPECT_EQ(p.b.cm.counters().rx_duplicates[attribute_slot(CmAttribute::Req)], 1u);
  EXPECT_EQ(p.b.cm.counters().tx_retries[attribute_slot(CmAttribute::Rep)], 0u);  // not the timer
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  EXPECT_EQ(p.b.count(CmEventType::ReqReceived), 1u);  // the duplicate is not a new request
}

TEST_F(CmExchange, LostRtuIsRegeneratedWhenTheRepComesAgain) {
  auto_accept(p.b);
  auto_rtu(p.a);
  p.drop_filter = drop_nth(p, true, CmAttribute::Rtu, 0);
  a_id = connect();
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  b_id = p.b.last(CmEventType::ReqReceived)->id;
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::RepSent);
  p.run_for(kRepTimeout);
  EXPECT_EQ(p.sent(false, CmAttribute::Rep), 2u);
  EXPECT_EQ(p.sent(true, CmAttribute::Rtu), 2u);
  EXPECT_EQ(p.a.cm.counters().rx_duplicates[attribute_slot(CmAttribute::Rep)], 1u);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Established);
  EXPECT_EQ(p.a.count(CmEventType::RepReceived), 1u);
}

TEST_F(CmExchange, TrafficBeforeTheRtuEstablishesThePassiveSide) {
  auto_accept(p.b);
  auto_rtu(p.a);
  p.drop_filter = drop_all(true, CmAttribute::Rtu);
  a_id = connect();
  p.run_for(10 * kMilli);
  b_id = p.b.last(CmEventType::ReqReceived)->id;
  // The ID is watched for its QP's first packet (the CM agent's COMM_EST check).
  EXPECT_EQ(p.b.cm.awaiting_rtu().count(b_id), 1u);
  ASSERT_TRUE(p.b.cm.local_qpn_of(b_id).has_value());
  ASSERT_TRUE(p.call(p.b, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.notify_established(b_id, now, out); }).ok());
  EXPECT_TRUE(p.b.cm.awaiting_rtu().empty());
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Established);
  EXPECT_EQ(p.b.count(CmEventType::Established), 1u);
  p.run_for(kRepTimeout * 2);
  EXPECT_EQ(p.sent(false, CmAttribute::Rep), 1u);  // the REP timer stopped
  EXPECT_EQ(p.b.cm.notify_established(b_id, p.now, *std::make_unique<CmOutput>()).code(), EISCONN);
}

TEST_F(CmExchange, LostDreqIsSentAgainAfterTheTimeout) {
  establish();
  p.drop_filter = drop_nth(p, true, CmAttribute::Dreq, 0);
  const Nanos t0 = p.now;
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  p.run_for(kReqTimeout + 1 * kMilli);  // the active side's DREQ timer is its REQ timer
  ASSERT_EQ(p.sent(true, CmAttribute::Dreq), 2u);
  EXPECT_EQ(p.records(true, CmAttribute::Dreq)[1]->at, t0 + kReqTimeout);
  EXPECT_EQ(p.a.cm.counters().tx_retries[attribute_slot(CmAttribute::Dreq)], 1u);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  EXPECT_EQ(p.b.count(CmEventType::DreqReceived), 1u);
  p.run_to_quiet();
  EXPECT_EQ(p.a.cm.id_count() + p.b.cm.id_count(), 0u);
}

TEST_F(CmExchange, LostDrepIsRegeneratedForTheDuplicateDreqInTimewait) {
  auto_accept(p.b);
  auto_rtu(p.a);
  // Short CM timers, so that the DREQ comes again while B is still in TIMEWAIT (2 s).
  ConnectParams cp = connect_params(p.a, p.b, kService);
  cp.path.packet_life_time = 8;
  cp.remote_cm_response_timeout = 8;  // DREQ timer: 2 * 1 + 1 = 3 ms
  a_id = *p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(cp, now, out); });
  p.run_for(1 * kMilli);
  b_id = p.b.last(CmEventType::ReqReceived)->id;
  ASSERT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  p.drop_filter = drop_nth(p, false, CmAttribute::Drep, 0);
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  p.run_for(3 * kMilli + 200 * kMicro);
  EXPECT_EQ(p.sent(true, CmAttribute::Dreq), 2u);
  EXPECT_EQ(p.sent(false, CmAttribute::Drep), 2u);
  EXPECT_EQ(p.b.cm.counters().rx_duplicates[attribute_slot(CmAttribute::Dreq)], 1u);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Timewait);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  EXPECT_EQ(p.b.count(CmEventType::DreqReceived), 1u);
  EXPECT_EQ(p.records(false, CmAttribute::Drep)[0]->mad, p.records(false, CmAttribute::Drep)[1]->mad);
}

TEST_F(CmExchange, DreqAfterTimewaitStillGetsADrep) {
  establish();
  // B's TIMEWAIT (2 s) ends before A's DREQ timer (6 s): the next DREQ finds no ID and is
  // answered anyway (cm_issue_drep).
  p.drop_filter = drop_nth(p, false, CmAttribute::Drep, 0);
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  p.run_for(kReqTimeout + 1 * kMilli);
  EXPECT_FALSE(p.b.cm.state_of(b_id));
  EXPECT_EQ(p.b.cm.counters().rx_unmatched[attribute_slot(CmAttribute::Dreq)], 1u);
  EXPECT_EQ(p.sent(false, CmAttribute::Drep), 2u);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  EXPECT_EQ(p.a.count(CmEventType::DrepReceived), 1u);
}

TEST_F(CmExchange, DreqNeverAnsweredEndsInTimewaitWithDreqError) {
  establish();
  p.drop_filter = drop_all(true, CmAttribute::Dreq);
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  p.run_for(16 * kReqTimeout + 1 * kMilli);
  EXPECT_EQ(p.sent(true, CmAttribute::Dreq), 16u);
  EXPECT_EQ(p.a.count(CmEventType::DreqError), 1u);
  EXPECT_EQ(p.a.cm.counters().dreq_timeouts, 1u);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Established);  // never told
  p.run_to_quiet();
  EXPECT_EQ(p.a.cm.id_count(), 0u);
}

TEST_F(CmExchange, BothSidesDisconnectAtOnce) {
  establish();
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  ASSERT_TRUE(disconnect(p.b, b_id).ok());
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Timewait);
  EXPECT_EQ(p.a.count(CmEventType::DreqReceived), 1u);
  EXPECT_EQ(p.b.count(CmEventType::DreqReceived), 1u);
  p.run_to_quiet();
  EXPECT_EQ(p.sent(true, CmAttribute::Dreq), 1u);
  EXPECT_EQ(p.sent(false, CmAttribute::Dreq), 1u);
  EXPECT_EQ(p.a.cm.id_count() + p.b.cm.id_count(), 0u);
}

TEST_F(CmExchange, PassiveSideDisconnects) {
  establish();
  ASSERT_TRUE(disconnect(p.b, b_id).ok());
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.a.count(CmEventType::DreqReceived), 1u);
  EXPECT_EQ(p.b.count(CmEventType::DrepReceived), 1u);
  const auto dreq = payload<proto::CmDreq>(p.records(false, CmAttribute::Dreq)[0]->mad);
  EXPECT_EQ(dreq.remote_qpn(), 0x11u);
  EXPECT_EQ(dreq.local_comm_id.get(), b_id);
  EXPECT_EQ(dreq.remote_comm_id.get(), a_id);
}

TEST_F(CmExchange, RequestForAServiceNobodyListensOnGetsRejInvalidServiceId) {
  auto r = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(p.a, p.b, kService + 1), now, out);
  });
  a_id = *r;
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.a.count(CmEventType::RejReceived), 1u);
  const auto& rej = std::get<RejInfo>(p.a.last(CmEventType::RejReceived)->detail);
  EXPECT_EQ(rej.reason, static_cast<std::uint16_t>(RejReason::InvalidServiceId));
  EXPECT_EQ(rej.message_rejected, proto::CmMessage::Req);
  EXPECT_FALSE(p.a.cm.state_of(a_id));
  EXPECT_EQ(p.b.cm.counters().req_no_listener, 1u);
  EXPECT_EQ(p.b.cm.counters().rej_sent[8], 1u);
  EXPECT_EQ(p.b.cm.id_count(), 0u);  // no state for it
  const auto wire_rej = payload<proto::CmRej>(p.records(false, CmAttribute::Rej)[0]->mad);
  EXPECT_EQ(wire_rej.local_comm_id.get(), 0u);
  EXPECT_EQ(wire_rej.remote_comm_id.get(), a_id);
}

TEST_F(CmExchange, ConsumerRejectCarriesItsPrivateData) {
  const std::vector<std::uint8_t> why{1, 2, 3, 4};
  p.b.consumer = [&](Side& s, const CmEvent& e) {
    if (e.type != CmEventType::ReqReceived) return;
    p.call(s, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
      return cm.reject(e.id, RejReason::ConsumerDefined, now, out, why);
    });
  };
  a_id = connect();
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.a.count(CmEventType::RejReceived), 1u);
  const CmEvent& ev = *p.a.last(CmEventType::RejReceived);
  EXPECT_EQ(std::get<RejInfo>(ev.detail).reason, 28);
  EXPECT_TRUE(std::equal(why.begin(), why.end(), ev.private_data.begin()));
  EXPECT_EQ(p.a.cm.id_count() + p.b.cm.id_count(), 0u);
}

TEST_F(CmExchange, ReqReusingTheQpnOfALiveConnectionIsStale) {
  establish();
  // A second REQ from the same QPN and CA GUID while the first connection lives: REJ stale to
  // it, DREQ to the old connection (cm_match_req).
  auto r = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(p.a, p.b, kService, 0x11), now, out);
  });
  const CmId second = *r;
  p.run_for(1 * kMilli);
  ASSERT_GE(p.a.count(CmEventType::RejReceived), 1u);
  EXPECT_EQ(std::get<RejInfo>(p.a.last(CmEventType::RejReceived)->detail).reason, 10);
  EXPECT_EQ(p.a.last(CmEventType::RejReceived)->id, second);
  EXPECT_EQ(p.b.cm.counters().req_stale, 1u);
  EXPECT_EQ(p.sent(false, CmAttribute::Dreq), 1u);
  EXPECT_EQ(p.a.count(CmEventType::DreqReceived), 1u);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  // The stale REJ put the rejected ID in TIMEWAIT too (cm_rej_handler).
  EXPECT_EQ(p.a.cm.state_of(second), CmState::Timewait);
}

TEST_F(CmExchange, DuplicateReqAfterTheConnectionEndedGetsRejStale) {
  establish();
  const Mad original_req = p.records(true, CmAttribute::Req)[0]->mad;
  ASSERT_TRUE(disconnect(p.a, a_id).ok());
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.b.cm.state_of(b_id), CmState::Timewait);
  p.inject(p.b, original_req);
  ASSERT_EQ(p.sent(false, CmAttribute::Rej), 1u);
  const auto rej = payload<proto::CmRej>(p.records(false, CmAttribute::Rej)[0]->mad);
  EXPECT_EQ(rej.reason_code(), 10);
  EXPECT_EQ(rej.remote_comm_id.get(), a_id);
  EXPECT_EQ(p.b.count(CmEventType::ReqReceived), 1u);
  // Once TIMEWAIT is over the comm ID may be reused.
  p.run_to_quiet();
  p.inject(p.b, original_req);
  EXPECT_EQ(p.b.count(CmEventType::ReqReceived), 2u);
}

TEST_F(CmExchange, SlowConsumerGetsAnMraOnTheDuplicateReqAndTheActiveSideWaits) {
  auto_rtu(p.a);
  a_id = connect();
  p.run_for(kReqTimeout + 1 * kMilli);  // B's consumer has not answered; the REQ comes again
  b_id = p.b.last(CmEventType::ReqReceived)->id;
  ASSERT_EQ(p.sent(false, CmAttribute::Mra), 1u);
  const auto mra = payload<proto::CmMra>(p.records(false, CmAttribute::Mra)[0]->mad);
  EXPECT_EQ(mra.message_mraed(), proto::CmMessage::Req);
  EXPECT_EQ(mra.service_timeout(), 24);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::MraReqSent);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::MraReqRcvd);
  ASSERT_EQ(p.a.count(CmEventType::MraReceived), 1u);
  // A now waits cm_time(24) + cm_time(19) = 65536 + 2048 ms before sending the REQ again.
  p.run_for(20 * kSecond);
  EXPECT_EQ(p.sent(true, CmAttribute::Req), 2u);
  ASSERT_TRUE(p.call(p.b, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
                 return cm.accept(b_id, accept_params(), now, out);
               }).ok());
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Established);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Established);
}

TEST_F(CmExchange, ConsumerThatNeverAnswersIsRejectedAndItsIdFreed) {
  CmConfig b_cfg = config_b();
  b_cfg.consumer_timeout = 10 * kSecond;
  CmPair q(config_a(), b_cfg);
  ASSERT_TRUE(q.b.cm.listen(kService).ok());
  auto r = q.call(q.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(q.a, q.b, kService), now, out);
  });
  q.run_for(10 * kSecond + 1 * kMilli);
  EXPECT_EQ(q.b.count(CmEventType::ConsumerTimeout), 1u);
  EXPECT_EQ(q.b.cm.counters().consumer_timeouts, 1u);
  EXPECT_EQ(q.b.cm.id_count(), 0u);
  EXPECT_EQ(q.b.cm.half_open_count(), 0u);
  ASSERT_EQ(q.a.count(CmEventType::RejReceived), 1u);
  EXPECT_EQ(std::get<RejInfo>(q.a.last(CmEventType::RejReceived)->detail).reason, 28);
  EXPECT_FALSE(q.a.cm.state_of(*r));
}

TEST_F(CmExchange, RepNeverAnsweredGivesUpWithRejTimeoutThatTheActiveSideMatches) {
  CmConfig a_cfg = config_a();
  a_cfg.consumer_timeout = 3600 * kSecond;  // A's consumer never sends the RTU
  CmPair q(a_cfg, config_b());
  ASSERT_TRUE(q.b.cm.listen(kService).ok());
  auto_accept(q.b);
  auto r = q.call(q.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(q.a, q.b, kService), now, out);
  });
  q.run_for(16 * kRepTimeout + 1 * kMilli);
  EXPECT_EQ(q.sent(false, CmAttribute::Rep), 16u);
  EXPECT_EQ(q.b.count(CmEventType::RepError), 1u);
  EXPECT_EQ(q.b.cm.counters().rep_timeouts, 1u);
  ASSERT_EQ(q.a.count(CmEventType::RejReceived), 1u);
  EXPECT_EQ(std::get<RejInfo>(q.a.last(CmEventType::RejReceived)->detail).reason, 4);
  EXPECT_EQ(q.a.cm.counters().rx_duplicates[attribute_slot(CmAttribute::Rep)], 15u);
  EXPECT_EQ(q.a.cm.state_of(*r), CmState::Timewait);
  q.run_to_quiet();
  EXPECT_EQ(q.a.cm.id_count() + q.b.cm.id_count(), 0u);
}

TEST_F(CmExchange, DreqForAnUnknownConnectionStillGetsADrep) {
  proto::CmDreq d{};
  d.local_comm_id.set(0x1234);
  d.remote_comm_id.set(0x5678);
  p.inject(p.b, proto::make_mad(proto::MadHeader::cm(CmAttribute::Dreq, 77), d));
  ASSERT_EQ(p.sent(false, CmAttribute::Drep), 1u);
  const auto drep = payload<proto::CmDrep>(p.records(false, CmAttribute::Drep)[0]->mad);
  EXPECT_EQ(drep.local_comm_id.get(), 0x5678u);
  EXPECT_EQ(drep.remote_comm_id.get(), 0x1234u);
  EXPECT_EQ(tid(p.records(false, CmAttribute::Drep)[0]->mad), 77u);
}

TEST_F(CmExchange, DreqNamingAnotherQpnIsDropped) {
  establish();
  proto::CmDreq d{};
  d.local_comm_id.set(a_id);
  d.remote_comm_id.set(b_id);
  d.set_remote_qpn(0x999);
  p.inject(p.b, proto::make_mad(proto::MadHeader::cm(CmAttribute::Dreq, 1), d));
  EXPECT_EQ(p.b.cm.counters().dreq_qpn_mismatch, 1u);
  EXPECT_EQ(p.b.cm.state_of(b_id), CmState::Established);
}

TEST_F(CmExchange, DestroyInEachStateSendsWhatLinuxSends) {
  // REQ_SENT: REJ timeout with our GUID; the ID is gone at once.
  p.drop_filter = drop_all(true, CmAttribute::Req);
  const CmId pending = connect();
  {
    CmOutput out;
    p.a.cm.destroy(pending, p.now, out);
    p.flush(p.a, out);
  }
  EXPECT_EQ(p.sent(true, CmAttribute::Rej), 1u);
  EXPECT_FALSE(p.a.cm.state_of(pending));
  p.drop_filter = nullptr;
  // ESTABLISHED: one DREQ, TIMEWAIT, no event to the departed consumer.
  establish();
  CmOutput out;
  p.a.cm.destroy(a_id, p.now, out);
  p.flush(p.a, out);
  EXPECT_EQ(p.a.cm.state_of(a_id), CmState::Timewait);
  p.run_to_quiet();
  EXPECT_EQ(p.sent(true, CmAttribute::Dreq), 1u);
  EXPECT_EQ(p.a.count(CmEventType::DrepReceived), 0u);
  EXPECT_EQ(p.a.count(CmEventType::TimewaitExit), 0u);
  EXPECT_EQ(p.b.count(CmEventType::DreqReceived), 1u);
  EXPECT_EQ(p.a.cm.id_count() + p.b.cm.id_count(), 0u);
}

TEST_F(CmExchange, DisconnectAllSendsADreqPerEstablishedConnection) {
  auto_accept(p.b);
  auto_rtu(p.a);
  for (std::uint32_t qpn = 0x11; qpn < 0x14; ++qpn) connect(qpn);
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.b.count(CmEventType::Established), 3u);
  CmOutput out;
  p.b.cm.disconnect_all(p.now, out);
  p.flush(p.b, out);
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.sent(false, CmAttribute::Dreq), 3u);
  EXPECT_EQ(p.a.count(CmEventType::DreqReceived), 3u);
  p.run_to_quiet();
  EXPECT_EQ(p.a.cm.id_count() + p.b.cm.id_count(), 0u);
}

TEST_F(CmExchange, ConsumerCallsInTheWrongStateAreRefusedWithAReason) {
  CmOutput out;
  EXPECT_EQ(p.a.cm.accept(12345, accept_params(), 0, out).code(), ENOENT);
  a_id = connect();
  const Status s = p.a.cm.accept(a_id, accept_params(), 0, out);
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_NE(s.error().message.find("REQ_SENT"), std::string::npos);
  EXPECT_EQ(p.a.cm.disconnect(a_id, 0, out).code(), EINVAL);
  EXPECT_EQ(p.a.cm.ready_to_use(a_id, 0, out).code(), EINVAL);
  ConnectParams big = connect_params(p.a, p.b, kService);
  big.private_data.resize(93);
  EXPECT_FALSE(p.a.cm.connect(big, 0, out).ok());
  EXPECT_EQ(p.b.cm.listen(kService).code(), EADDRINUSE);
  EXPECT_EQ(p.b.cm.stop_listening(kService + 5).code(), ENOENT);
  EXPECT_TRUE(out.mads.empty());
}

}  // namespace
}  // namespace roce::cm::test::cm_exchange_test
