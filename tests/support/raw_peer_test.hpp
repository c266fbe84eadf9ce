// The bring-up every raw-peer test repeats: a fresh engine, one RC QP moved to RTR (and RTS if
// asked) towards a RawPeer, and that peer. Fixtures derive from RawPeerTest and call bring_up.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test {

struct RawPeerSetup {
  proto::MacAddr peer_mac{2, 0, 0, 0, 0, 0xAA};
  proto::Ipv4Addr peer_ip{10, 0, 0, 9};
  std::uint32_t peer_qpn = 0x77;
  std::uint32_t rq_psn = 0;  // the PSN the QP's responder expects first
  unsigned access = 0;
  std::uint8_t max_dest_rd_atomic = 4;
  std::uint8_t min_rnr_timer = 14;
  ibv_mtu mtu = IBV_MTU_1024;
  bool rts = false;  // also RTR -> RTS, for tests of the requester and completer
  std::uint32_t sq_psn = 0;
  std::uint8_t max_rd_atomic = 1;
  std::uint32_t selective_repeat = 0;  // the QP's reorder window (0: go-back-N), set before RTR
};

class RawPeerTest : public ::testing::Test {
 protected:
  void bring_up(const RawPeerSetup& s) {
    setup_ = s;
    peer_.reset();
    engine_ = std::make_unique<rdma::Engine>(raw_peer_target(s.peer_mac), mrs_);
    ep_ = make_endpoint(*engine_, QpOptions{});
    ASSERT_TRUE(ep_.qp->set_selective_repeat(s.selective_repeat).ok());
    RawPeerPath path{s.peer_ip, s.peer_qpn, s.rq_psn, s.access, s.max_dest_rd_atomic, s.min_rnr_timer, s.mtu};
    to_rtr(*engine_, ep_.qp, path);
    if (s.rts) to_rts(*engine_, ep_.qp, s.sq_psn, s.max_rd_atomic);
    peer_ = std::make_unique<RawPeer>(*engine_, s.peer_mac, s.peer_ip, s.peer_qpn, ep_.qp->qpn());
  }
  // A further QP of the same engine in RTR towards the same peer (and in RTS if the first is).
  void bring_up_another(rdma::QueuePair* qp) {
    RawPeerPath path{setup_.peer_ip, setup_.peer_qpn, setup_.rq_psn, setup_.access, setup_.max_dest_rd_atomic,
                     setup_.min_rnr_timer, setup_.mtu};
    to_rtr(*engine_, qp, path);
    if (setup_.rts) to_rts(*engine_, qp, setup_.sq_psn, setup_.max_rd_atomic);
  }
  std::uint64_t count(rdma::Counter c) const { return ep_.qp->counters().get(c); }

  RawPeerSetup setup_;
  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
};

}  // namespace roce::test
