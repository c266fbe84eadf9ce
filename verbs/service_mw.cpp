// The service's side of memory windows: the service's windows in the program's PD, made and
// freed by request, and bound by the program's bind WQEs (service_rings.hpp's SendWqe::bind)
// through the in-process verbs, so the engine's checks and library mode's completions: a type
// 1 window with ibv_bind_mw, a type 2 one with an IBV_WR_BIND_MW work request. A window's
// range is in the region's iova space, which is the program's own (the service registers
// the program's pages at the program's addresses), so nothing is translated.
#include <cerrno>
#include <cstring>

#include "verbs/service.hpp"

namespace roce::verbs {

int VerbsService::alloc_mw(Client& c, const service::Request& r, service::Reply& out) {
  const auto pd = c.pds.find(r.handle);
  if (pd == c.pds.end()) return EINVAL;
  ibv_mw* mw = ibv_alloc_mw(pd->second, static_cast<ibv_mw_type>(r.arg));
  if (mw == nullptr) return errno ? errno : ENOMEM;
  const std::uint32_t h = c.next_handle++;
  c.mws.emplace(h, mw);
  const service::AllocMwReply rep{h, mw->rkey};
  std::memcpy(out.body, &rep, sizeof rep);
  out.size = sizeof rep;
  return 0;
}

int VerbsService::dealloc_mw(Client& c, std::uint32_t handle) {
  const auto it = c.mws.find(handle);
  if (it == c.mws.end()) return EINVAL;
  if (int rc = ibv_dealloc_mw(it->second); rc != 0) return rc;
  c.mws.erase(it);
  return 0;
}

// A window or region that is not the program's is EINVAL, as library mode answers a foreign
// one at post time.
int VerbsService::post_bind(const Client& c, QpState& q, const service::SendWqe& w) {
  const auto mw = c.mws.find(w.bind.mw);
  if (mw == c.mws.end()) return EINVAL;
  ibv_mw_bind_info info{};
  if (w.bind.mr != 0) {
    const auto mr = c.mrs.find(w.bind.mr);
    if (mr == c.mrs.end()) return EINVAL;
    info.mr = mr->second.mr;
  }
  info.addr = w.bind.addr;
  info.length = w.bind.length;
  info.mw_access_flags = w.bind.access;
  if (w.opcode == service::kRingBindType1) {
    ibv_mw_bind b{};
    b.wr_id = w.wr_id;
    b.send_flags = w.send_flags;
    b.bind_info = info;
    return ibv_bind_mw(q.qp, mw->second, &b);
  }
  ibv_send_wr wr{};
  wr.wr_id = w.wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = w.send_flags;
  wr.bind_mw.mw = mw->second;
  wr.bind_mw.rkey = w.rkey;
  wr.bind_mw.bind_info = info;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(q.qp, &wr, &bad);
}

}  // namespace roce::verbs
