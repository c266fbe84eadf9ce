// RoCEv2 over IPv6 between two engines: GIDs are the addresses themselves (IPv4 ones stay
// IPv4-mapped), the GRH's traffic class and flow label reach the IPv6 header, the UDP source
// port follows the flow label as rdma_get_udp_sport does (rxe >= 5.17, ConnectX), every verb
// lands byte-exact, UD receives carry the IPv6 header as their GRH, and CE marks come back as
// IPv6 CNPs; UD datagrams take their AH's traffic class and flow label.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/parser.hpp"
#include "protocol/udp_sport.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"
#include "tests/support/write_stream.hpp"

namespace roce::test::ipv6_path_test {
namespace {

using namespace roce::proto;

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const rdma::IpAddress kA = rdma::IpAddress::ipv6({0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
const rdma::IpAddress kB = rdma::IpAddress::ipv6({0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});

TEST(Ipv6Gid, IsTheAddressAndIpv4StaysMapped) {
  const ibv_gid g = rdma::gid_from_ip(kA);
  EXPECT_EQ(std::memcmp(g.raw, kA.v6.data(), 16), 0);
  EXPECT_EQ(rdma::ip_from_gid(g), kA);
  const rdma::IpAddress v4 = rdma::IpAddress::ipv4({10, 77, 0, 2});
  const ibv_gid m = rdma::gid_from_ip(v4);
  EXPECT_EQ(m.raw[10], 0xFF);
  EXPECT_EQ(m.raw[11], 0xFF);
  EXPECT_EQ(m.raw[15], 2);
  EXPECT_EQ(rdma::ip_from_gid(m), v4);
  // ::ffff:0:0/96 is IPv4 whatever follows; an address one bit outside it is IPv6.
  ibv_gid near = m;
  near.raw[9] = 1;
  EXPECT_EQ(rdma::ip_from_gid(near).version, IpVersion::V6);
}

// The rdma_calc_flow_label / rdma_flow_label_to_udp_sport values of the kernel's formula for two
// QPN pairs, worked by hand: symmetric in the QPNs, and the port folds the label's top 6 bits in.
TEST(Ipv6FlowLabel, DerivedFromTheQpnsWhenTheGrhHasNone) {
  // 0x11 * 0x12 = 0x132: no bits above 20, so the label is the product.
  EXPECT_EQ(flow_label_from_qpns(0x11, 0x12), 0x132u);
  EXPECT_EQ(flow_label_from_qpns(0x12, 0x11), 0x132u);
  // 0xABCDE * 0x12345 = 0xC379541D6 (36 bits): v ^= v >> 20 folds its top 16 bits into the
  // low ones, v >> 40 is then 0; the label is 0x541D6 ^ 0xC3795 = 0x582AF.
  EXPECT_EQ(flow_label_from_qpns(0xABCDE, 0x12345), 0x582AFu);
  EXPECT_EQ(sport_from_flow_label(0x132), 0xC000 | 0x132);
  EXPECT_EQ(sport_from_flow_label(0xFC001), 0xC000 | (0x0001 ^ 0x3F));
}

struct V6Pair {
  SimNetwork net{27};
  Endpoint a, b;
  std::vector<Packet> from_a, from_b;
  explicit V6Pair(LinkFaults f = {}, rdma::EngineConfig cfg = {}) {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, kA, cfg);
    net.add_host("b", {2, 0, 0, 0, 0, 2}, kB, cfg);
    net.connect("a", "b", f, {});
    net.on_transmit = [this](const std::string& from, std::span<const std::byte> fr, Nanos) {
      Packet p;
      if (parse_frame(fr, {}, p) != ParseError::None) return;
      (from == "a" ? from_a : from_b).push_back(p);
    };
  }
  // RTR with the GRH's traffic class and flow label as a verbs program would set them.
  void bring_up(Endpoint& me, const Endpoint& peer, const QpOptions& o, std::uint8_t tclass, std::uint32_t flow_label) {
    rdma::PeerPath path;
    path.mtu = o.mtu;
    path.dest_qpn = peer.qp->qpn();
    path.dgid = gid_of(*peer.engine);
    path.traffic_class = tclass;
    rdma::QpTransition rtr = rdma::rtr_transition(o.type, path);
    rtr.attr.ah_attr.grh.flow_label = flow_label;
    for (const rdma::QpTransition& t :
         {rdma::init_transition(o.type, o.access, o.qkey), rtr, rdma::rts_transition(o.type, rdma::SendSide{0, o.timeout, o.retry_cnt, o.rnr_retry, o.max_rd_atomic})}) {
      const auto s = me.engine->modify_qp(me.qp, t.attr, t.mask);
      ASSERT_TRUE(s.ok()) << s.error().message;
    }
  }
  // Two UD QPs with Q_Key 0x11111111, ready to send.
  void connect_ud() {
    QpOptions o;
    o.type = IBV_QPT_UD;
    o.qkey = 0x11111111;
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
    connect_pair(a, b, o);
  }
  void connect(const QpOptions& o, std::uint8_t tclass = 0, std::uint32_t flow_label = 0) {
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
    bring_up(a, b, o, tclass, flow_label);
    bring_up(b, a, o, tclass, flow_label);
  }
  std::vector<ibv_wc> wait(Endpoint& ep, std::size_t n) { return wait_completions(net, ep, n); }
};

TEST(Ipv6Path, NoFlowLabelInTheGrhGivesLabelZeroAndTheQpnPort) {
  V6Pair p;
  p.connect(QpOptions{});
  std::vector<std::byte> src(5000, std::byte{7}), dst(5000);
  auto* sm = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*p.b.engine, p.b.pd, dst, kAll);
  ibv_sge g = sge(src.data(), 5000, sm);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  ASSERT_EQ(p.wait(p.a, 1).size(), 1u);
  ASSERT_FALSE(p.from_a.empty());
  const std::uint16_t sport = sport_from_flow_label(flow_label_from_qpns(p.a.qp->qpn(), p.b.qp->qpn()));
  for (const Packet& f : p.from_a) {
    EXPECT_EQ(f.ip_version, IpVersion::V6);
    EXPECT_EQ(f.ipv6.src, kA.v6);
    EXPECT_EQ(f.ipv6.dst, kB.v6);
    // As rxe (whose IPv6 header always has label 0) and ConnectX (the GRH's label, here 0).
    EXPECT_EQ(f.ipv6.flow_label, 0u);
    EXPECT_EQ(f.udp_src_port, sport);
    EXPECT_EQ(f.ipv6.hop_limit, 64);
    EXPECT_EQ(f.icrc_status, IcrcStatus::Ok);
  }
  // The responder's ACKs leave from its own QP: the same port, the label being symmetric.
  ASSERT_FALSE(p.from_b.empty());
  EXPECT_EQ(p.from_b[0].udp_src_port, sport);
}

TEST(Ipv6Path, TheGrhsTrafficClassAndFlowLabelReachTheHeader) {
  rdma::EngineConfig cfg;
  cfg.tuning.data_ecn = Ecn::Ect0;
  V6Pair p({}, cfg);
  p.connect(QpOptions{}, 0x60, 0x12345);  // DSCP 24
  std::vector<std::byte> src(100, std::byte{7}), dst(100);
  auto* sm = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*p.b.engine, p.b.pd, dst, kAll);
  ibv_sge g = sge(src.data(), 100, sm);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  ASSERT_EQ(p.wait(p.a, 1).size(), 1u);
  ASSERT_FALSE(p.from_a.empty());
  const Packet& f = p.from_a.front();
  EXPECT_EQ(f.ipv6.flow_label, 0x12345u);
  EXPECT_EQ(f.ipv6.traffic_class, 0x60 | static_cast<std::uint8_t>(Ecn::Ect0));
  EXPECT_EQ(f.udp_src_port, sport_from_flow_label(0x12345));
  // The ICRC masks the whole traffic class and flow label: it still checks out.
  EXPECT_EQ(f.icrc_status, IcrcStatus::Ok);
}

TEST(Ipv6Path, EveryVerbLandsByteExact) {
  V6Pair p;
  p.connect(QpOptions{});
  std::vector<std::byte> src(70000), remote(70000), back(70000), recv(70000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 3);
  auto* sm = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*p.a.engine, p.a.pd, back, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*p.b.engine, p.b.pd, remote, kAll);
  auto* vm = reg(*p.b.engine, p.b.pd, recv, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(src.data(), 70000, sm);
  ibv_sge r = sge(back.data(), 70000, bm);
  ibv_sge v = sge(recv.data(), 70000, vm);
  ASSERT_EQ(post_recv(p.b, 9, &v, 1), 0);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_READ, 2, &r, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
  ASSERT_EQ(post(p.a, IBV_WR_SEND, 3, &g, 1), 0);
  const auto wcs = p.wait(p.a, 3);
  ASSERT_EQ(wcs.size(), 3u);
  for (const ibv_wc& w : wcs) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
  const auto rwcs = p.wait(p.b, 1);
  ASSERT_EQ(rwcs.size(), 1u);
  EXPECT_EQ(rwcs[0].byte_len, 70000u);
  EXPECT_EQ(remote, src);
  EXPECT_EQ(back, src);
  EXPECT_EQ(recv, src);
}

TEST(Ipv6Path, UdDatagramCarriesTheIpv6HeaderAsItsGrh) {
  V6Pair p;
  p.connect_ud();
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.grh.dgid = gid_of(*p.b.engine);
  auto h = p.a.engine->create_ah(p.a.pd, ah);
  ASSERT_TRUE(h.ok()) << h.error().message;
  std::vector<std::byte> src(500, std::byte{9}), rbuf(40 + 1024);
  auto* sm = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*p.b.engine, p.b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rg = sge(rbuf.data(), static_cast<std::uint32_t>(rbuf.size()), rm);
  ASSERT_EQ(post_recv(p.b, 1, &rg, 1), 0);
  ibv_sge g = sge(src.data(), 500, sm);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &g;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = &(*h)->base;
  wr.wr.ud.remote_qpn = p.b.qp->qpn();
  wr.wr.ud.remote_qkey = 0x11111111;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.a.engine->post_send(p.a.qp, &wr, &bad), 0);
  const auto rw = p.wait(p.b, 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].byte_len, 540u);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_GRH);
  // The whole 40-byte IPv6 header: version 6, then the source and destination GIDs.
  EXPECT_EQ(std::to_integer<int>(rbuf[0]) >> 4, 6);
  EXPECT_EQ(std::memcmp(rbuf.data() + 8, kA.v6.data(), 16), 0);
  EXPECT_EQ(std::memcmp(rbuf.data() + 24, kB.v6.data(), 16), 0);
  EXPECT_EQ(rbuf[40], std::byte{9});
  ASSERT_FALSE(p.from_a.empty());
  EXPECT_EQ(p.from_a.front().ip_version, IpVersion::V6);
}

// Sends one 100-byte datagram from a's UD QP through an AH to b's.
int send_ud(Endpoint& a, const Endpoint& b, rdma::AddressHandle* ah, std::uint64_t wr_id, ibv_sge* g) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = g;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = &ah->base;
  wr.wr.ud.remote_qpn = b.qp->qpn();
  wr.wr.ud.remote_qkey = 0x11111111;
  ibv_send_wr* bad = nullptr;
  return a.engine->post_send(a.qp, &wr, &bad);
}

// A UD QP has no path of its own: each datagram takes the traffic class (DSCP; the ECN bits stay
// the QP's) and the IPv6 flow label of the AH it is sent through, as a GRH would carry them.
TEST(Ipv6Path, UdDatagramsCarryTheirAddressHandlesTrafficClassAndFlowLabel) {
  rdma::EngineConfig cfg;
  cfg.tuning.data_ecn = Ecn::Ect0;
  V6Pair p({}, cfg);
  p.connect_ud();
  std::vector<rdma::AddressHandle*> ahs;
  const std::pair<std::uint8_t, std::uint32_t> grhs[] = {{0x60, 0xABCDE}, {0xB8 | 3, 0x1}, {0, 0}};
  for (const auto& [tc, label] : grhs) {
    ibv_ah_attr ah{};
    ah.is_global = 1;
    ah.grh.dgid = gid_of(*p.b.engine);
    ah.grh.traffic_class = tc;
    ah.grh.flow_label = label | 0xF00000;  // bits above the 20-bit label are not the label's
    auto h = p.a.engine->create_ah(p.a.pd, ah);
    ASSERT_TRUE(h.ok()) << h.error().message;
    ahs.push_back(*h);
  }
  std::vector<std::byte> src(100, std::byte{9}), rbuf(3 * (40 + 100));
  auto* sm = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*p.b.engine, p.b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 3; ++i) {
    ibv_sge rg = sge(rbuf.data() + i * 140, 140, rm);
    ASSERT_EQ(post_recv(p.b, static_cast<std::uint64_t>(i), &rg, 1), 0);
  }
  ibv_sge g = sge(src.data(), 100, sm);
  for (std::size_t i = 0; i < ahs.size(); ++i) ASSERT_EQ(send_ud(p.a, p.b, ahs[i], i, &g), 0);
  ASSERT_EQ(p.wait(p.b, 3).size(), 3u);
  std::vector<const Packet*> sent;
  for (const Packet& f : p.from_a)
    if (f.opcode() == raw(Opcode::UdSendOnly)) sent.push_back(&f);
  ASSERT_EQ(sent.size(), 3u);
  const std::uint8_t ect0 = static_cast<std::uint8_t>(Ecn::Ect0);
  EXPECT_EQ(sent[0]->ipv6.traffic_class, 0x60 | ect0);
  EXPECT_EQ(sent[0]->ipv6.flow_label, 0xABCDEu);
  EXPECT_EQ(sent[1]->ipv6.traffic_class, 0xB8 | ect0);  // the AH's ECN bits give way to the QP's
  EXPECT_EQ(sent[1]->ipv6.flow_label, 0x1u);
  EXPECT_EQ(sent[2]->ipv6.traffic_class, ect0);
  EXPECT_EQ(sent[2]->ipv6.flow_label, 0u);
  for (const Packet* f : sent) EXPECT_EQ(f->icrc_status, IcrcStatus::Ok);
  // The receiver's GRH (the IPv6 header) shows them too: version 6, traffic class, flow label.
  EXPECT_EQ(std::to_integer<int>(rbuf[0]), 0x60 | (0x60 >> 4));
  EXPECT_EQ(std::to_integer<int>(rbuf[1]), ((0x60 | ect0) & 0xF) << 4 | 0xA);
}

TEST(UdAddressHandle, Ipv4DatagramsCarryTheAhsTrafficClassAsTos) {
  SimNetwork net{7};
  rdma::EngineConfig cfg;
  cfg.tuning.data_ecn = Ecn::Ect1;
  net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
  net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
  net.connect("a", "b", {}, {});
  std::vector<Packet> from_a;
  net.on_transmit = [&](const std::string& from, std::span<const std::byte> fr, Nanos) {
    Packet pk;
    if (from == "a" && parse_frame(fr, {}, pk) == ParseError::None) from_a.push_back(pk);
  };
  QpOptions o;
  o.type = IBV_QPT_UD;
  o.qkey = 0x11111111;
  Endpoint a = make_endpoint(net.host("a"), o);
  Endpoint b = make_endpoint(net.host("b"), o);
  connect_pair(a, b, o);
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.grh.dgid = gid_of(*b.engine);
  ah.grh.traffic_class = 0x88;  // DSCP 34
  ah.grh.flow_label = 0x777;    // IPv4 has no flow label: nothing to carry
  auto h = a.engine->create_ah(a.pd, ah);
  ASSERT_TRUE(h.ok()) << h.error().message;
  std::vector<std::byte> src(100, std::byte{5}), rbuf(140);
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*b.engine, b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rg = sge(rbuf.data(), 140, rm);
  ASSERT_EQ(post_recv(b, 1, &rg, 1), 0);
  ibv_sge g = sge(src.data(), 100, sm);
  ASSERT_EQ(send_ud(a, b, *h, 1, &g), 0);
  std::vector<ibv_wc> got;
  net.run_until([&] {
    auto more = drain(b);
    got.insert(got.end(), more.begin(), more.end());
    return !got.empty();
  }, net.now() + 10 * kSecond);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(from_a.size(), 1u);
  EXPECT_EQ(from_a[0].ip_version, IpVersion::V4);
  EXPECT_EQ(from_a[0].ipv4.tos, 0x88 | static_cast<std::uint8_t>(Ecn::Ect1));
  EXPECT_EQ(from_a[0].icrc_status, IcrcStatus::Ok);
}

TEST(Ipv6Path, CeMarksComeBackAsIpv6Cnps) {
  rdma::EngineConfig cfg;
  cfg.tuning.congestion.enabled = true;
  cfg.tuning.congestion.rp = cc::paper_params(10e9);
  LinkFaults mark_all;
  mark_all.ce_mark = 1.0;
  V6Pair p(mark_all, cfg);
  QpOptions o;
  o.mtu = IBV_MTU_4096;
  p.connect(o);
  std::vector<std::byte> src(1 << 20), dst(1 << 20);
  auto* sm = reg(*p.a.engine, p.a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*p.b.engine, p.b.pd, dst, kAll);
  ibv_sge g = sge(src.data(), 1 << 20, sm);
  ASSERT_EQ(post(p.a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
  ASSERT_EQ(p.wait(p.a, 1).size(), 1u);
  std::size_t cnps = 0;
  for (const Packet& f : p.from_b) {
    if (f.opcode() != raw(Opcode::Cnp)) continue;
    ++cnps;
    EXPECT_EQ(f.ip_version, IpVersion::V6);
    EXPECT_EQ(f.ipv6.src, kB.v6);
    EXPECT_EQ(f.ipv6.dst, kA.v6);
    EXPECT_EQ(f.dest_qp(), p.a.qp->qpn());
    EXPECT_EQ(f.icrc_status, IcrcStatus::Ok);
  }
  EXPECT_GT(cnps, 0u);
  EXPECT_EQ(p.a.qp->counters().get(rdma::Counter::CnpReceived), cnps);
}

TEST(Ipv6Path, APeerOfTheOtherFamilyIsRefused) {
  SimNetwork net{5};
  net.add_host("a", {2, 0, 0, 0, 0, 1}, kA);
  net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
  QpOptions o;
  Endpoint a = make_endpoint(net.host("a"), o);
  Endpoint b = make_endpoint(net.host("b"), o);
  rdma::PeerPath path;
  path.dest_qpn = b.qp->qpn();
  path.dgid = gid_of(*b.engine);
  ASSERT_TRUE(a.engine->modify_qp(a.qp, rdma::init_transition(o.type, o.access, o.qkey).attr,
                                  rdma::init_transition(o.type, o.access, o.qkey).mask).ok());
  const rdma::QpTransition rtr = rdma::rtr_transition(o.type, path);
  const Status s = a.engine->modify_qp(a.qp, rtr.attr, rtr.mask);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_NE(s.error().message.find("not of the local address family"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace roce::test::ipv6_path_test
