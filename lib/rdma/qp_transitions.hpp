// The attributes and masks of the usual RESET -> INIT -> RTR -> RTS walk of a QP, as a verbs
// consumer (ibv_rc_pingpong, perftest) builds them for ibv_modify_qp: only what the QP type
// takes, so the same calls serve RC, UC and UD. Engine::modify_qp checks them.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace roce::rdma {

struct QpTransition {
  ibv_qp_attr attr{};
  int mask = 0;
};

// RTR: where the connected peer is. UD takes none of it.
struct PeerPath {
  ibv_mtu mtu = IBV_MTU_1024;
  std::uint32_t dest_qpn = 0;
  std::uint32_t rq_psn = 0;
  ibv_gid dgid{};
  std::uint8_t traffic_class = 0;
  std::uint8_t hop_limit = 64;
  std::uint8_t max_dest_rd_atomic = 16;  // RC only, as is min_rnr_timer
  std::uint8_t min_rnr_timer = 12;
};

// RTS: how this side sends. The retry settings and max_rd_atomic are RC only.
struct SendSide {
  std::uint32_t sq_psn = 0;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t max_rd_atomic = 16;
};

// Port 1, P_Key index 0; remote access flags for RC and UC, the Q_Key for UD.
QpTransition init_transition(ibv_qp_type type, int access, std::uint32_t qkey = 0);
QpTransition rtr_transition(ibv_qp_type type, const PeerPath& peer);
QpTransition rts_transition(ibv_qp_type type, const SendSide& send);

}  // namespace roce::rdma
