#include "lib/rdma/local_ops.hpp"

namespace roce::rdma {

ibv_wc_status execute_local_op(QpContext& qp, const SendWqe& w) {
  switch (w.opcode) {
    case IBV_WR_LOCAL_INV:
      return qp.mrs->invalidate(w.imm_or_rkey, qp.cfg.pd, qp.cfg.qpn) ? IBV_WC_SUCCESS : IBV_WC_LOC_QP_OP_ERR;
    case IBV_WR_BIND_MW:
      return qp.mrs->bind_window(w.imm_or_rkey, w.rkey, qp.cfg.pd, qp.cfg.qpn, w.bind_mr_key, w.remote_addr,
                                 w.bind_length, w.bind_access)
                 ? IBV_WC_SUCCESS
                 : IBV_WC_MW_BIND_ERR;
    default: return IBV_WC_LOC_QP_OP_ERR;
  }
}

}  // namespace roce::rdma
