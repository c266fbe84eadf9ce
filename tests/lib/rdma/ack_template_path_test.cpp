// The responder's prebuilt ACK (protocol/ack_template.hpp, QueuePair::ack_frame) in a running
// pair: the same scenario (PSNs wrapping, a lost request and its NAK sequence error, an RNR
// NAK, READ and atomic answers between the ACKs, a remote access error) sends the same bytes
// with the template as without it, over IPv4 and IPv6; and a QP brought up again on another
// path (traffic class, destination QP, MTU) answers from the new path, not the old template.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "tests/support/hex.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"
#include "tests/support/write_stream.hpp"

namespace roce::test::ack_template_path_test {
namespace {

using namespace roce::proto;

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

rdma::IpAddress address(IpVersion v, std::uint8_t host) {
  if (v == IpVersion::V4) return rdma::IpAddress::ipv4({10, 12, 0, host});
  return rdma::IpAddress::ipv6({0xfd, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, host});
}

// The builder's ACK on the QP's path: what Responder::build_next sends without a template.
std::vector<std::byte> builder_ack(const FrameSpec& path, const Packet& ack) {
  FrameSpec spec = path;
  spec.bth.opcode = raw(Opcode::RcAck);
  spec.bth.psn.set(ack.psn());
  spec.ext.aeth = ack.ext.aeth;
  std::vector<std::byte> out(256);
  const FrameLayout l = build_frame(spec, {}, out, CrcBackend::Portable);
  EXPECT_TRUE(l.ok());
  out.resize(l.length);
  return out;
}

struct Sent {
  std::vector<std::vector<std::byte>> frames;  // every frame b (the responder) put on the link
  std::vector<Syndrome> ack_syndromes;         // of its ACK frames, in order
};

// a writes, sends, reads and adds at b; the fifth frame a sends is lost, b has no receive for
// the first SEND until later, and the last WRITE names a key b does not know.
Sent run_scenario(IpVersion v, bool ack_template) {
  rdma::EngineConfig cfg;
  cfg.tuning.ack_template = ack_template;
  SimNetwork net{37};
  net.add_host("a", {2, 0, 0, 0, 0, 1}, address(v, 1), cfg);
  net.add_host("b", {2, 0, 0, 0, 0, 2}, address(v, 2), cfg);
  LinkFaults a_to_b;
  a_to_b.drop_if = [](std::span<const std::byte>, std::uint64_t index) { return index == 4; };
  net.connect("a", "b", a_to_b, {});
  Sent sent;
  net.on_transmit = [&](const std::string& from, std::span<const std::byte> fr, Nanos) {
    if (from != "b") return;
    sent.frames.emplace_back(fr.begin(), fr.end());
    Packet p;
    if (parse_frame(fr, {}, p) == ParseError::None && p.bth.opcode == raw(Opcode::RcAck))
      sent.ack_syndromes.push_back(Syndrome{p.ext.aeth.syndrome});
  };
  QpOptions o;
  o.sq_psn = 0xFFFFF8;  // a's requests cross the 24-bit wrap
  o.min_rnr_timer = 1;
  Endpoint a = make_endpoint(net.host("a"), o);
  Endpoint b = make_endpoint(net.host("b"), o);
  connect_pair(a, b, o);
  EXPECT_EQ(b.qp->ack_frame() != nullptr && b.qp->ack_frame()->valid(), ack_template);

  std::vector<std::byte> src(4096, std::byte{5}), dst(4096), back(64), recv(64), atom(8);
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*a.engine, a.pd, back, IBV_ACCESS_LOCAL_WRITE);
  auto* am = reg(*a.engine, a.pd, atom, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*b.engine, b.pd, dst, kAll);
  auto* rm = reg(*b.engine, b.pd, recv, IBV_ACCESS_LOCAL_WRITE);
  const auto remote = reinterpret_cast<std::uint64_t>(dst.data());
  std::uint64_t id = 0;
  auto wait = [&](Endpoint& ep, std::size_t n) { return wait_completions(net, ep, n); };
  for (int i = 0; i < 12; ++i) {  // 64 B WRITEs, one lost: NAK sequence error, then ACKs
    ibv_sge g = sge(src.data(), 64, sm);
    EXPECT_EQ(post(a, IBV_WR_RDMA_WRITE, ++id, &g, 1, remote + 64 * i, dm->rkey()), 0);
  }
  for (const ibv_wc& w : wait(a, 12)) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
  ibv_sge s = sge(src.data(), 64, sm);  // no receive posted yet: RNR NAK until there is one
  EXPECT_EQ(post(a, IBV_WR_SEND, ++id, &s, 1), 0);
  net.run_until([] { return false; }, net.now() + 50 * kMicro);
  ibv_sge r = sge(recv.data(), 64, rm);
  EXPECT_EQ(post_recv(b, 1, &r, 1), 0);
  ibv_sge rd = sge(back.data(), 64, bm);
  EXPECT_EQ(post(a, IBV_WR_RDMA_READ, ++id, &rd, 1, remote, dm->rkey()), 0);
  ibv_send_wr fa{};
  ibv_sge ag = sge(atom.data(), 8, am);
  fa.wr_id = ++id;
  fa.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  fa.sg_list = &ag;
  fa.num_sge = 1;
  fa.send_flags = IBV_SEND_SIGNALED;
  fa.wr.atomic.remote_addr = remote + 1024;
  fa.wr.atomic.rkey = dm->rkey();
  fa.wr.atomic.compare_add = 3;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(a.engine->post_send(a.qp, &fa, &bad), 0);
  ibv_sge g = sge(src.data(), 2000, sm);  // two packets at the 1 KiB MTU
  EXPECT_EQ(post(a, IBV_WR_RDMA_WRITE, ++id, &g, 1, remote + 2048, dm->rkey()), 0);
  for (const ibv_wc& w : wait(a, 4)) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << describe(w);
  ibv_sge last = sge(src.data(), 64, sm);  // a key b never issued: NAK remote access error
  EXPECT_EQ(post(a, IBV_WR_RDMA_WRITE, ++id, &last, 1, remote, dm->rkey() ^ 0x100), 0);
  const auto end = wait(a, 1);
  EXPECT_EQ(end.size(), 1u);
  if (!end.empty()) {
    EXPECT_EQ(end[0].status, IBV_WC_REM_ACCESS_ERR) << describe(end[0]);
  }
  net.run_idle(net.now() + kSecond);
  return sent;
}

TEST(AckTemplatePath, AScenarioSendsTheSameBytesWithTheTemplateAsWithout) {
  for (const IpVersion v : {IpVersion::V4, IpVersion::V6}) {
    const Sent with = run_scenario(v, true);
    const Sent without = run_scenario(v, false);
    // Every kind of answer the template writes was in it.
    auto saw = [&](Syndrome s) {
      for (const Syndrome x : with.ack_syndromes)
        if (x.type() == s.type() && (s.is_ack() || x.value() == s.value())) return true;
      return false;
    };
    EXPECT_TRUE(saw(Syndrome::ack()));
    EXPECT_TRUE(saw(Syndrome::nak(NakCode::PsnSequenceError)));
    EXPECT_TRUE(saw(Syndrome::rnr_nak(1)));
    EXPECT_TRUE(saw(Syndrome::nak(NakCode::RemoteAccessError)));
    ASSERT_EQ(with.frames.size(), without.frames.size()) << "IPv" << static_cast<int>(v);
    for (std::size_t i = 0; i < with.frames.size(); ++i)
      EXPECT_EQ(to_hex(with.frames[i]), to_hex(without.frames[i])) << "IPv" << static_cast<int>(v) << " frame " << i;
  }
}

void to_reset(Endpoint& ep) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RESET;
  const auto s = ep.engine->modify_qp(ep.qp, attr, IBV_QP_STATE);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

void bring_up_on(Endpoint& me, const Endpoint& peer, const QpOptions& o, std::uint8_t tclass) {
  rdma::PeerPath path;
  path.mtu = o.mtu;
  path.dest_qpn = peer.qp->qpn();
  path.dgid = gid_of(*peer.engine);
  path.traffic_class = tclass;
  for (const rdma::QpTransition& t : {rdma::init_transition(o.type, o.access, o.qkey), rdma::rtr_transition(o.type, path),
                                      rdma::rts_transition(o.type, rdma::SendSide{0, o.timeout, o.retry_cnt, o.rnr_retry, 4})}) {
    const auto s = me.engine->modify_qp(me.qp, t.attr, t.mask);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
}

TEST(AckTemplatePath, AQpBroughtUpAgainOnAnotherPathAcknowledgesFromTheNewPath) {
  for (const IpVersion v : {IpVersion::V4, IpVersion::V6}) {
    SimNetwork net{38};
    net.add_host("a", {2, 0, 0, 0, 0, 1}, address(v, 1));
    net.add_host("b", {2, 0, 0, 0, 0, 2}, address(v, 2));
    net.connect("a", "b", {}, {});
    std::vector<Packet> acks;
    std::vector<std::vector<std::byte>> ack_frames;
    net.on_transmit = [&](const std::string& from, std::span<const std::byte> fr, Nanos) {
      Packet p;
      if (from != "b" || parse_frame(fr, {}, p) != ParseError::None || p.bth.opcode != raw(Opcode::RcAck)) return;
      acks.push_back(p);
      ack_frames.emplace_back(fr.begin(), fr.end());
    };
    QpOptions o;
    Endpoint a1 = make_endpoint(net.host("a"), o), a2 = make_endpoint(net.host("a"), o);
    Endpoint b = make_endpoint(net.host("b"), o);
    std::vector<std::byte> src(64, std::byte{1}), dst(64);
    auto* dm = reg(*b.engine, b.pd, dst, kAll);
    auto write_and_check = [&](Endpoint& a, std::uint8_t tclass) {
      auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
      ibv_sge g = sge(src.data(), 64, sm);
      acks.clear();
      ack_frames.clear();
      ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey()), 0);
      ASSERT_TRUE(net.run_until([&] { return !drain(a).empty(); }, net.now() + kSecond));
      ASSERT_FALSE(acks.empty());
      const Packet& ack = acks.back();
      EXPECT_EQ(ack.bth.dest_qp.get(), a.qp->qpn());
      const std::uint8_t tos = v == IpVersion::V4 ? ack.ipv4.tos : ack.ipv6.traffic_class;
      EXPECT_EQ(tos, tclass | static_cast<std::uint8_t>(Ecn::Ect0));
      EXPECT_EQ(to_hex(ack_frames.back()), to_hex(builder_ack(b.qp->context().path, ack)));
    };
    bring_up_on(a1, b, o, 0x60);
    bring_up_on(b, a1, o, 0x60);
    write_and_check(a1, 0x60);
    // b again, towards another QP, with another DSCP and MTU: QP modify rebuilds the ACK.
    to_reset(b);
    o.mtu = IBV_MTU_4096;
    bring_up_on(a2, b, o, 0xB8);
    bring_up_on(b, a2, o, 0xB8);
    write_and_check(a2, 0xB8);
  }
}

}  // namespace
}  // namespace roce::test::ack_template_path_test
