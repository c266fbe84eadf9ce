// The walk a verbs consumer makes after creating a QP, done on an engine in one place: INIT
// with its access flags, then RTR towards the peer and RTS (qp_transitions.hpp builds the
// attributes). Connector, CmService, roce-replay's set-up, nvme-bench, bench/ and the tests'
// raw peer all bring QPs up here.
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

// The whole walk: a QP fresh from create_qp becomes ready to send.
inline Status bring_up(Engine& e, QueuePair* qp, ibv_qp_type type, int access, std::uint32_t qkey, const PeerPath& peer,
                       const SendSide& send) {
  if (Status s = modify_to_init(e, qp, type, access, qkey); !s) return s;
  return modify_to_rts(e, qp, type, peer, send);
}

}  // namespace roce::rdma
