#include "lib/rdma/qp_transitions.hpp"

namespace roce::rdma {

QpTransition init_transition(ibv_qp_type type, int access, std::uint32_t qkey) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;
  t.attr.port_num = 1;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (type == IBV_QPT_UD) {
    t.attr.qkey = qkey;
    t.mask |= IBV_QP_QKEY;
  } else {
    t.attr.qp_access_flags = static_cast<unsigned>(access);
    t.mask |= IBV_QP_ACCESS_FLAGS;
  }
  return t;
}

QpTransition rtr_transition(ibv_qp_type type, const PeerPath& peer) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.mask = IBV_QP_STATE;
  if (type == IBV_QPT_UD) return t;
  t.attr.path_mtu = peer.mtu;
  t.attr.dest_qp_num = peer.dest_qpn;
  t.attr.rq_psn = peer.rq_psn;
  t.attr.ah_attr.is_global = 1;
  t.attr.ah_attr.grh.dgid = peer.dgid;
  t.attr.ah_attr.grh.traffic_class = peer.traffic_class;
  t.attr.ah_attr.grh.hop_limit = peer.hop_limit;
  t.attr.ah_attr.port_num = 1;
  t.mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (type == IBV_QPT_RC) {
    t.attr.max_dest_rd_atomic = peer.max_dest_rd_atomic;
    t.attr.min_rnr_timer = peer.min_rnr_timer;
    t.mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  }
  return t;
}

QpTransition rts_transition(ibv_qp_type type, const SendSide& send) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.sq_psn = send.sq_psn;
  t.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (type == IBV_QPT_RC) {
    t.attr.timeout = send.timeout;
    t.attr.retry_cnt = send.retry_cnt;
    t.attr.rnr_retry = send.rnr_retry;
    t.attr.max_rd_atomic = send.max_rd_atomic;
    t.mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return t;
}

}  // namespace roce::rdma
