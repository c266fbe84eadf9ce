// rdma_cm over the IB CM: listeners by port space, port and address; the cma_hdr written by
// connect()/resolve_ud() and read on the passive side; the rdma_cm events both sides see for
// rping-style RC connections (ConnectRequest, ConnectResponse, Established, Disconnected,
// TimewaitExit), udaddy-style SIDR resolution, and every refusal cma.c makes.
#include <gtest/gtest.h>

#include "lib/cm/rdma_cm.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::rdma_cm_test {
namespace {

using proto::CmAttribute;
using proto::IpAddress;
using proto::Ipv4Addr;
using proto::RdmaPortSpace;

const IpAddress kA = IpAddress::of(Ipv4Addr{10, 0, 0, 1});
const IpAddress kB = IpAddress::of(Ipv4Addr{10, 0, 0, 2});

// Each side's CM events go through its RdmaCm; its consumer reacts to rdma_cm events.
class RdmaPair {
 public:
  RdmaPair() : rdma_a(p.a.cm), rdma_b(p.b.cm) {
    hook(p.a, rdma_a, events_a, consumer_a);
    hook(p.b, rdma_b, events_b, consumer_b);
  }
  CmPair p;
  RdmaCm rdma_a, rdma_b;
  std::vector<RdmaCmEvent> events_a, events_b;
  std::function<void(const RdmaCmEvent&)> consumer_a, consumer_b;

  // The rping consumers: the server accepts every request, the client answers the REP.
  void rping_consumers() {
    consumer_b = [this](const RdmaCmEvent& e) {
      if (e.type != RdmaCmEventType::ConnectRequest) return;
      if (e.ud) {
        p.call(p.b, [&](CommunicationManager&, Nanos now, CmOutput& out) { return rdma_b.accept_ud(e.id, 0x345, now, out); });
      } else {
        p.call(p.b, [&](CommunicationManager&, Nanos now, CmOutput& out) { return rdma_b.accept(e.id, accept_params(0x22), now, out); });
      }
    };
    consumer_a = [this](const RdmaCmEvent& e) {
      if (e.type != RdmaCmEventType::ConnectResponse) return;
      p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.ready_to_use(e.id, now, out); });
    };
  }
  template <typename F>
  auto call(Side& s, F&& f) {
    return p.call(s, std::forward<F>(f));
  }
  Result<CmId> connect(std::uint16_t port, std::vector<std::uint8_t> pd = {}, RdmaPortSpace ps = RdmaPortSpace::Tcp,
                       IpAddress dst = kB) {
    RdmaConnectParams c;
    c.port_space = ps;
    c.src = kA;
    c.dst = dst;
    c.src_port = 40000;
    c.dst_port = port;
    c.ib = connect_params(p.a, p.b, 0);
    c.ib.path.local_gid = {};
    c.ib.path.remote_gid = {};
    c.private_data = std::move(pd);
    return call(p.a, [&](CommunicationManager&, Nanos now, CmOutput& out) { return rdma_a.connect(c, now, out); });
  }
  Result<CmId> resolve_ud(std::uint16_t port, RdmaPortSpace ps = RdmaPortSpace::Udp) {
    RdmaUdResolveParams r;
    r.port_space = ps;
    r.src = kA;
    r.dst = kB;
    r.src_port = 40001;
    r.dst_port = port;
    return call(p.a, [&](CommunicationManager&, Nanos now, CmOutput& out) { return rdma_a.resolve_ud(r, now, out); });
  }
  static std::size_t count(const std::vector<RdmaCmEvent>& ev, RdmaCmEventType t) {
    return static_cast<std::size_t>(std::count_if(ev.begin(), ev.end(), [t](const RdmaCmEvent& e) { return e.type == t; }));
  }
  static const RdmaCmEvent* last(const std::vector<RdmaCmEvent>& ev, RdmaCmEventType t) {
    for (auto it = ev.rbegin(); it != ev.rend(); ++it)
      if (it->type == t) return &*it;
    return nullptr;
  }

 private:
  void hook(Side& s, RdmaCm& rdma, std::vector<RdmaCmEvent>& sink, std::function<void(const RdmaCmEvent&)>& consumer) {
    s.consumer = [this, &rdma, &sink, &consumer](Side& side, const CmEvent& e) {
      std::vector<RdmaCmEvent> out_events;
      CmOutput out;
      rdma.on_cm_event(e, p.now, out, out_events);
      p.flush(side, out);
      for (const auto& re : out_events) {
        sink.push_back(re);
        if (consumer) consumer(re);
      }
    };
  }
};

TEST(RdmaCm, RpingStyleConnectionCarriesTheAddressesAndTheConsumersPrivateData) {
  RdmaPair r;
  auto listener = r.rdma_b.listen(RdmaPortSpace::Tcp, 7174);
  ASSERT_TRUE(listener.ok());
  r.rping_consumers();
  auto id = r.connect(7174, {1, 2, 3, 4, 5});
  ASSERT_TRUE(id.ok()) << id.error().message;
  r.p.run_for(1 * kMilli);

  // On the wire: the rdma_cm Service ID and the cma_hdr in front of the private data.
  const auto req_mad = r.p.records(true, CmAttribute::Req).at(0)->mad;
  proto::ParsedMad parsed;
  ASSERT_EQ(proto::parse_mad(req_mad, parsed), proto::MadError::None);
  const auto req = parsed.as<proto::CmReq>();
  EXPECT_EQ(req.service_id.get(), 0x0000000001061C06u);
  EXPECT_EQ(req.primary.local_gid, proto::gid_from_ipv4({10, 0, 0, 1}));
  EXPECT_EQ(req.primary.remote_gid, proto::gid_from_ipv4({10, 0, 0, 2}));
  EXPECT_EQ(req.private_data[0], 0x00);
  EXPECT_EQ(req.private_data[1], 0x40);
  EXPECT_EQ(req.private_data[2], 40000 >> 8);
  EXPECT_EQ(req.private_data[36], 1);

  const RdmaCmEvent* cr = RdmaPair::last(r.events_b, RdmaCmEventType::ConnectRequest);
  ASSERT_NE(cr, nullptr);
  EXPECT_EQ(cr->listener, *listener);
  EXPECT_FALSE(cr->ud);
  EXPECT_EQ(cr->port_space, RdmaPortSpace::Tcp);
  EXPECT_EQ(cr->port, 7174);
  ASSERT_TRUE(cr->addressing);
  EXPECT_EQ(cr->addressing->src, kA);
  EXPECT_EQ(cr->addressing->dst, kB);
  EXPECT_EQ(cr->addressing->src_port, 40000);
  ASSERT_EQ(cr->private_data.size(), kRdmaConnectPrivateBytes);
  EXPECT_EQ(cr->private_data[0], 1);
  EXPECT_EQ(cr->private_data[4], 5);
  EXPECT_EQ(std::get<ReqInfo>(cr->detail).remote_qpn, 0x11u);

  ASSERT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::ConnectResponse), 1u);
  EXPECT_EQ(std::get<RepInfo>(RdmaPair::last(r.events_a, RdmaCmEventType::ConnectResponse)->detail).remote_qpn, 0x22u);
  EXPECT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::Established), 1u);
  EXPECT_EQ(RdmaPair::count(r.events_b, RdmaCmEventType::Established), 1u);
  EXPECT_EQ(RdmaPair::last(r.events_b, RdmaCmEventType::Established)->listener, *listener);

  ASSERT_TRUE(r.call(r.p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.disconnect(*id, now, out); }).ok());
  r.p.run_to_quiet();
  EXPECT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::Disconnected), 1u);
  EXPECT_EQ(RdmaPair::count(r.events_b, RdmaCmEventType::Disconnected), 1u);
  EXPECT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::TimewaitExit), 1u);
  EXPECT_EQ(RdmaPair::count(r.events_b, RdmaCmEventType::TimewaitExit), 1u);
  EXPECT_EQ(r.rdma_a.tracked_ids() + r.rdma_b.tracked_ids(), 0u);
}

TEST(RdmaCm, AListenerBoundToAnotherAddressDoesNotTakeTheRequest) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Tcp, 7471, IpAddress::of(Ipv4Addr{10, 0, 0, 9})).ok());
  r.rping_consumers();
  ASSERT_TRUE(r.connect(7471).ok());
  r.p.run_for(1 * kMilli);
  ASSERT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::Rejected), 1u);
  EXPECT_EQ(RdmaPair::last(r.events_a, RdmaCmEventType::Rejected)->status, 28);  // as cma.c: consumer defined
  EXPECT_TRUE(r.events_b.empty());
  EXPECT_EQ(r.p.b.cm.id_count(), 0u);
  // With the bound address and a wildcard listener, the bound one wins for its address.
  auto bound = r.rdma_b.listen(RdmaPortSpace::Tcp, 7471, kB);
  auto any = r.rdma_b.listen(RdmaPortSpace::Tcp, 7471);
  ASSERT_TRUE(bound.ok() && any.ok());
  ASSERT_TRUE(r.connect(7471).ok());
  r.p.run_for(1 * kMilli);
  ASSERT_NE(RdmaPair::last(r.events_b, RdmaCmEventType::ConnectRequest), nullptr);
  EXPECT_EQ(RdmaPair::last(r.events_b, RdmaCmEventType::ConnectRequest)->listener, *bound);
  EXPECT_EQ(r.rdma_b.listen(RdmaPortSpace::Tcp, 7471, kB).error().code, EADDRINUSE);
}

TEST(RdmaCm, APortNobodyListensOnIsRejectedAsAnInvalidServiceId) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Tcp, 7174).ok());
  ASSERT_TRUE(r.connect(18515).ok());
  r.p.run_for(1 * kMilli);
  ASSERT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::Rejected), 1u);
  EXPECT_EQ(RdmaPair::last(r.events_a, RdmaCmEventType::Rejected)->status, 8);
  EXPECT_EQ(r.rdma_a.tracked_ids(), 0u);
}

TEST(RdmaCm, ABadCmaHeaderIsRejected) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Tcp, 7174).ok());
  ConnectParams c = connect_params(r.p.a, r.p.b, proto::rdma_service_id(RdmaPortSpace::Tcp, 7174));
  c.private_data = std::vector<std::uint8_t>(proto::kCmaHeaderBytes, 0);
  c.private_data[0] = 1;  // cma_version 1
  ASSERT_TRUE(r.call(r.p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(c, now, out); }).ok());
  r.p.run_for(1 * kMilli);
  EXPECT_EQ(r.p.a.count(CmEventType::RejReceived), 1u);
  EXPECT_EQ(std::get<RejInfo>(r.p.a.last(CmEventType::RejReceived)->detail).reason, 28);
  EXPECT_TRUE(r.events_b.empty());
}

TEST(RdmaCm, AfIbRequestWithoutCmaHeaderReachesAWildcardIbListener) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Ib, 7471).ok());
  ConnectParams c = connect_params(r.p.a, r.p.b, proto::rdma_service_id(RdmaPortSpace::Ib, 7471));
  c.private_data = {0x42, 0x42};
  ASSERT_TRUE(r.call(r.p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(c, now, out); }).ok());
  r.p.run_for(1 * kMilli);
  const RdmaCmEvent* cr = RdmaPair::last(r.events_b, RdmaCmEventType::ConnectRequest);
  ASSERT_NE(cr, nullptr);
  EXPECT_FALSE(cr->addressing);
  EXPECT_EQ(cr->private_data.size(), proto::kCmReqPrivateBytes);
  EXPECT_EQ(cr->private_data[0], 0x42);
}

TEST(RdmaCm, ConsumerRejectReachesTheActiveSideWithItsPrivateData) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Tcp, 4420).ok());
  r.consumer_b = [&](const RdmaCmEvent& e) {
    const std::vector<std::uint8_t> nvme_rej{0, 1, 0, 2};
    r.call(r.p.b, [&](CommunicationManager&, Nanos now, CmOutput& out) { return r.rdma_b.reject(e.id, now, out, nvme_rej); });
  };
  ASSERT_TRUE(r.connect(4420).ok());
  r.p.run_for(1 * kMilli);
  const RdmaCmEvent* rej = RdmaPair::last(r.events_a, RdmaCmEventType::Rejected);
  ASSERT_NE(rej, nullptr);
  EXPECT_EQ(rej->status, 28);
  EXPECT_EQ(rej->private_data[3], 2);
  EXPECT_EQ(r.rdma_b.tracked_ids(), 0u);
}

TEST(RdmaCm, UdaddyStyleResolutionGivesTheServersQpnAndQkey) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Udp, 7174).ok());
  r.rping_consumers();
  auto id = r.resolve_ud(7174);
  ASSERT_TRUE(id.ok());
  r.p.run_for(1 * kMilli);
  const RdmaCmEvent* cr = RdmaPair::last(r.events_b, RdmaCmEventType::ConnectRequest);
  ASSERT_NE(cr, nullptr);
  EXPECT_TRUE(cr->ud);
  EXPECT_EQ(cr->port_space, RdmaPortSpace::Udp);
  ASSERT_TRUE(cr->addressing);
  EXPECT_EQ(cr->addressing->src_port, 40001);
  EXPECT_EQ(cr->private_data.size(), kRdmaUdResolvePrivateBytes);
  const RdmaCmEvent* est = RdmaPair::last(r.events_a, RdmaCmEventType::Established);
  ASSERT_NE(est, nullptr);
  EXPECT_TRUE(est->ud);
  const auto& rep = std::get<SidrRepInfo>(est->detail);
  EXPECT_EQ(rep.qpn, 0x345u);
  EXPECT_EQ(rep.qkey, kRdmaUdpQkey);
  EXPECT_EQ(r.rdma_a.tracked_ids() + r.rdma_b.tracked_ids(), 0u);
}

TEST(RdmaCm, PortSpaceAndRequestKindMustAgree) {
  RdmaPair r;
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Udp, 7174).ok());
  ASSERT_TRUE(r.rdma_b.listen(RdmaPortSpace::Tcp, 7174).ok());
  // A SIDR_REQ for a TCP port: SIDR_REP "rejected".
  ASSERT_TRUE(r.resolve_ud(7174, RdmaPortSpace::Udp).ok());
  SidrRequestParams raw;
  raw.service_id = proto::rdma_service_id(RdmaPortSpace::Tcp, 7174);
  raw.peer = MadPeer{r.p.b.gid};
  ASSERT_TRUE(r.call(r.p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.sidr_request(raw, now, out); }).ok());
  // A connected REQ for a UDP port: REJ consumer defined.
  ConnectParams c = connect_params(r.p.a, r.p.b, proto::rdma_service_id(RdmaPortSpace::Udp, 7174));
  c.private_data.resize(proto::kCmaHeaderBytes);
  proto::write_cma_header({kA, kB, 1}, c.private_data);
  ASSERT_TRUE(r.call(r.p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(c, now, out); }).ok());
  r.p.run_for(1 * kMilli);
  EXPECT_EQ(RdmaPair::count(r.events_b, RdmaCmEventType::ConnectRequest), 1u);  // only the proper SIDR one
  const auto sidr_reps = r.p.a.count(CmEventType::SidrRepReceived);
  EXPECT_EQ(sidr_reps, 1u);
  EXPECT_EQ(std::get<SidrRepInfo>(r.p.a.last(CmEventType::SidrRepReceived)->detail).status,
            static_cast<std::uint8_t>(proto::SidrStatus::Rejected));
  EXPECT_EQ(std::get<RejInfo>(r.p.a.last(CmEventType::RejReceived)->detail).reason, 28);
}

TEST(RdmaCm, NoServerAtAllIsUnreachable) {
  RdmaPair r;
  r.p.drop_filter = drop_all(true, CmAttribute::Req);
  ASSERT_TRUE(r.connect(7174).ok());
  r.p.run_to_quiet();
  EXPECT_EQ(RdmaPair::count(r.events_a, RdmaCmEventType::Unreachable), 1u);
  EXPECT_EQ(r.rdma_a.tracked_ids(), 0u);
}

TEST(RdmaCm, ListenersShareOneCmServiceIdUntilTheLastGoes) {
  RdmaPair r;
  auto a = r.rdma_b.listen(RdmaPortSpace::Tcp, 7174);
  auto b = r.rdma_b.listen(RdmaPortSpace::Tcp, 7174, kB);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(r.p.b.cm.listener_count(), 1u);
  ASSERT_TRUE(r.rdma_b.stop_listening(*a).ok());
  EXPECT_EQ(r.p.b.cm.listener_count(), 1u);
  ASSERT_TRUE(r.rdma_b.stop_listening(*b).ok());
  EXPECT_EQ(r.p.b.cm.listener_count(), 0u);
  EXPECT_EQ(r.rdma_b.stop_listening(*b).code(), ENOENT);
  CmOutput out;
  RdmaConnectParams big;
  big.src = kA;
  big.dst = kB;
  big.private_data.resize(57);
  EXPECT_EQ(r.rdma_a.connect(big, 0, out).error().code, EINVAL);
  big.private_data.clear();
  big.port_space = RdmaPortSpace::Udp;
  EXPECT_EQ(r.rdma_a.connect(big, 0, out).error().code, EINVAL);
  EXPECT_TRUE(out.mads.empty());
  EXPECT_EQ(to_string(RdmaCmEventType::ConnectRequest), "CONNECT_REQUEST");
}

}  // namespace
}  // namespace roce::cm::test::rdma_cm_test
