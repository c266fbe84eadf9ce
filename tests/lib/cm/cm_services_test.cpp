// SIDR (UD service resolution), ClassPortInfo and the GetResp status answers, and LAP/APR.
#include <gtest/gtest.h>

#include "protocol/class_port_info.hpp"
#include "protocol/cm_alternate_path.hpp"
#include "protocol/cma_header.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::cm_services_test {
namespace {

using proto::CmAttribute;
using proto::SidrStatus;

constexpr std::uint64_t kUdService = proto::rdma_service_id(proto::RdmaPortSpace::Udp, 7174);
constexpr std::uint32_t kRdmaUdpQkey = 0x01234567;  // RDMA_UDP_QKEY

template <typename T>
T payload(const Mad& m) {
  proto::ParsedMad p;
  EXPECT_EQ(proto::parse_mad(m, p), proto::MadError::None);
  return p.as<T>();
}

proto::MadHeader header(const Mad& m) {
  proto::ParsedMad p;
  proto::parse_mad(m, p);
  return p.header;
}

class CmSidr : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(p.b.cm.listen(kUdService).ok());
    p.b.consumer = [this](Side& s, const CmEvent& e) {
      if (e.type != CmEventType::SidrReqReceived || !answer) return;
      SidrReplyParams r;
      r.qpn = 0x345;
      r.qkey = kRdmaUdpQkey;
      r.private_data = {9, 8, 7};
      p.call(s, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_reply(e.id, r, now, out); });
    };
  }
  CmId request(std::uint64_t service = kUdService) {
    SidrRequestParams r;
    r.service_id = service;
    r.peer = MadPeer{p.b.gid};
    r.private_data = {1, 2, 3};
    auto id = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_request(r, now, out); });
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }
  CmPair p;
  bool answer = true;
};

TEST_F(CmSidr, RequestIsAnsweredWithQpnAndQkey) {
  const CmId id = request();
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.b.count(CmEventType::SidrReqReceived), 1u);
  const CmEvent& req = *p.b.last(CmEventType::SidrReqReceived);
  const auto& info = std::get<SidrReqInfo>(req.detail);
  EXPECT_EQ(info.service_id, kUdService);
  EXPECT_EQ(info.request_id, id);
  EXPECT_EQ(info.pkey, 0xFFFF);
  EXPECT_EQ(info.from.gid, p.a.gid);
  EXPECT_EQ(req.private_data.size(), proto::kCmSidrReqPrivateBytes);
  EXPECT_EQ(req.private_data[2], 3);
  ASSERT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);
  const CmEvent& rep = *p.a.last(CmEventType::SidrRepReceived);
  const auto& answer_info = std::get<SidrRepInfo>(rep.detail);
  EXPECT_EQ(rep.id, id);
  EXPECT_EQ(answer_info.status, 0);
  EXPECT_EQ(answer_info.qpn, 0x345u);
  EXPECT_EQ(answer_info.qkey, kRdmaUdpQkey);
  EXPECT_EQ(answer_info.service_id, kUdService);
  EXPECT_EQ(rep.private_data[0], 9);
  EXPECT_EQ(header(p.records(false, CmAttribute::SidrRep)[0]->mad).tid(),
            header(p.records(true, CmAttribute::SidrReq)[0]->mad).tid());
  EXPECT_EQ(p.a.cm.id_count(), 0u);
  EXPECT_EQ(p.b.cm.id_count(), 0u);
  EXPECT_EQ(p.b.cm.sidr_reply_cache_size(), 1u);
}

TEST_F(CmSidr, LostReplyIsAnsweredAgainFromTheCacheNotTheConsumer) {
  p.drop_filter = drop_nth(p, false, CmAttribute::SidrRep, 0);
  request();
  p.run_for(4096 * kMilli + 1 * kMilli);  // rdma_cm's SIDR timeout
  EXPECT_EQ(p.sent(true, CmAttribute::SidrReq), 2u);
  EXPECT_EQ(p.sent(false, CmAttribute::SidrRep), 2u);
  EXPECT_EQ(p.b.count(CmEventType::SidrReqReceived), 1u);
  EXPECT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);
  EXPECT_EQ(p.b.cm.counters().rx_duplicates[attribute_slot(CmAttribute::SidrReq)], 1u);
  // The cached answer expires.
  p.run_for(120 * kSecond);
  EXPECT_EQ(p.b.cm.sidr_reply_cache_size(), 0u);
  EXPECT_EQ(p.b.cm.next_deadline(), kNever);
}

TEST_F(CmSidr, DuplicateWhileTheConsumerDecidesIsDropped) {
  answer = false;
  const CmId id = request();
  p.run_for(4096 * kMilli + 1 * kMilli);
  EXPECT_EQ(p.b.count(CmEventType::SidrReqReceived), 1u);
  EXPECT_EQ(p.b.cm.counters().rx_duplicates[attribute_slot(CmAttribute::SidrReq)], 1u);
  EXPECT_EQ(p.b.cm.half_open_count(), 1u);
  // The consumer never answers: SIDR_REP "rejected" after the consumer timeout.
  p.run_for(30 * kSecond);
  EXPECT_EQ(p.b.count(CmEventType::ConsumerTimeout), 1u);
  ASSERT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);
  EXPECT_EQ(std::get<SidrRepInfo>(p.a.last(CmEventType::SidrRepReceived)->detail).status,
            static_cast<std::uint8_t>(SidrStatus::Rejected));
  EXPECT_FALSE(p.a.cm.state_of(id));
  EXPECT_EQ(p.b.cm.half_open_count(), 0u);
}

TEST_F(CmSidr, UnknownServiceIsUnsupported) {
  request(kUdService + 1);
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.a.count(CmEventType::SidrRepReceived), 1u);
  EXPECT_EQ(std::get<SidrRepInfo>(p.a.last(CmEventType::SidrRepReceived)->detail).status,
            static_cast<std::uint8_t>(SidrStatus::ServiceIdUnsupported));
  EXPECT_EQ(p.b.cm.counters().sidr_no_listener, 1u);
  EXPECT_EQ(p.b.cm.id_count(), 0u);
}

TEST_F(CmSidr, NoAnswerAtAllEndsInSidrReqError) {
  p.drop_filter = drop_all(true, CmAttribute::SidrReq);
  const CmId id = request();
  p.run_for(16 * 4096 * kMilli + 1 * kMilli);
  EXPECT_EQ(p.sent(true, CmAttribute::SidrReq), 16u);
  EXPECT_EQ(p.a.count(CmEventType::SidrReqError), 1u);
  EXPECT_EQ(p.a.cm.counters().sidr_timeouts, 1u);
  EXPECT_FALSE(p.a.cm.state_of(id));
}

Mad class_port_info_get(proto::MadMethod method = proto::MadMethod::Get, std::uint8_t class_version = 2) {
  auto h = proto::MadHeader::cm(CmAttribute::ClassPortInfo, 0x1234, method);
  h.class_version = class_version;
  return proto::make_mad(h, std::array<std::uint8_t, proto::kMadDataBytes>{});
}

TEST(CmClassPortInfo, GetIsAnsweredWithTheCmsClassPortInfo) {
  CmPair p;
  const MadPeer from{p.a.gid, 1, 0xFFFF};
  p.inject(p.b, class_port_info_get(), from);
  ASSERT_EQ(p.sent(false, CmAttribute::ClassPortInfo), 1u);
  const Mad& m = p.records(false, CmAttribute::ClassPortInfo)[0]->mad;
  const auto h = header(m);
  EXPECT_EQ(h.method(), proto::MadMethod::GetResp);
  EXPECT_EQ(h.status.get(), 0);
  EXPECT_EQ(h.tid(), 0x1234u);
  const auto cpi = payload<proto::CmClassPortInfo>(m).info;
  EXPECT_EQ(cpi.base_version, 1);
  EXPECT_EQ(cpi.class_version, 2);
  EXPECT_EQ(cpi.capability_mask.get(), proto::kCmCapReliableConnection | proto::kCmCapUnreliableConnection | proto::kCmCapSidr);
  EXPECT_EQ(cpi.resp_time_value(), 20);
  EXPECT_EQ(p.b.cm.counters().class_port_info_answered, 1u);
}

TEST(CmClassPortInfo, GetsAndSetsWeDoNotServeGetAStatusButSendsAndResponsesNothing) {
  CmPair p;
  auto status_of_last = [&]() { return header(p.records(false, CmAttribute::ClassPortInfo).back()->mad).status.get(); };
  p.inject(p.b, class_port_info_get(proto::MadMethod::Set));
  EXPECT_EQ(status_of_last(), static_cast<std::uint16_t>(proto::MadStatus::UnsupportedMethodAttribute));
  p.inject(p.b, class_port_info_get(proto::MadMethod::Get, 1));
  EXPECT_EQ(status_of_last(), static_cast<std::uint16_t>(proto::MadStatus::BadVersion));
  EXPECT_EQ(p.sent(false, CmAttribute::ClassPortInfo), 2u);
  // Get(REQ): the attribute does not take Get.
  p.inject(p.b, proto::make_mad(proto::MadHeader::cm(CmAttribute::Req, 9, proto::MadMethod::Get), proto::CmReq{}));
  ASSERT_EQ(p.sent(false, CmAttribute::Req), 1u);
  EXPECT_EQ(header(p.records(false, CmAttribute::Req)[0]->mad).method(), proto::MadMethod::GetResp);
  EXPECT_EQ(header(p.records(false, CmAttribute::Req)[0]->mad).status.get(),
            static_cast<std::uint16_t>(proto::MadStatus::UnsupportedMethodAttribute));
  // A GetResp, or a Send of a bad class version, gets nothing back: no reply loops.
  p.inject(p.b, class_port_info_get(proto::MadMethod::GetResp));
  auto req = proto::MadHeader::cm(CmAttribute::Req, 9);
  req.class_version = 1;
  p.inject(p.b, proto::make_mad(req, proto::CmReq{}));
  EXPECT_EQ(p.wire.size(), 3u);
  EXPECT_EQ(p.b.cm.counters().mad_status_replies, 3u);
  EXPECT_EQ(p.b.cm.counters().rx_malformed[static_cast<std::size_t>(proto::MadError::BadClassVersion)], 2u);
}

TEST(CmAlternatePath, LapAndAprAreCountedAndIgnoredAsLinuxDoesOnRoce) {
  CmPair p;
  p.inject(p.b, proto::make_mad(proto::MadHeader::cm(CmAttribute::Lap, 1), proto::CmLap{}));
  p.inject(p.b, proto::make_mad(proto::MadHeader::cm(CmAttribute::Apr, 1), proto::CmApr{}));
  EXPECT_EQ(p.b.cm.counters().alternate_path_ignored, 2u);
  EXPECT_EQ(p.b.cm.counters().rx_msgs[attribute_slot(CmAttribute::Lap)], 1u);
  EXPECT_TRUE(p.wire.empty());
}

TEST(CmCounters, EveryCounterHasADistinctNameAndTheExchangeIsCounted) {
  CmPair p;
  ASSERT_TRUE(p.b.cm.listen(kUdService).ok());
  p.inject(p.b, class_port_info_get());
  std::map<std::string, std::uint64_t> seen;
  p.b.cm.counters().for_each([&](const std::string& name, std::uint64_t v) {
    EXPECT_TRUE(seen.emplace(name, v).second) << "counter name used twice: " << name;
  });
  EXPECT_EQ(seen.at("cm_rx_msgs.ClassPortInfo"), 1u);
  EXPECT_EQ(seen.at("cm_tx_msgs.ClassPortInfo"), 1u);
  EXPECT_EQ(seen.at("class_port_info_answered"), 1u);
  EXPECT_EQ(seen.count("rej_sent.stale_connection"), 1u);
  EXPECT_EQ(seen.count("rx_malformed.truncated"), 1u);
  EXPECT_GT(seen.size(), 100u);
}

}  // namespace
}  // namespace roce::cm::test::cm_services_test
