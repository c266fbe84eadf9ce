// Send queue work requests the QP carries out itself, without a packet: LOCAL_INV (a region's
// or a type 2 window's key stops working) and BIND_MW (a window gets a range of a region and a
// new key). The requester runs them when it reaches them, in send queue order.
#pragma once

#include <infiniband/verbs.h>

#include "lib/rdma/qp_context.hpp"

namespace roce::rdma {

// The completion status: IBV_WC_SUCCESS, or what rxe reports when the operation cannot be
// done (IBV_WC_LOC_QP_OP_ERR for LOCAL_INV, IBV_WC_MW_BIND_ERR for BIND_MW); the QP then
// enters ERR.
ibv_wc_status execute_local_op(QpContext& qp, const SendWqe& w);

}  // namespace roce::rdma
