#include "lib/cm/cm_qp_attr.hpp"

#include <algorithm>
#include <cstring>

#include "lib/cm/cm_timing.hpp"

namespace roce::cm {

namespace {

ibv_gid to_ibv(const Gid& g) {
  ibv_gid out{};
  std::memcpy(out.raw, g.data(), 16);
  return out;
}

}  // namespace

ibv_mtu negotiated_mtu(std::uint8_t req_mtu, ibv_mtu ours) {
  const auto m = std::clamp<int>(req_mtu, IBV_MTU_256, IBV_MTU_4096);
  return static_cast<ibv_mtu>(std::min<int>(m, ours));
}

CmQpAttrs passive_qp_attrs(const ReqInfo& req, std::uint32_t rq_psn, const CmQpLimits& lim) {
  CmQpAttrs a;
  // The REQ's path MTU is the connection's: the active side's QP already uses it (rdma_cm's
  // passive side takes the path from the REQ as it is), and a responder whose MTU differs
  // refuses the requester's packets. max_mtu bounds only what we ask for ourselves.
  a.rtr.mtu = negotiated_mtu(req.path_mtu, IBV_MTU_4096);
  a.rtr.dest_qpn = req.remote_qpn;
  a.rtr.rq_psn = rq_psn;
  a.rtr.dgid = to_ibv(req.primary.local_gid);  // the REQ's local GID is the active side's
  a.rtr.traffic_class = req.primary.traffic_class;
  a.rtr.hop_limit = req.primary.hop_limit;
  a.rtr.max_dest_rd_atomic = std::min(req.responder_resources, lim.max_rd_atomic);
  a.rtr.min_rnr_timer = lim.min_rnr_timer;
  a.rts.sq_psn = req.starting_psn;
  a.rts.timeout = req.local_ack_timeout;
  a.rts.retry_cnt = std::min<std::uint8_t>(req.retry_count, 7);
  a.rts.rnr_retry = std::min<std::uint8_t>(req.rnr_retry_count, 7);
  a.rts.max_rd_atomic = std::min(req.initiator_depth, lim.max_rd_atomic);
  // The REP answers the REQ's ECE: ours only when it offered selective repeat and we do it.
  a.rep_ece = answer_selective_repeat(req.ece, lim.selective_repeat);
  a.selective_repeat = agreed_selective_repeat(req.ece, a.rep_ece);
  return a;
}

CmQpAttrs active_qp_attrs(const ConnectParams& sent, const RepInfo& rep, const CmQpLimits& lim) {
  CmQpAttrs a;
  a.rtr.mtu = negotiated_mtu(static_cast<std::uint8_t>(sent.path_mtu), lim.max_mtu);
  a.rtr.dest_qpn = rep.remote_qpn;
  a.rtr.rq_psn = sent.starting_psn;
  a.rtr.dgid = to_ibv(sent.path.remote_gid);
  a.rtr.traffic_class = sent.path.traffic_class;
  a.rtr.hop_limit = sent.path.hop_limit;
  a.rtr.max_dest_rd_atomic = std::min(rep.responder_resources, lim.max_rd_atomic);
  a.rtr.min_rnr_timer = lim.min_rnr_timer;
  a.rts.sq_psn = rep.starting_psn;
  a.rts.timeout = cm_ack_timeout(rep.target_ack_delay, sent.path.packet_life_time);
  a.rts.retry_cnt = std::min<std::uint8_t>(sent.retry_count, 7);
  a.rts.rnr_retry = std::min<std::uint8_t>(rep.rnr_retry_count, 7);
  a.rts.max_rd_atomic = std::min(rep.initiator_depth, lim.max_rd_atomic);
  a.selective_repeat = agreed_selective_repeat(sent.ece, rep.ece);
  return a;
}

}  // namespace roce::cm
