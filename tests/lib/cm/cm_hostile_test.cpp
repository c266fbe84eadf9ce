// Bad input to the passive CM: REQ floods from one source and from many (state stays under
// the caps, REJ "no resources" beyond them, and the timers free everything), repeated REQs,
// REQs for transports and MTUs we do not offer, and random or mutated MADs (counted, never
// more than a bounded answer).
#include <gtest/gtest.h>

#include <random>

#include "lib/cm/cm_timing.hpp"
#include "protocol/cm_disconnect.hpp"
#include "protocol/cma_header.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::cm_hostile_test {
namespace {

using proto::CmAttribute;

constexpr std::uint64_t kService = proto::rdma_service_id(proto::RdmaPortSpace::Tcp, 18515);

Mad flood_req(std::uint32_t comm_id, std::uint32_t qpn, std::uint64_t guid = 0x0505050000000001) {
  proto::CmReq r{};
  r.local_comm_id.set(comm_id);
  r.service_id.set(kService);
  r.local_ca_guid.set(guid);
  r.set_local_qpn(qpn);
  r.set_starting_psn(comm_id & 0xFFFFFF);
  r.set_remote_cm_response_timeout(20);
  r.set_local_cm_response_timeout(20);
  r.partition_key.set(0xFFFF);
  r.set_path_mtu(3);
  r.set_max_cm_retries(15);
  r.primary.hop_limit = 64;
  r.primary.set_local_ack_timeout(19);
  return proto::make_mad(proto::MadHeader::cm(CmAttribute::Req, comm_id), r);
}

std::uint16_t rej_reason(const OutMad& m) {
  proto::ParsedMad p;
  EXPECT_EQ(proto::parse_mad(m.mad, p), proto::MadError::None);
  EXPECT_EQ(p.attribute, CmAttribute::Rej);
  return p.as<proto::CmRej>().reason_code();
}

struct Passive {
  explicit Passive(CmConfig cfg = config_b()) : cm(cfg) { EXPECT_TRUE(cm.listen(kService).ok()); }
  CommunicationManager cm;
  Nanos now = 0;
  std::size_t reqs_delivered = 0, rej_no_resources = 0, other_out = 0, consumer_timeouts = 0;
  bool accept = false;
  std::uint32_t next_qpn = 0x1000;

  void take(CmOutput& out) {
    for (const auto& m : out.mads) {
      proto::ParsedMad p;
      if (proto::parse_mad(m.mad, p) == proto::MadError::None && p.attribute == CmAttribute::Rej &&
          p.as<proto::CmRej>().reason_code() == static_cast<std::uint16_t>(proto::RejReason::NoResources))
        ++rej_no_resources;
      else
        ++other_out;
    }
    auto events = std::move(out.events);
    out.clear();
    for (const auto& e : events) {
      if (e.type == CmEventType::ConsumerTimeout) ++consumer_timeouts;
      if (e.type != CmEventType::ReqReceived) continue;
      ++reqs_delivered;
      if (accept) {
        CmOutput o;
        EXPECT_TRUE(cm.accept(e.id, accept_params(next_qpn++), now, o).ok());
        take(o);
      }
    }
  }
  void receive(const Mad& m, const Gid& from) {
    CmOutput out;
    cm.on_mad(m, MadPeer{from}, now, out);
    take(out);
  }
  void run_timers_until(Nanos t) {
    while (cm.next_deadline() <= t) {
      now = cm.next_deadline();
      CmOutput out;
      cm.on_timer(now, out);
      take(out);
    }
    now = t;
  }
};

TEST(CmFlood, ReqsFromOneSourceStopAtThePerPeerCapAndTheConsumerTimeoutFreesThem) {
  Passive b;
  const Gid attacker = gid_of(66);
  for (std::uint32_t i = 1; i <= 10000; ++i) {
    b.now += 10 * kMicro;
    b.receive(flood_req(i, i), attacker);
    ASSERT_LE(b.cm.half_open_count(), 128u);
  }
  EXPECT_EQ(b.reqs_delivered, 128u);
  EXPECT_EQ(b.rej_no_resources, 10000u - 128u);
  EXPECT_EQ(b.cm.counters().req_no_resources, 10000u - 128u);
  EXPECT_EQ(b.cm.id_count(), 128u);
  // Another source still gets through.
  b.receive(flood_req(20001, 20001, 0x0606), gid_of(67));
  EXPECT_EQ(b.reqs_delivered, 129u);
  b.run_timers_until(b.now + 31 * kSecond);
  EXPECT_EQ(b.consumer_timeouts, 129u);
  EXPECT_EQ(b.cm.id_count(), 0u);
  EXPECT_EQ(b.cm.half_open_count(), 0u);
  EXPECT_EQ(b.cm.next_deadline(), kNever);
}

TEST(CmFlood, ReqsFromManySourcesStopAtTheGlobalCap) {
  Passive b;
  for (std::uint32_t i = 1; i <= 3000; ++i) {
    Gid g = gid_of(0);
    g[13] = static_cast<std::uint8_t>(i >> 8);
    g[14] = static_cast<std::uint8_t>(i);
    b.receive(flood_req(i, i, 0x0707000000000000 | i), g);
  }
  EXPECT_EQ(b.reqs_delivered, 1024u);
  EXPECT_EQ(b.cm.half_open_count(), 1024u);
  EXPECT_EQ(b.rej_no_resources, 3000u - 1024u);
  b.run_timers_until(b.now + 31 * kSecond);
  EXPECT_EQ(b.cm.id_count(), 0u);
}

TEST(CmFlood, AcceptedReqsThatNeverRtuAreFreedByTheRepTimerAndTimewait) {
  Passive b;
  b.accept = true;
  const Gid attacker = gid_of(66);
  for (std::uint32_t i = 1; i <= 1000; ++i) b.receive(flood_req(i, i), attacker);
  EXPECT_EQ(b.cm.half_open_count(), 128u);
  const std::size_t reps_before = b.cm.counters().tx_msgs[attribute_slot(CmAttribute::Rep)];
  EXPECT_EQ(reps_before, 128u);
  // 16 REPs each (1 + 15 retries, 4096 ms apart), then REJ timeout, TIMEWAIT 2048 ms, freed.
  b.run_timers_until(16 * 4096 * kMilli + 2048 * kMilli + 1 * kMilli);
  EXPECT_EQ(b.cm.counters().tx_msgs[attribute_slot(CmAttribute::Rep)], 128u * 16);
  EXPECT_EQ(b.cm.counters().rep_timeouts, 128u);
  EXPECT_EQ(b.cm.counters().rej_sent[4], 128u);
  EXPECT_EQ(b.cm.counters().timewait_exits, 128u);
  EXPECT_EQ(b.cm.id_count(), 0u);
  EXPECT_EQ(b.cm.half_open_count(), 0u);
}

TEST(CmFlood, AReqAskingForHoursOfRepRetriesIsHeldToTheConfiguredMaximum) {
  Passive b;
  b.accept = true;
  Mad req = flood_req(1, 1);
  req[proto::kMadHeaderBytes + 47] = std::byte{0xF8};  // local CM response timeout 31: 2^23 ms
  b.receive(req, gid_of(66));
  ASSERT_EQ(b.cm.half_open_count(), 1u);
  EXPECT_EQ(b.cm.next_deadline(), cm_time(24));  // 65536 ms, not 2.3 hours
  b.run_timers_until(16 * cm_time(24) + 2048 * kMilli + 1 * kMilli);
  EXPECT_EQ(b.cm.counters().rep_timeouts, 1u);
  EXPECT_EQ(b.cm.id_count(), 0u);
}

TEST(CmFlood, TheSameReqRepeatedMakesOneIdAndOneAnswerEach) {
  Passive b;
  const Mad req = flood_req(7, 7);
  for (int i = 0; i < 5000; ++i) b.receive(req, gid_of(66));
  EXPECT_EQ(b.reqs_delivered, 1u);
  EXPECT_EQ(b.cm.id_count(), 1u);
  EXPECT_EQ(b.cm.counters().rx_duplicates[attribute_slot(CmAttribute::Req)], 4999u);
  // The first duplicate makes the MRA, every later one repeats it.
  EXPECT_EQ(b.cm.counters().tx_msgs[attribute_slot(CmAttribute::Mra)], 4999u);
}

TEST(CmHostile, ReqForATransportOrMtuWeDoNotOfferIsRejectedWithItsReason) {
  Passive b;
  Mad rd = flood_req(1, 1);
  {
    proto::ParsedMad p;
    proto::parse_mad(rd, p);
    auto r = p.as<proto::CmReq>();
    r.set_transport(proto::CmTransport::Rd);
    rd = proto::make_mad(p.header, r);
  }
  CmOutput out;
  b.cm.on_mad(rd, MadPeer{gid_of(9)}, 0, out);
  ASSERT_EQ(out.mads.size(), 1u);
  EXPECT_EQ(rej_reason(out.mads[0]), static_cast<std::uint16_t>(proto::RejReason::InvalidTransportType));
  out.clear();
  Mad mtu = flood_req(2, 2);
  mtu[proto::kMadHeaderBytes + 50] = std::byte{0x70};  // path MTU 7
  b.cm.on_mad(mtu, MadPeer{gid_of(9)}, 0, out);
  ASSERT_EQ(out.mads.size(), 1u);
  EXPECT_EQ(rej_reason(out.mads[0]), static_cast<std::uint16_t>(proto::RejReason::InvalidMtu));
  EXPECT_EQ(b.cm.id_count(), 0u);
  EXPECT_EQ(b.cm.counters().req_bad_transport, 1u);
  EXPECT_EQ(b.cm.counters().req_bad_mtu, 1u);
  // UC is offered unless the configuration says otherwise.
  CmConfig no_uc = config_b();
  no_uc.accept_uc = false;
  Passive strict(no_uc);
  Mad uc = flood_req(3, 3);
  uc[proto::kMadHeaderBytes + 43] = std::byte{0x02};  // transport 1 (UC)
  out.clear();
  strict.cm.on_mad(uc, MadPeer{gid_of(9)}, 0, out);
  ASSERT_EQ(out.mads.size(), 1u);
  EXPECT_EQ(rej_reason(out.mads[0]), static_cast<std::uint16_t>(proto::RejReason::InvalidTransportType));
}

// Random and mutated MADs: every one is counted as received or malformed, the CM answers each
// with at most two MADs (a REJ, plus a DREQ to a stale connection), and it keeps working.
TEST(CmHostile, RandomAndMutatedMadsAreCountedAndNeverAmplified) {
  CmPair p;
  ASSERT_TRUE(p.b.cm.listen(kService).ok());
  auto_accept(p.b);
  auto_rtu(p.a);
  // A live connection, so that mutated MADs can hit real IDs.
  auto id = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(p.a, p.b, kService), now, out);
  });
  p.run_for(1 * kMilli);
  ASSERT_EQ(p.a.cm.state_of(*id), CmState::Established);
  std::vector<Mad> seeds;
  for (const auto& r : p.wire) seeds.push_back(r.mad);
  std::mt19937_64 rng(4791);
  std::uint64_t injected = 0;
  for (int i = 0; i < 30000; ++i) {
    std::vector<std::byte> buf;
    if (i % 3 == 0) {
      buf.resize(rng() % 300);
      for (auto& b : buf) b = std::byte(rng());
    } else {
      const Mad& s = seeds[rng() % seeds.size()];
      buf.assign(s.begin(), s.end());
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) buf[rng() % buf.size()] ^= std::byte(1u << (rng() % 8));
      if (i % 7 == 0) buf.resize(rng() % buf.size());
    }
    Side& to = i % 2 ? p.a : p.b;
    CmOutput out;
    to.cm.on_mad(buf, MadPeer{(i % 2 ? p.b : p.a).gid}, p.now, out);
    ++injected;
    ASSERT_LE(out.mads.size(), 2u);
    for (const auto& m : out.mads) {
      // Either a CM message we parse ourselves, or a GetResp with an error status to a Get/Set
      // (for an attribute or class version the CM does not serve).
      proto::ParsedMad parsed;
      const proto::MadError e = proto::parse_mad(m.mad, parsed);
      const bool status_reply = parsed.has_header && parsed.header.method() == proto::MadMethod::GetResp &&
                                parsed.header.status.get() != 0;
      ASSERT_TRUE(e == proto::MadError::None || status_reply) << "the CM sent " << proto::to_string(e);
    }
    out.clear();
    p.now += 1 * kMicro;
  }
  std::uint64_t counted = 0;
  for (Side* s : {&p.a, &p.b}) {
    for (auto v : s->cm.counters().rx_msgs) counted += v;
    for (auto v : s->cm.counters().rx_malformed) counted += v;
  }
  // The setup's own exchange (REQ, REP, RTU) is in rx_msgs too.
  EXPECT_EQ(counted, injected + 3);
  EXPECT_GT(p.b.cm.counters().rx_malformed[static_cast<std::size_t>(proto::MadError::Truncated)], 0u);
  // Still a working CM: a fresh connection comes up.
  p.a.events.clear();
  auto again = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
    return cm.connect(connect_params(p.a, p.b, kService, 0x77), now, out);
  });
  p.run_for(1 * kMilli);
  EXPECT_EQ(p.a.cm.state_of(*again), CmState::Established);
}

}  // namespace
}  // namespace roce::cm::test::cm_hostile_test
