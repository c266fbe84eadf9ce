// The requester's frames from its per-QP request template (TransportTuning::request_template,
// protocol/request_template.hpp) are the builder's, byte for byte: the same traffic run twice,
// template on and off, puts the same frames on the wire. Every request opcode the requester
// sends, RC and UC, IPv4 and IPv6, payloads with every pad, a payload spanning segments, PSNs
// across the 2^24 wrap, resends after losses, and a path changed mid-connection (SQD with a new
// address vector: traffic class, flow label and so the UDP source port), after which the frames
// carry the new path (the template was rebuilt, not reused).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "protocol/parser.hpp"
#include "tests/support/hex.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::request_template_frames_test {
namespace {

using namespace roce::proto;

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct Run {
  std::vector<std::vector<std::byte>> frames;  // every frame host a put on its link, in order
  std::size_t requests_after_change = 0;
  bool new_path_seen = true;
  std::size_t resent = 0;  // request frames whose PSN went out before
  bool wrapped = false;    // PSN 0xFFFFFF and then 0 went out
  bool template_ready = false;  // at the end: the frames came from the template
};

// The buffers of both runs: the same addresses (in the RETHs) each time.
struct Buffers {
  std::vector<std::byte> src = std::vector<std::byte>(20000), remote = std::vector<std::byte>(20000),
                         back = std::vector<std::byte>(20000), recv = std::vector<std::byte>(20000),
                         atomic = std::vector<std::byte>(8);
  void reset() {
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 13 + 5);
    for (auto* v : {&remote, &back, &recv, &atomic}) std::fill(v->begin(), v->end(), std::byte{0});
  }
};

// One scenario, the template on or off. `change_path`: RC only, a new AV through SQD halfway.
Run run(Buffers& bufs, bool templated, bool ipv6, ibv_qp_type type, bool change_path) {
  rdma::EngineConfig cfg;
  cfg.tuning.request_template = templated;
  SimNetwork net(41);
  const rdma::IpAddress ia = ipv6 ? rdma::IpAddress::ipv6({0xfd, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
                                  : rdma::IpAddress::ipv4({10, 12, 0, 1});
  const rdma::IpAddress ib = ipv6 ? rdma::IpAddress::ipv6({0xfd, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
                                  : rdma::IpAddress::ipv4({10, 12, 0, 2});
  net.add_host("a", {2, 0, 0, 0, 0x12, 1}, ia, cfg);
  net.add_host("b", {2, 0, 0, 0, 0x12, 2}, ib, cfg);
  LinkFaults lossy;
  lossy.loss = type == IBV_QPT_RC ? 0.1 : 0;  // resends: the same PSNs again, AckReq as they ask
  net.connect("a", "b", lossy, {});
  Run out;
  bool changed = false;
  std::set<std::uint32_t> psns;
  net.on_transmit = [&](const std::string& from, std::span<const std::byte> f, Nanos) {
    if (from != "a") return;
    out.frames.emplace_back(f.begin(), f.end());
    Packet p;
    if (parse_frame(f, {}, p) != ParseError::None || !p.info->is_request) return;
    if (!psns.insert(p.psn()).second) ++out.resent;
    if (p.psn() == 0 && psns.count(0xFFFFFF)) out.wrapped = true;
    if (!changed) return;
    ++out.requests_after_change;
    const std::uint8_t tclass = p.ip_version == IpVersion::V4 ? p.ipv4.tos : p.ipv6.traffic_class;
    if ((tclass & ~3u) != 0xB8) out.new_path_seen = false;
  };
  QpOptions o;
  o.type = type;
  o.sq_psn = 0xFFFFF0;  // the PSNs wrap within the first message
  o.access = type == IBV_QPT_UC ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : kAll;
  Endpoint a = make_endpoint(net.host("a"), o);
  Endpoint b = make_endpoint(net.host("b"), o);
  connect_pair(a, b, o);

  bufs.reset();
  // Plain references, not a structured binding: clang 14 (the sanitizer build) refuses a
  // binding captured by the lambdas below.
  std::vector<std::byte>& src = bufs.src;
  std::vector<std::byte>& remote = bufs.remote;
  std::vector<std::byte>& back = bufs.back;
  std::vector<std::byte>& recv = bufs.recv;
  std::vector<std::byte>& atomic = bufs.atomic;
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* bm = reg(*a.engine, a.pd, back, IBV_ACCESS_LOCAL_WRITE);
  auto* am = reg(*a.engine, a.pd, atomic, IBV_ACCESS_LOCAL_WRITE);
  auto* rm = reg(*b.engine, b.pd, remote, o.access);
  auto* vm = reg(*b.engine, b.pd, recv, IBV_ACCESS_LOCAL_WRITE);
  const auto raddr = reinterpret_cast<std::uint64_t>(remote.data());
  std::size_t posted = 0;
  auto write = [&](ibv_wr_opcode op, std::uint32_t offset, std::uint32_t len, unsigned flags = IBV_SEND_SIGNALED) {
    ibv_sge g = sge(src.data() + offset, len, sm);
    ibv_send_wr wr{};
    wr.wr_id = ++posted;
    wr.opcode = op;
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = flags;
    wr.imm_data = 0x12345678u + static_cast<std::uint32_t>(posted);
    wr.wr.rdma.remote_addr = raddr + offset;
    wr.wr.rdma.rkey = rm->rkey();
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(a.engine->post_send(a.qp, &wr, &bad), 0);
  };
  auto traffic = [&] {
    for (int i = 0; i < 6; ++i) {
      ibv_sge v = sge(recv.data(), static_cast<std::uint32_t>(recv.size()), vm);
      ASSERT_EQ(post_recv(b, 100 + i, &v, 1), 0);
    }
    write(IBV_WR_RDMA_WRITE, 0, 5000);  // FIRST, MIDDLE..., LAST across the PSN wrap
    for (std::uint32_t len : {61u, 62u, 63u, 64u, 1u, 0u}) write(IBV_WR_RDMA_WRITE, 100, len);  // ONLY, every pad
    write(IBV_WR_RDMA_WRITE_WITH_IMM, 7, 3001);  // ... LAST with immediate
    write(IBV_WR_RDMA_WRITE_WITH_IMM, 9, 30);    // ONLY with immediate
    write(IBV_WR_SEND, 3, 2050, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);  // SE on the LAST
    write(IBV_WR_SEND_WITH_IMM, 1, 1023);
    write(IBV_WR_SEND, 0, 0);
    // A payload in three segments: copied, then sealed.
    ibv_sge gs[3] = {sge(src.data(), 10, sm), sge(src.data() + 500, 21, sm), sge(src.data() + 900, 1500, sm)};
    ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, ++posted, gs, 3, raddr + 4000, rm->rkey()), 0);
    if (type == IBV_QPT_RC) {
      ibv_sge r = sge(back.data(), 4500, bm);
      ASSERT_EQ(post(a, IBV_WR_RDMA_READ, ++posted, &r, 1, raddr, rm->rkey()), 0);
      ibv_sge at = sge(atomic.data(), 8, am);
      ibv_send_wr wr{};
      wr.wr_id = ++posted;
      wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
      wr.sg_list = &at;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.atomic.remote_addr = raddr + 16;
      wr.wr.atomic.rkey = rm->rkey();
      wr.wr.atomic.compare_add = 5;
      ibv_send_wr* bad = nullptr;
      ASSERT_EQ(a.engine->post_send(a.qp, &wr, &bad), 0);
    }
    std::size_t done = 0;
    net.run_until(
        [&] {
          for (const ibv_wc& wc : drain(a)) {
            EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
            ++done;
          }
          return done == posted;
        },
        net.now() + 10 * kSecond);
    EXPECT_EQ(done, posted);
    posted = 0;
  };
  traffic();
  traffic();
  if (change_path) {
    // Mid-connection: SQD, a new address vector (DSCP 46, a flow label and so another UDP
    // source port), back to RTS.
    ibv_qp_attr sqd{};
    sqd.qp_state = IBV_QPS_SQD;
    EXPECT_TRUE(a.engine->modify_qp(a.qp, sqd, IBV_QP_STATE).ok());
    ibv_qp_attr av{};
    av.qp_state = IBV_QPS_SQD;
    av.ah_attr.is_global = 1;
    av.ah_attr.grh.dgid = gid_of(*b.engine);
    av.ah_attr.grh.traffic_class = 0xB8;
    av.ah_attr.grh.flow_label = 0x5A5A5;
    av.ah_attr.port_num = 1;
    const auto s = a.engine->modify_qp(a.qp, av, IBV_QP_STATE | IBV_QP_AV);
    EXPECT_TRUE(s.ok()) << s.error().message;
    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    EXPECT_TRUE(a.engine->modify_qp(a.qp, rts, IBV_QP_STATE).ok());
    changed = true;
    traffic();
  }
  out.template_ready = a.qp->context().request_template.ready();
  return out;
}

void expect_same_frames(bool ipv6, ibv_qp_type type, bool change_path) {
  Buffers bufs;
  const Run with = run(bufs, true, ipv6, type, change_path);
  const Run without = run(bufs, false, ipv6, type, change_path);
  ASSERT_TRUE(with.template_ready);
  ASSERT_FALSE(without.template_ready);
  ASSERT_GT(with.frames.size(), 40u);
  EXPECT_TRUE(with.wrapped);
  if (type == IBV_QPT_RC) {
    EXPECT_GT(with.resent, 0u);
  }
  ASSERT_EQ(with.frames.size(), without.frames.size());
  for (std::size_t i = 0; i < with.frames.size(); ++i)
    ASSERT_EQ(with.frames[i], without.frames[i])
        << "frame " << i << " of " << with.frames.size() << "\ntemplate " << to_hex(with.frames[i].data(), with.frames[i].size())
        << "\nbuilder  " << to_hex(without.frames[i].data(), without.frames[i].size());
  if (change_path) {
    EXPECT_GT(with.requests_after_change, 10u);
    EXPECT_TRUE(with.new_path_seen);
  }
}

TEST(RequestTemplateFrames, RcIpv4AreTheBuildersBytes) { expect_same_frames(false, IBV_QPT_RC, false); }
TEST(RequestTemplateFrames, RcIpv6AreTheBuildersBytes) { expect_same_frames(true, IBV_QPT_RC, false); }
TEST(RequestTemplateFrames, UcIpv4AreTheBuildersBytes) { expect_same_frames(false, IBV_QPT_UC, false); }
TEST(RequestTemplateFrames, APathChangedInSqdIsFollowedIpv4) { expect_same_frames(false, IBV_QPT_RC, true); }
TEST(RequestTemplateFrames, APathChangedInSqdIsFollowedIpv6) { expect_same_frames(true, IBV_QPT_RC, true); }

}  // namespace
}  // namespace roce::test::request_template_frames_test
