// The walk a verbs consumer makes after creating a QP, done on an engine in one place: INIT
// with its access flags, then RTR towards the peer and RTS (qp_transitions.hpp builds the
// attributes). The client library's Connector and roce-replay's set-up both bring QPs up here.
#pragma once

#include <cstdint>

#include "lib/rdma/engine.hpp"
#include "lib/rdma/qp_transitions.hpp"

namespace roce::rdma {

inline Status modify_to_init(Engine& e, QueuePair* qp, ibv_qp_type type, int access, std::uint32_t qkey) {
  const QpTransition init = init_transition(type, access, qkey);
  return e.modify_qp(qp, init.attr, init.mask);
}

inline Status modify_to_rtr(Engine& e, QueuePair* qp, ibv_qp_type type, const PeerPath& peer) {
  const QpTransition rtr = rtr_transition(type, peer);
  return e.modify_qp(qp, rtr.attr, rtr.mask);
}

// RTR, then RTS: a QP in INIT becomes ready to send.
inline Status modify_to_rts(Engine& e, QueuePair* qp, ibv_qp_type type, const PeerPath& peer, const SendSide& send) {
  if (Status s = modify_to_rtr(e, qp, type, peer); !s) return s;
  const QpTransition rts = rts_transition(type, send);
  return e.modify_qp(qp, rts.attr, rts.mask);
}

}  // namespace roce::rdma
