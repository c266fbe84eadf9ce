#include "lib/cm/rdma_cm.hpp"

#include <algorithm>
#include <cerrno>

namespace roce::cm {

using namespace proto;

namespace {

Gid gid_of(const IpAddress& a) { return a.version == IpVersion::V4 ? gid_from_ipv4(a.v4) : a.v6; }

bool is_ud_space(RdmaPortSpace ps) { return ps == RdmaPortSpace::Udp || ps == RdmaPortSpace::Ipoib; }

std::vector<std::uint8_t> with_cma_header(const CmaAddressing& a, std::span<const std::uint8_t> user) {
  std::vector<std::uint8_t> pd(kCmaHeaderBytes + user.size());
  write_cma_header(a, pd);
  std::copy(user.begin(), user.end(), pd.begin() + kCmaHeaderBytes);
  return pd;
}

}  // namespace

Result<ListenerId> RdmaCm::listen(RdmaPortSpace ps, std::uint16_t port, std::optional<IpAddress> addr) {
  if (addr && addr->is_any()) addr.reset();
  for (const auto& [id, l] : listeners_)
    if (l.ps == ps && l.port == port && l.addr == addr)
      return Error{EADDRINUSE, to_string(ps) + " port " + std::to_string(port) + " is already listened on" +
                                   (addr ? " at " + to_string(*addr) : "")};
  const std::uint64_t sid = rdma_service_id(ps, port);
  if (service_users_[sid] == 0) {
    if (Status s = cm_.listen(sid); !s.ok()) {
      service_users_.erase(sid);
      return s.error();
    }
  }
  ++service_users_[sid];
  const ListenerId id = next_listener_++;
  listeners_[id] = Listener{ps, port, addr};
  return id;
}

Status RdmaCm::stop_listening(ListenerId id) {
  const auto it = listeners_.find(id);
  if (it == listeners_.end()) return make_error(ENOENT, "no rdma_cm listener " + std::to_string(id));
  const std::uint64_t sid = rdma_service_id(it->second.ps, it->second.port);
  listeners_.erase(it);
  if (--service_users_[sid] == 0) {
    service_users_.erase(sid);
    return cm_.stop_listening(sid);
  }
  return {};
}

std::optional<ListenerId> RdmaCm::match(RdmaPortSpace ps, std::uint16_t port, const std::optional<IpAddress>& dst) const {
  std::optional<ListenerId> wildcard;
  for (const auto& [id, l] : listeners_) {
    if (l.ps != ps || l.port != port) continue;
    if (!l.addr) {
      if (!wildcard) wildcard = id;
    } else if (dst && *l.addr == *dst) {
      return id;
    }
  }
  return wildcard;
}

RdmaCmEvent RdmaCm::event_for(const CmEvent& e, RdmaCmEventType type) const {
  RdmaCmEvent ev;
  ev.type = type;
  ev.id = e.id;
  if (const auto it = ids_.find(e.id); it != ids_.end()) {
    ev.listener = it->second.listener;
    ev.ud = it->second.ud;
    ev.port_space = it->second.ps;
    ev.port = it->second.port;
    ev.addressing = it->second.addressing;
  }
  ev.private_data = e.private_data;
  return ev;
}

void RdmaCm::on_request(const CmEvent& e, Nanos now, CmOutput& out, std::vector<RdmaCmEvent>& events) {
  const bool ud = e.type == CmEventType::SidrReqReceived;
  const std::uint64_t sid = ud ? std::get<SidrReqInfo>(e.detail).service_id : std::get<ReqInfo>(e.detail).service_id;
  auto refuse = [&] {
    if (ud) {
      SidrReplyParams r;
      r.status = SidrStatus::Rejected;
      (void)cm_.sidr_reply(e.id, r, now, out);
    } else {
      (void)cm_.reject(e.id, RejReason::ConsumerDefined, now, out);
    }
  };
  const auto svc = rdma_service_of(sid);
  if (!svc || ud != is_ud_space(svc->port_space)) return refuse();  // cma_check_req_qp_type
  std::optional<CmaAddressing> addressing;
  CmaAddressing a;
  if (parse_cma_header(e.private_data, a) == CmaHeaderError::None) addressing = a;
  else if (svc->port_space != RdmaPortSpace::Ib) return refuse();  // only AF_IB goes without one
  const auto listener = match(svc->port_space, svc->port, addressing ? std::optional(addressing->dst) : std::nullopt);
  if (!listener) return refuse();
  ids_[e.id] = IdInfo{*listener, ud, svc->port_space, svc->port, addressing};
  RdmaCmEvent ev = event_for(e, RdmaCmEventType::ConnectRequest);
  if (ud) ev.detail = std::get<SidrReqInfo>(e.detail);
  else ev.detail = std::get<ReqInfo>(e.detail);
  if (addressing) ev.private_data.erase(ev.private_data.begin(), ev.private_data.begin() + kCmaHeaderBytes);
  events.push_back(std::move(ev));
}

void RdmaCm::on_cm_event(const CmEvent& e, Nanos now, CmOutput& out, std::vector<RdmaCmEvent>& events) {
  if (e.type == CmEventType::ReqReceived || e.type == CmEventType::SidrReqReceived) {
    on_request(e, now, out, events);
    return;
  }
  if (!ids_.contains(e.id)) return;  // an ID some other consumer of the CM owns
  switch (e.type) {
    case CmEventType::RepReceived: {
      RdmaCmEvent ev = event_for(e, RdmaCmEventType::ConnectResponse);
      ev.detail = std::get<RepInfo>(e.detail);
      events.push_back(std::move(ev));
      break;
    }
    case CmEventType::Established: events.push_back(event_for(e, RdmaCmEventType::Established)); break;
    case CmEventType::RejReceived: {
      RdmaCmEvent ev = event_for(e, RdmaCmEventType::Rejected);
      ev.status = std::get<RejInfo>(e.detail).reason;
      events.push_back(std::move(ev));
      break;
    }
    case CmEventType::MraReceived: break;  // the CM waits longer; nothing for the consumer
    case CmEventType::DreqReceived:
    case CmEventType::DrepReceived:
    case CmEventType::DreqError: events.push_back(event_for(e, RdmaCmEventType::Disconnected)); break;
    case CmEventType::TimewaitExit: events.push_back(event_for(e, RdmaCmEventType::TimewaitExit)); break;
    case CmEventType::ReqError:
    case CmEventType::RepError:
    case CmEventType::SidrReqError: events.push_back(event_for(e, RdmaCmEventType::Unreachable)); break;
    case CmEventType::ConsumerTimeout: events.push_back(event_for(e, RdmaCmEventType::ConnectError)); break;
    case CmEventType::SidrRepReceived: {
      const auto& rep = std::get<SidrRepInfo>(e.detail);
      RdmaCmEvent ev = event_for(e, rep.status == static_cast<std::uint8_t>(SidrStatus::Success) ? RdmaCmEventType::Established
                                                                                                 : RdmaCmEventType::Rejected);
      ev.status = rep.status;
      ev.detail = rep;
      events.push_back(std::move(ev));
      break;
    }
    case CmEventType::ReqReceived:
    case CmEventType::SidrReqReceived:
    case CmEventType::Count: break;
  }
  if (!cm_.state_of(e.id)) ids_.erase(e.id);
}

Result<CmId> RdmaCm::connect(const RdmaConnectParams& p, Nanos now, CmOutput& out) {
  if (p.private_data.size() > kRdmaConnectPrivateBytes)
    return Error{EINVAL, "rdma_cm REQ private data is at most 56 bytes (92 less the cma_hdr)"};
  if (p.src.version != p.dst.version) return Error{EINVAL, "source and destination address families differ"};
  if (is_ud_space(p.port_space)) return Error{EINVAL, to_string(p.port_space) + " is a UD port space: use resolve_ud()"};
  ConnectParams ib = p.ib;
  ib.service_id = rdma_service_id(p.port_space, p.dst_port);
  if (ib.path.local_gid == Gid{}) ib.path.local_gid = gid_of(p.src);
  if (ib.path.remote_gid == Gid{}) ib.path.remote_gid = gid_of(p.dst);
  const CmaAddressing a{p.src, p.dst, p.src_port};
  ib.private_data = with_cma_header(a, p.private_data);
  auto id = cm_.connect(ib, now, out);
  if (id.ok()) ids_[*id] = IdInfo{0, false, p.port_space, p.dst_port, a};
  return id;
}

Result<CmId> RdmaCm::resolve_ud(const RdmaUdResolveParams& p, Nanos now, CmOutput& out) {
  if (p.private_data.size() > kRdmaUdResolvePrivateBytes)
    return Error{EINVAL, "rdma_cm SIDR_REQ private data is at most 180 bytes (216 less the cma_hdr)"};
  if (p.src.version != p.dst.version) return Error{EINVAL, "source and destination address families differ"};
  if (!is_ud_space(p.port_space)) return Error{EINVAL, to_string(p.port_space) + " is a connected port space: use connect()"};
  SidrRequestParams r;
  r.service_id = rdma_service_id(p.port_space, p.dst_port);
  r.peer = MadPeer{gid_of(p.dst)};
  r.timeout = p.timeout;
  r.max_cm_retries = p.max_cm_retries;
  const CmaAddressing a{p.src, p.dst, p.src_port};
  r.private_data = with_cma_header(a, p.private_data);
  auto id = cm_.sidr_request(r, now, out);
  if (id.ok()) ids_[*id] = IdInfo{0, true, p.port_space, p.dst_port, a};
  return id;
}

Status RdmaCm::accept(CmId id, const AcceptParams& p, Nanos now, CmOutput& out) {
  const auto it = ids_.find(id);
  if (it == ids_.end()) return make_error(ENOENT, "no rdma_cm ID " + std::to_string(id));
  if (it->second.ud) return make_error(EINVAL, "a UD ID is accepted with accept_ud()");
  return cm_.accept(id, p, now, out);
}

Status RdmaCm::accept_ud(CmId id, std::uint32_t qpn, Nanos now, CmOutput& out, std::uint32_t qkey,
                         std::span<const std::uint8_t> private_data) {
  const auto it = ids_.find(id);
  if (it == ids_.end()) return make_error(ENOENT, "no rdma_cm ID " + std::to_string(id));
  if (!it->second.ud) return make_error(EINVAL, "a connected ID is accepted with accept()");
  SidrReplyParams r;
  r.qpn = qpn;
  r.qkey = qkey;
  r.private_data.assign(private_data.begin(), private_data.end());
  Status s = cm_.sidr_reply(id, r, now, out);
  if (!cm_.state_of(id)) ids_.erase(id);
  return s;
}

Status RdmaCm::reject(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data) {
  const auto it = ids_.find(id);
  if (it == ids_.end()) return make_error(ENOENT, "no rdma_cm ID " + std::to_string(id));
  Status s;
  if (it->second.ud) {
    SidrReplyParams r;
    r.status = SidrStatus::Rejected;
    r.private_data.assign(private_data.begin(), private_data.end());
    s = cm_.sidr_reply(id, r, now, out);
  } else {
    s = cm_.reject(id, RejReason::ConsumerDefined, now, out, private_data);
  }
  if (!cm_.state_of(id)) ids_.erase(id);
  return s;
}

std::string to_string(RdmaCmEventType t) {
  switch (t) {
    case RdmaCmEventType::ConnectRequest: return "CONNECT_REQUEST";
    case RdmaCmEventType::ConnectResponse: return "CONNECT_RESPONSE";
    case RdmaCmEventType::Established: return "ESTABLISHED";
    case RdmaCmEventType::Rejected: return "REJECTED";
    case RdmaCmEventType::Unreachable: return "UNREACHABLE";
    case RdmaCmEventType::ConnectError: return "CONNECT_ERROR";
    case RdmaCmEventType::Disconnected: return "DISCONNECTED";
    case RdmaCmEventType::TimewaitExit: return "TIMEWAIT_EXIT";
    case RdmaCmEventType::Count: break;
  }
  return "UNKNOWN";
}

}  // namespace roce::cm
