// The verbs surface: state machine rules, immediate post errors, local protection errors,
// memory region rules.
#include <gtest/gtest.h>

#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::qp_verbs_test {
namespace {

TEST(QpStateMachine, TransitionsNeedTheirAttributes) {
  EXPECT_TRUE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Reset, rdma::QpState::Init,
                               IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS).ok);
  const auto missing = rdma::check_transition(IBV_QPT_RC, rdma::QpState::Reset, rdma::QpState::Init, IBV_QP_STATE | IBV_QP_PORT);
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.reason.find("IBV_QP_PKEY_INDEX"), std::string::npos) << missing.reason;
  EXPECT_FALSE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Init, rdma::QpState::Rts, IBV_QP_STATE).ok);
  EXPECT_FALSE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Rtr, rdma::QpState::Rts, IBV_QP_STATE | IBV_QP_SQ_PSN).ok);
  EXPECT_TRUE(rdma::check_transition(IBV_QPT_UC, rdma::QpState::Rtr, rdma::QpState::Rts, IBV_QP_STATE | IBV_QP_SQ_PSN).ok);
  EXPECT_TRUE(rdma::check_transition(IBV_QPT_UD, rdma::QpState::Init, rdma::QpState::Rtr, IBV_QP_STATE).ok);
  EXPECT_FALSE(rdma::check_transition(IBV_QPT_UD, rdma::QpState::Reset, rdma::QpState::Init,
                                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS).ok);
  EXPECT_TRUE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Rts, rdma::QpState::Err, IBV_QP_STATE).ok);
  EXPECT_TRUE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Err, rdma::QpState::Reset, IBV_QP_STATE).ok);
  EXPECT_FALSE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Err, rdma::QpState::Rts, IBV_QP_STATE).ok);
  EXPECT_TRUE(rdma::check_transition(IBV_QPT_RC, rdma::QpState::Rts, rdma::QpState::Sqd, IBV_QP_STATE).ok);
}

struct Fixture : ::testing::Test {
  SimNetwork net{5};
  Endpoint a, b;
  QpOptions o;
  void SetUp() override {
    net.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1});
    net.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2});
    net.connect("a", "b", {}, {});
    a = make_endpoint(net.host("a"), o);
    b = make_endpoint(net.host("b"), o);
  }
};

TEST_F(Fixture, PostSendBeforeRtsIsRefused) {
  std::vector<std::byte> buf(8);
  auto* m = reg(*a.engine, a.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf.data(), 8, m);
  EXPECT_EQ(post(a, IBV_WR_SEND, 1, &g, 1), EINVAL);
}

TEST_F(Fixture, ModifyReportsWhatIsWrong) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  const Status s = a.engine->modify_qp(a.qp, attr, IBV_QP_STATE);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("illegal transition RESET->RTR"), std::string::npos) << s.error().message;
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 2;
  const Status p = a.engine->modify_qp(a.qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(a.qp->state(), rdma::QpState::Reset);
}

TEST_F(Fixture, UnknownPeerMacFailsRtrCleanly) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  ASSERT_TRUE(a.engine->modify_qp(a.qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS).ok());
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4({10, 9, 9, 9}));
  const Status s = a.engine->modify_qp(a.qp, attr,
                                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, EHOSTUNREACH);
  EXPECT_EQ(a.qp->state(), rdma::QpState::Init);
}

TEST_F(Fixture, QueueFullAndTooManySgesAreImmediateErrors) {
  connect_pair(a, b, o);
  std::vector<std::byte> buf(8);
  auto* m = reg(*a.engine, a.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  std::vector<ibv_sge> many(o.sge + 1, sge(buf.data(), 1, m));
  EXPECT_EQ(post(a, IBV_WR_SEND, 1, many.data(), static_cast<int>(many.size())), EINVAL);
  ibv_sge g = sge(buf.data(), 8, m);
  for (std::uint32_t i = 0; i < o.depth; ++i) ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, i, &g, 1, 0, 0, 0), 0);
  EXPECT_EQ(post(a, IBV_WR_RDMA_WRITE, 999, &g, 1, 0, 0, 0), ENOMEM);
}

TEST_F(Fixture, BadLkeyCompletesWithLocalProtectionErrorAndErrorsTheQp) {
  connect_pair(a, b, o);
  std::vector<std::byte> buf(8);
  ibv_sge g{reinterpret_cast<std::uint64_t>(buf.data()), 8, 0xDEAD00};
  ASSERT_EQ(post(a, IBV_WR_SEND, 1, &g, 1), 0);
  net.run_idle(kSecond);
  auto wcs = drain(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(a.qp->state(), rdma::QpState::Err);
}

TEST_F(Fixture, ReadIntoRegionWithoutLocalWriteIsLocalProtectionError) {
  connect_pair(a, b, o);
  std::vector<std::byte> ro(64), remote(64);
  auto* rom = reg(*a.engine, a.pd, ro, 0);
  auto* rm = reg(*b.engine, b.pd, remote, IBV_ACCESS_REMOTE_READ);
  ibv_sge g = sge(ro.data(), 64, rom);
  ASSERT_EQ(post(a, IBV_WR_RDMA_READ, 1, &g, 1, reinterpret_cast<std::uint64_t>(remote.data()), rm->rkey()), 0);
  net.run_idle(kSecond);
  auto wcs = drain(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(Fixture, RemoteAccessErrorCompletesTheRequesterAndFlushesTheRest) {
  connect_pair(a, b, o);
  std::vector<std::byte> buf(64);
  auto* m = reg(*a.engine, a.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf.data(), 64, m);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, 1, &g, 1, 0x1000, 0x12345), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, 2, &g, 1), 0);
  net.run_idle(kSecond);
  auto wcs = drain(a);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(a.qp->state(), rdma::QpState::Err);
  EXPECT_EQ(b.qp->state(), rdma::QpState::Err);
}

TEST_F(Fixture, ErrorFlushesPostedReceives) {
  connect_pair(a, b, o);
  std::vector<std::byte> buf(64);
  auto* m = reg(*b.engine, b.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf.data(), 64, m);
  ASSERT_EQ(post_recv(b, 1, &g, 1), 0);
  ASSERT_EQ(post_recv(b, 2, &g, 1), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_TRUE(b.engine->modify_qp(b.qp, attr, IBV_QP_STATE).ok());
  auto wcs = drain(b);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wcs[1].wr_id, 2u);
}

TEST_F(Fixture, UnsignaledWritesCompleteSilentlyBeforeASignaledOne) {
  connect_pair(a, b, o);
  std::vector<std::byte> src(64, std::byte{1}), dst(64);
  auto* sm = reg(*a.engine, a.pd, src, IBV_ACCESS_LOCAL_WRITE);
  auto* dm = reg(*b.engine, b.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge g = sge(src.data(), 64, sm);
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, i, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dm->rkey(), i == 4 ? IBV_SEND_SIGNALED : 0), 0);
  net.run_idle(kSecond);
  auto wcs = drain(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 4u);
}

TEST_F(Fixture, InlineSendCopiesAtPostTime) {
  connect_pair(a, b, o);
  std::vector<std::byte> rbuf(64);
  auto* rm = reg(*b.engine, b.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rg = sge(rbuf.data(), 64, rm);
  ASSERT_EQ(post_recv(b, 1, &rg, 1), 0);
  std::vector<std::byte> tmp(32, std::byte{0x42});
  ibv_sge g{reinterpret_cast<std::uint64_t>(tmp.data()), 32, 0};  // no MR needed for inline data
  ASSERT_EQ(post(a, IBV_WR_SEND, 1, &g, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  std::fill(tmp.begin(), tmp.end(), std::byte{0});
  net.run_idle(kSecond);
  ASSERT_EQ(drain(b).size(), 1u);
  EXPECT_EQ(rbuf[31], std::byte{0x42});
}

TEST(MemoryRegions, KeysAreCheckedForPdAccessBoundsAndStaleness) {
  rdma::MrTable t(4);
  std::vector<std::byte> buf(100);
  auto r = t.register_region(1, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  ASSERT_TRUE(r.ok());
  const std::uint32_t key = (*r)->rkey();
  const auto base = reinterpret_cast<std::uint64_t>(buf.data());
  std::byte* p = nullptr;
  EXPECT_EQ(t.check_remote(key, 1, base, 100, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::Ok);
  EXPECT_EQ(p, buf.data());
  EXPECT_EQ(t.check_remote(key, 2, base, 1, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::WrongPd);
  EXPECT_EQ(t.check_remote(key, 1, base, 1, IBV_ACCESS_REMOTE_WRITE, &p), rdma::AccessResult::NoPermission);
  EXPECT_EQ(t.check_remote(key, 1, base + 1, 100, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::OutOfBounds);
  EXPECT_EQ(t.check_remote(key, 1, base - 1, 2, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::OutOfBounds);
  EXPECT_EQ(t.check_remote(key, 1, UINT64_MAX, 2, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::OutOfBounds);
  ASSERT_TRUE(t.deregister(key).ok());
  EXPECT_EQ(t.check_remote(key, 1, base, 1, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::BadKey);
  auto again = t.register_region(1, buf.data(), buf.size(), IBV_ACCESS_REMOTE_READ);
  ASSERT_TRUE(again.ok());
  EXPECT_NE((*again)->rkey(), key);  // same slot, new generation: the stale key stays dead
  EXPECT_EQ(t.check_remote(key, 1, base, 1, IBV_ACCESS_REMOTE_READ, &p), rdma::AccessResult::BadKey);
}

TEST(MemoryRegions, RegistrationRulesMatchIbvRegMr) {
  rdma::MrTable t(2);
  std::vector<std::byte> buf(16);
  const auto bad = t.register_region(1, buf.data(), buf.size(), IBV_ACCESS_REMOTE_WRITE);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("LOCAL_WRITE"), std::string::npos);
  ASSERT_TRUE(t.register_region(1, buf.data(), 8, 0).ok());
  ASSERT_TRUE(t.register_region(1, buf.data(), 8, 0).ok());
  const auto full = t.register_region(1, buf.data(), 8, 0);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ENOMEM);
}

}  // namespace
}  // namespace roce::test::qp_verbs_test
