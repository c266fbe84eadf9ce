// The INIT -> RTR -> RTS attributes shared by the apps, the replay tool and the benchmarks: each
// QP type gets only what it takes (the engine refuses a UD QP an address vector, as verbs
// does), and what they carry lands in the QP.
#include "lib/rdma/qp_transitions.hpp"

#include <gtest/gtest.h>

#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::qp_transitions_test {
namespace {

constexpr int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

rdma::PeerPath path() {
  rdma::PeerPath p;
  p.mtu = IBV_MTU_4096;
  p.dest_qpn = 0x123;
  p.rq_psn = 0x4000;
  p.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4({10, 0, 0, 2}));
  p.max_dest_rd_atomic = 8;
  p.min_rnr_timer = 3;
  return p;
}

rdma::SendSide send_side() { return rdma::SendSide{0x777, 9, 5, 6, 4}; }

class QpTransitions : public ::testing::TestWithParam<ibv_qp_type> {
 protected:
  QpTransitions() : engine_(raw_peer_target({2, 0, 0, 0, 0, 2}), mrs_) {}
  rdma::MrTable mrs_;
  rdma::Engine engine_;
};

TEST_P(QpTransitions, BringAFreshQpToRtsWithWhatTheyCarry) {
  const ibv_qp_type type = GetParam();
  QpOptions o;
  o.type = type;
  Endpoint ep = make_endpoint(engine_, o);
  for (const rdma::QpTransition& t : {rdma::init_transition(type, kRemote, 0x11111111), rdma::rtr_transition(type, path()),
                                rdma::rts_transition(type, send_side())}) {
    const Status s = engine_.modify_qp(ep.qp, t.attr, t.mask);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  EXPECT_EQ(ep.qp->state(), rdma::QpState::Rts);
  const rdma::QpConfig& cfg = ep.qp->context().cfg;
  EXPECT_EQ(cfg.sq_psn, 0x777u);
  if (type == IBV_QPT_UD) {
    EXPECT_EQ(cfg.qkey, 0x11111111u);
    return;
  }
  EXPECT_EQ(cfg.access, kRemote);
  EXPECT_EQ(cfg.pmtu, 4096u);
  EXPECT_EQ(cfg.dest_qpn, 0x123u);
  EXPECT_EQ(cfg.rq_psn, 0x4000u);
  if (type == IBV_QPT_RC) {
    EXPECT_EQ(cfg.max_dest_rd_atomic, 8);
    EXPECT_EQ(cfg.min_rnr_timer, 3);
    EXPECT_EQ(cfg.timeout, 9);
    EXPECT_EQ(cfg.retry_cnt, 5);
    EXPECT_EQ(cfg.rnr_retry, 6);
    EXPECT_EQ(cfg.max_rd_atomic, 4);
  }
}

TEST_P(QpTransitions, MasksNameOnlyWhatTheTypeTakes) {
  const ibv_qp_type type = GetParam();
  const int init = rdma::init_transition(type, kRemote, 1).mask;
  EXPECT_EQ((init & IBV_QP_QKEY) != 0, type == IBV_QPT_UD);
  EXPECT_EQ((init & IBV_QP_ACCESS_FLAGS) != 0, type != IBV_QPT_UD);
  const int rtr = rdma::rtr_transition(type, path()).mask;
  EXPECT_EQ((rtr & IBV_QP_AV) != 0, type != IBV_QPT_UD);
  EXPECT_EQ((rtr & IBV_QP_MAX_DEST_RD_ATOMIC) != 0, type == IBV_QPT_RC);
  const int rts = rdma::rts_transition(type, send_side()).mask;
  EXPECT_TRUE(rts & IBV_QP_SQ_PSN);
  EXPECT_EQ((rts & IBV_QP_RETRY_CNT) != 0, type == IBV_QPT_RC);
}

INSTANTIATE_TEST_SUITE_P(EachType, QpTransitions, ::testing::Values(IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD),
                         [](const auto& info) { return std::string(info.param == IBV_QPT_RC ? "RC" : info.param == IBV_QPT_UC ? "UC" : "UD"); });

}  // namespace
}  // namespace roce::test::qp_transitions_test
