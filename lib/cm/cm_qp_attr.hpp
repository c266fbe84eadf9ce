// What a REQ and a REP say about a connection, as the QP attributes of each side (the role of
// Linux's cm_init_qp_rtr_attr / cm_init_qp_rts_attr). PSNs: the PSN a side puts in its REQ or
// REP is the one it receives with (rq_psn), so the peer sends with it (ReqInfo/RepInfo give it
// as starting_psn, already in the receiver's view). READ/atomic depths never exceed what this
// side allows. The path MTU is the REQ's on both sides (the active side chose it from its port).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "lib/cm/cm_types.hpp"
#include "lib/rdma/qp_transitions.hpp"

namespace roce::cm {

struct CmQpLimits {
  ibv_mtu max_mtu = IBV_MTU_4096;   // the port's active MTU: what an active side asks for
  std::uint8_t max_rd_atomic = 16;  // the engine's max_rd_atomic
  std::uint8_t min_rnr_timer = 12;  // ours: the REQ/REP do not carry it
  // Selective repeat with another rocev2-dp endpoint (ece.hpp): the reorder window we offer or
  // accept, 0 = never (go-back-N).
  std::uint32_t selective_repeat = 0;
};

struct CmQpAttrs {
  rdma::PeerPath rtr;
  rdma::SendSide rts;
  std::uint32_t selective_repeat = 0;  // agreed in the REQ/REP ECE: set on the QP before RTR
  Ece rep_ece{};  // passive side: what our REP answers (AcceptParams::ece)
};

// Passive side, from the REQ: `rq_psn` is the starting PSN our REP carries (AcceptParams).
CmQpAttrs passive_qp_attrs(const ReqInfo& req, std::uint32_t rq_psn, const CmQpLimits& lim);
// Active side, from the REQ we sent (`sent`, starting_psn = our rq_psn) and the peer's REP.
// `target_ack_delay` and the path's packet lifetime give the ACK timeout, as Linux's
// cm_rep_handler computes it.
CmQpAttrs active_qp_attrs(const ConnectParams& sent, const RepInfo& rep, const CmQpLimits& lim);

// The MTU both ends can use: the smaller of the REQ's (IBA enumeration 1..5) and ours.
ibv_mtu negotiated_mtu(std::uint8_t req_mtu, ibv_mtu ours);

}  // namespace roce::cm
