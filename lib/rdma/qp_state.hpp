// The verbs QP state machine (RESET -> INIT -> RTR -> RTS -> SQD / SQE / ERR) and the
// attribute masks each transition requires, per QP type, as IBA chapter 11 and the kernel's
// ib_modify_qp_is_ok() lay them out. The check is a pure function of (type, from, to, mask).
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace roce::rdma {

enum class QpState : std::uint8_t { Reset, Init, Rtr, Rts, Sqd, Sqe, Err };

QpState from_ibv(ibv_qp_state s);
ibv_qp_state to_ibv(QpState s);
std::string to_string(QpState s);

struct TransitionCheck {
  bool ok = false;
  std::string reason;  // which attribute is missing or not allowed, or why the move is illegal
};

TransitionCheck check_transition(ibv_qp_type type, QpState from, QpState to, int attr_mask);

}  // namespace roce::rdma
