// Resource limits: each configured limit refuses the request beyond it with a clear error,
// counts the refusal, and leaves everything created before it working.
#include <gtest/gtest.h>

#include "tests/support/verbs_helpers.hpp"

namespace roce::test::resource_limits_test {
namespace {

rdma::EngineConfig limited(std::uint32_t max_qps) {
  rdma::EngineConfig cfg;
  cfg.path.local.mac = {2, 0, 0, 0, 0, 1};
  cfg.path.local.ip = rdma::IpAddress::ipv4({10, 0, 0, 1});
  cfg.path.resolve_mac = [](const rdma::IpAddress&) -> std::optional<proto::MacAddr> { return proto::MacAddr{2, 0, 0, 0, 0, 2}; };
  cfg.max_qps = max_qps;
  cfg.max_qp_wr = 8;
  cfg.max_rd_atomic = 4;
  return cfg;
}

rdma::QpInit init_for(rdma::CompletionQueue* cq, std::uint32_t depth) {
  rdma::QpInit init;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = ibv_qp_cap{depth, depth, 1, 1, 0};
  return init;
}

TEST(ResourceLimits, QpBeyondMaxQpsIsRefusedAndCounted) {
  rdma::MrTable mrs;
  rdma::Engine e(limited(3), mrs);
  const rdma::PdHandle pd = e.alloc_pd();
  rdma::CompletionQueue* cq = *e.create_cq(64);
  std::vector<rdma::QueuePair*> qps;
  for (int i = 0; i < 3; ++i) {
    auto qp = e.create_qp(pd, init_for(cq, 4));
    ASSERT_TRUE(qp.ok()) << qp.error().message;
    qps.push_back(*qp);
  }
  auto fourth = e.create_qp(pd, init_for(cq, 4));
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().code, ENOMEM);
  EXPECT_NE(fourth.error().message.find("max_qps 3"), std::string::npos) << fourth.error().message;
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::Qps), 1u);
  // A destroyed QP gives its slot back.
  ASSERT_TRUE(e.destroy_qp(qps[1]).ok());
  EXPECT_TRUE(e.create_qp(pd, init_for(cq, 4)).ok());
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::Qps), 1u);
}

TEST(ResourceLimits, QueueDeeperThanMaxQpWrIsRefusedAndCounted) {
  rdma::MrTable mrs;
  rdma::Engine e(limited(4), mrs);
  rdma::CompletionQueue* cq = *e.create_cq(64);
  auto qp = e.create_qp(e.alloc_pd(), init_for(cq, 9));
  ASSERT_FALSE(qp.ok());
  EXPECT_EQ(qp.error().code, EINVAL);
  EXPECT_NE(qp.error().message.find("1..8"), std::string::npos) << qp.error().message;
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::QueueCaps), 1u);
  EXPECT_FALSE(e.create_cq(e.config().max_cqe + 1).ok());
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::QueueCaps), 2u);
}

TEST(ResourceLimits, MoreOutstandingReadsThanMaxRdAtomicIsRefusedAndCounted) {
  rdma::MrTable mrs;
  rdma::Engine e(limited(4), mrs);
  QpOptions o;
  o.depth = 8;
  o.max_rd_atomic = 5;  // one above the engine's limit of 4
  Endpoint a = make_endpoint(e, o);
  Endpoint b = make_endpoint(e, o);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_READ;
  ASSERT_TRUE(e.modify_qp(a.qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS).ok());
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = b.qp->qpn();
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = gid_of(e);
  attr.max_dest_rd_atomic = 5;
  const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  const Status refused = e.modify_qp(a.qp, attr, mask);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, EINVAL);
  EXPECT_NE(refused.error().message.find("above 4"), std::string::npos) << refused.error().message;
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::RdAtomic), 1u);
  EXPECT_EQ(a.qp->state(), rdma::QpState::Init);  // refused before anything changed
  attr.max_dest_rd_atomic = 4;
  EXPECT_TRUE(e.modify_qp(a.qp, attr, mask).ok());
  EXPECT_EQ(a.qp->state(), rdma::QpState::Rtr);
}

TEST(ResourceLimits, PostingBeyondTheQueueDepthIsEnomemAndCounted) {
  rdma::MrTable mrs;
  rdma::Engine e(limited(4), mrs);
  QpOptions o;
  o.depth = 4;
  o.max_rd_atomic = 4;
  Endpoint a = make_endpoint(e, o);
  Endpoint b = make_endpoint(e, o);
  connect_pair(a, b, o);
  std::vector<std::byte> buf(64);
  const rdma::MemoryRegion* mr = reg(e, a.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf.data(), 8, mr);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(post(a, IBV_WR_SEND, static_cast<std::uint64_t>(i), &g, 1), 0);
  EXPECT_EQ(post(a, IBV_WR_SEND, 99, &g, 1), ENOMEM);
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::SendQueueFull), 1u);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(post_recv(b, static_cast<std::uint64_t>(i), &g, 1), 0);
  EXPECT_EQ(post_recv(b, 99, &g, 1), ENOMEM);
  EXPECT_EQ(e.limit_hits(rdma::EngineLimit::RecvQueueFull), 1u);
}

TEST(ResourceLimits, RegionBeyondTheMrTableIsRefusedAndCounted) {
  rdma::MrTable mrs(2);
  std::vector<std::byte> buf(64);
  auto first = mrs.register_region(1, buf.data(), 32, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(mrs.register_region(1, buf.data() + 32, 32, IBV_ACCESS_LOCAL_WRITE).ok());
  auto third = mrs.register_region(1, buf.data(), 64, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ENOMEM);
  EXPECT_NE(third.error().message.find("max_mrs 2"), std::string::npos) << third.error().message;
  EXPECT_EQ(mrs.refused_full(), 1u);
  ASSERT_TRUE(mrs.deregister((*first)->key).ok());
  EXPECT_TRUE(mrs.register_region(1, buf.data(), 64, IBV_ACCESS_LOCAL_WRITE).ok());
  EXPECT_EQ(mrs.refused_full(), 1u);
}

TEST(ResourceLimits, EveryLimitHasAName) {
  for (std::size_t l = 0; l < static_cast<std::size_t>(rdma::EngineLimit::Count); ++l)
    EXPECT_NE(to_string(static_cast<rdma::EngineLimit>(l)), "unknown");
}

}  // namespace
}  // namespace roce::test::resource_limits_test
