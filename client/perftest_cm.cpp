#include "client/perftest_cm.hpp"

#include <chrono>

#include "dataplane/signals.hpp"

namespace roce::client {

namespace {

// A source port in Linux's ephemeral range (32768..60999), as rdma_cm binds one for a client;
// each connection of a run its own.
std::uint16_t ephemeral_port(Nanos now) {
  static std::atomic<std::uint32_t> turn{0};
  return static_cast<std::uint16_t>(32768 + (now / kMicro + turn.fetch_add(7919)) % 28232);
}

std::string describe(const cm::RdmaCmEvent& e) {
  std::string s = cm::to_string(e.type);
  if (e.type == cm::RdmaCmEventType::Rejected) s += " (reason " + std::to_string(e.status) + ")";
  return s;
}

}  // namespace

std::optional<cm::RdmaCmEvent> CmEventQueue::take(cm::CmId id) {
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i].id == id) {
      cm::RdmaCmEvent e = std::move(pending_[i]);
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      return e;
    }
  return std::nullopt;
}

void CmEventQueue::pump(Nanos wait) {
  for (auto& e : cms_.wait_events(wait)) pending_.push_back(std::move(e));
}

Result<cm::RdmaCmEvent> CmEventQueue::next(cm::CmId id, Nanos wait) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
  for (;;) {
    if (auto e = take(id)) return std::move(*e);
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0 || dp::StopSignals::requested()) return make_error(ETIMEDOUT, "no rdma_cm event within the timeout");
    pump(left);
  }
}

Result<cm::CmId> cm_connect_rc(dp::Dataplane& dp, CmService& cms, CmEventQueue& events, const LocalQp& qp,
                               const CmRcConnect& c, std::uint16_t* reject_reason, std::uint32_t* agreed_window) {
  cm::RdmaConnectParams cp;
  cp.port_space = proto::RdmaPortSpace::Tcp;
  cp.src = dp.local().ip;
  cp.dst = c.server;
  cp.src_port = ephemeral_port(dp.now());
  cp.dst_port = c.port;
  cp.ib.local_qpn = qp.qpn;
  cp.ib.starting_psn = qp.psn;
  cp.ib.responder_resources = c.responder_resources;
  cp.ib.initiator_depth = c.initiator_depth;
  cp.ib.retry_count = c.retry_count;
  cp.ib.rnr_retry_count = c.rnr_retry_count;
  cp.ib.ece = cm::selective_repeat_ece(c.selective_repeat);
  cm::CmQpLimits lim = cms.qp_limits();
  lim.max_mtu = c.mtu;  // ours as the REQ says it (below), for the QP's RTR as well
  // The MTU perftest's exchange settled on (both sides' -m): the DPDK port's own MTU is not the
  // link's (a 1500-byte af_packet port on a 9000-byte link), and the TCP exchange's QPs take -m too.
  cp.ib.path_mtu = static_cast<proto::PathMtu>(c.mtu);
  cp.ib.srq = c.srq;
  auto id = cms.connect(cp);
  if (!id) return id.error();
  auto rep = events.next(*id, c.timeout);
  if (!rep) {
    cms.destroy(*id);
    return make_error(ETIMEDOUT, "no answer to the rdma_cm connection request to port " + std::to_string(c.port));
  }
  if (rep->type != cm::RdmaCmEventType::ConnectResponse) {
    if (reject_reason && rep->type == cm::RdmaCmEventType::Rejected) *reject_reason = rep->status;
    cms.destroy(*id);
    return make_error(rep->type == cm::RdmaCmEventType::Rejected ? ECONNREFUSED : ECONNABORTED,
                      "the rdma_cm connection request to port " + std::to_string(c.port) + ": " + describe(*rep));
  }
  const auto& info = std::get<cm::RepInfo>(rep->detail);
  const cm::CmQpAttrs attrs = cm::active_qp_attrs(cp.ib, info, lim);
  if (Status s = cms.connect_qp(qp, IBV_QPT_RC, attrs); !s) {
    cms.destroy(*id);
    return s.error();
  }
  if (agreed_window) *agreed_window = attrs.selective_repeat;
  if (Status s = cms.ready_to_use(*id); !s) return s.error();
  auto est = events.next(*id, c.timeout);
  if (!est) return est.error();
  if (est->type != cm::RdmaCmEventType::Established)
    return make_error(ECONNABORTED, "after the RTU to port " + std::to_string(c.port) + ": " + describe(*est));
  return *id;
}

Result<cm::SidrRepInfo> cm_resolve_ud(dp::Dataplane& dp, CmService& cms, CmEventQueue& events,
                                      const CmRcConnect& c, std::uint16_t* reject_reason) {
  cm::RdmaUdResolveParams rp;
  rp.port_space = proto::RdmaPortSpace::Udp;
  rp.src = dp.local().ip;
  rp.dst = c.server;
  rp.src_port = ephemeral_port(dp.now());
  rp.dst_port = c.port;
  auto id = cms.resolve_ud(rp);
  if (!id) return id.error();
  auto rep = events.next(*id, c.timeout);
  if (!rep) return make_error(ETIMEDOUT, "no answer to the SIDR request to UDP port " + std::to_string(c.port));
  if (rep->type != cm::RdmaCmEventType::Established) {
    if (reject_reason && rep->type == cm::RdmaCmEventType::Rejected) *reject_reason = rep->status;
    return make_error(rep->type == cm::RdmaCmEventType::Rejected ? ECONNREFUSED : ECONNABORTED,
                      "the SIDR request to UDP port " + std::to_string(c.port) + ": " + describe(*rep));
  }
  const auto* info = std::get_if<cm::SidrRepInfo>(&rep->detail);
  if (!info) return make_error(EPROTO, "the SIDR answer carries no QP");
  return *info;
}

}  // namespace roce::client
