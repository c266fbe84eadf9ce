#include "verbs/cm_port.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "protocol/cm_reject.hpp"
#include "protocol/cm_sidr.hpp"
#include "verbs/device.hpp"
#include "verbs/export.hpp"
#include "verbs/objects.hpp"

namespace roce::verbs {

namespace {

std::mutex g_cm_mutex;
CmPort* g_cm = nullptr;

ibv_mtu ibv_mtu_of(std::uint32_t bytes) {
  return bytes >= 4096 ? IBV_MTU_4096 : bytes >= 2048 ? IBV_MTU_2048 : bytes >= 1024 ? IBV_MTU_1024 : bytes >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}


}  // namespace

void set_sockaddr(sockaddr_storage& s, const proto::IpAddress& ip, std::uint16_t port) {
  std::memset(&s, 0, sizeof s);
  if (ip.version == proto::IpVersion::V4) {
    auto& in = reinterpret_cast<sockaddr_in&>(s);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    std::memcpy(&in.sin_addr, ip.v4.data(), 4);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(s);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    std::memcpy(&in6.sin6_addr, ip.v6.data(), 16);
  }
}

const char* to_string(CmIdState s) {
  switch (s) {
    case CmIdState::Idle: return "idle";
    case CmIdState::AddrBound: return "address bound";
    case CmIdState::AddrResolved: return "address resolved";
    case CmIdState::RouteResolved: return "route resolved";
    case CmIdState::Listening: return "listening";
    case CmIdState::Connecting: return "connecting";
    case CmIdState::ConnectResponse: return "connect response";
    case CmIdState::RequestReceived: return "request received";
    case CmIdState::Accepting: return "accepting";
    case CmIdState::Connected: return "connected";
    case CmIdState::Disconnected: return "disconnected";
  }
  return "unknown";
}

void move_to(CmIdent& id, CmIdState to) { id.state = to; }

std::uint32_t random_psn() {
  thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xFFFFFF;
}

void post_event(CmChannel& ch, CmEventBox* e) {
  {
    std::lock_guard l(ch.mutex);
    ch.queue.push_back(e);
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(ch.fd, &one, sizeof one);
}

CmPort* CmPort::get() {
  std::lock_guard g(g_cm_mutex);
  if (g_cm) return g_cm;
  Device* d = configured_device();
  if (d == nullptr) {
    errno = ENODEV;
    return nullptr;
  }
  if (!d->config.service.empty()) {  // no CM in this process: the service's (cm_remote.hpp)
    errno = EOPNOTSUPP;
    return nullptr;
  }
  // librdmacm keeps one context per device for its IDs, open until the process ends.
  ibv_context* ctx = ibv_open_device(d);
  if (ctx == nullptr) return nullptr;
  Runtime* rt = Runtime::running();
  if (rt == nullptr) {
    errno = ESHUTDOWN;
    return nullptr;
  }
  g_cm = new CmPort(*rt, ctx);
  return g_cm;
}

CmPort::CmPort(Runtime& rt, ibv_context* verbs) : rt_(rt), verbs_(verbs) {
  cm::CmAgentConfig cfg;
  EngineGuard g(rt_.lock());
  cfg.cm.local_ca_guid = be64toh(node_guid(rt_.local().mac));
  // A program run again within a peer's TIMEWAIT must not reuse its last run's communication
  // IDs (the peer would answer REJ "stale connection"): seeded per process, as Linux per boot.
  cfg.cm.id_seed = std::random_device{}();
  cfg.cm.unmatched_request_hold = kUnmatchedRequestHold;
  agent_ = std::make_unique<cm::CmAgent>(cfg, rt_.engine());
  rt_.watch(this);
}

ibv_pd* CmPort::default_pd() {
  std::lock_guard g(g_cm_mutex);
  if (pd_ == nullptr) pd_ = ibv_alloc_pd(verbs_);
  return pd_;
}

cm::CmQpLimits CmPort::limits() const {
  cm::CmQpLimits l;
  l.max_mtu = ibv_mtu_of(rt_.active_mtu());
  l.max_rd_atomic = rt_.config().max_rd_atomic;
  return l;
}

void CmPort::forget(CmIdent* owner) {
  std::erase_if(by_cm_, [owner](const auto& kv) { return kv.second == owner; });
  std::erase_if(by_listener_, [owner](const auto& kv) { return kv.second == owner; });
  std::erase_if(retries_, [owner](const Retry& r) { return r.id == owner; });
}

bool CmPort::check() {
  agent_->poll(now());
  if (agent_->has_events())
    for (cm::RdmaCmEvent& e : agent_->take_events()) route(e);
  if (!retries_.empty()) send_retries();
  return false;  // polled for the life of the process
}

bool CmPort::retry_later(CmIdent& id, cm::RdmaCmEvent& e) {
  if (e.type != cm::RdmaCmEventType::Rejected || id.state != CmIdState::Connecting) return false;
  const bool sidr = std::holds_alternative<cm::SidrRepInfo>(e.detail);
  const bool nobody_listens =
      sidr ? e.status == static_cast<std::uint16_t>(proto::SidrStatus::ServiceIdUnsupported)
           : e.status == static_cast<std::uint16_t>(proto::RejReason::InvalidServiceId);
  const Nanos t = now();
  if (!nobody_listens || t + kNoListenerGap > id.connect_deadline) return false;
  if (sidr ? !id.resolve_params : !id.connect_params) return false;
  by_cm_.erase(e.id);
  id.cm.reset();  // that attempt is over; the next one gets its own CM ID
  retries_.push_back(Retry{&id, t + kNoListenerGap, std::move(e)});
  return true;
}

void CmPort::send_retries() {
  const Nanos t = now();
  std::vector<Retry> due;
  std::erase_if(retries_, [&](Retry& r) {
    if (r.at > t) return false;
    due.push_back(std::move(r));
    return true;
  });
  for (Retry& r : due) {
    CmIdent& id = *r.id;
    auto cid = agent_->run(t, [&](cm::RdmaCm& cm, cm::CommunicationManager&, cm::CmOutput& out) {
      return id.resolve_params ? cm.resolve_ud(*id.resolve_params, t, out) : cm.connect(*id.connect_params, t, out);
    });
    if (cid) {
      id.cm = *cid;
      by_cm_[*cid] = &id;
      continue;
    }
    // Not sent: the program gets the refusal it would have had.
    auto* box = new CmEventBox{};
    box->id = &id;
    box->counted = &id;
    box->raw = std::move(r.refusal);
    post_event(*id.ch, box);
  }
}

void CmPort::route(cm::RdmaCmEvent& e) {
  auto* box = new CmEventBox{};
  if (e.type == cm::RdmaCmEventType::ConnectRequest) {
    const auto l = by_listener_.find(e.listener);
    if (l == by_listener_.end() || l->second->state != CmIdState::Listening) {  // the listener went away
      (void)agent_->reject(e.id, {}, now());
      delete box;
      return;
    }
    CmIdent* child = make_passive_id(*l->second, e);
    by_cm_[e.id] = child;
    box->id = child;
    box->listen_id = l->second;
    box->counted = l->second;
    box->raw = std::move(e);
    post_event(*l->second->ch, box);
    return;
  }
  const auto it = by_cm_.find(e.id);
  if (it == by_cm_.end()) {  // the program destroyed the ID
    delete box;
    return;
  }
  CmIdent* id = it->second;
  if (retry_later(*id, e)) {
    delete box;
    return;
  }
  // The RTU this library sent for a REP already gave the program its event (ESTABLISHED, or
  // CONNECT_RESPONSE before rdma_establish): no second one, and no count on the channel.
  if (e.type == cm::RdmaCmEventType::Established && id->swallow_established) {
    id->swallow_established = false;
    delete box;
    return;
  }
  if (e.type == cm::RdmaCmEventType::TimewaitExit) {
    id->cm.reset();  // the CM freed its ID
    by_cm_.erase(it);
  }
  box->id = id;
  box->counted = id;
  box->raw = std::move(e);
  post_event(*id->ch, box);
}

CmIdent* make_passive_id(CmIdent& listener, const cm::RdmaCmEvent& e) {
  auto* id = new CmIdent{};
  CmPort* port = g_cm;
  id->verbs = port->verbs();
  id->channel = listener.channel;
  id->ch = listener.ch;
  id->context = listener.context;
  id->ps = listener.ps;
  id->qp_type = listener.qp_type;
  id->port_num = 1;
  id->listener = &listener;
  id->cm = e.id;
  id->rq_psn = random_psn();
  id->route.path_rec = &id->path;
  id->route.num_paths = 1;
  id->path.pkey = htons(0xFFFF);
  if (const auto* sidr = std::get_if<cm::SidrReqInfo>(&e.detail)) {
    id->sidr = *sidr;
    std::memcpy(id->path.dgid.raw, sidr->from.gid.data(), 16);
    const ibv_gid ours = rdma::gid_from_ip(port->local_ip());
    std::memcpy(id->path.sgid.raw, ours.raw, 16);
    id->path.hop_limit = 64;
  } else {
    id->req = std::get<cm::ReqInfo>(e.detail);
    // What the REQ offers, within the device, until rdma_accept says otherwise (a program that
    // moves its own QP asks rdma_init_qp_attr before it accepts, as the kernel's CM ID has them).
    const std::uint8_t max = port->limits().max_rd_atomic;
    id->responder_resources = std::min(id->req->responder_resources, max);
    id->initiator_depth = std::min(id->req->initiator_depth, max);
    std::memcpy(id->path.sgid.raw, id->req->primary.remote_gid.data(), 16);
    std::memcpy(id->path.dgid.raw, id->req->primary.local_gid.data(), 16);
    id->path.mtu = id->req->path_mtu;
    id->path.hop_limit = id->req->primary.hop_limit;
    id->path.traffic_class = id->req->primary.traffic_class;
  }
  id->tos = listener.tos;
  id->ack_timeout = listener.ack_timeout;
  move_to(*id, CmIdState::RequestReceived);
  if (e.addressing) {
    set_sockaddr(id->route.addr.src_storage, e.addressing->dst, e.port);
    set_sockaddr(id->route.addr.dst_storage, e.addressing->src, e.addressing->src_port);
  }
  {
    std::lock_guard l(listener.ch->mutex);
    ++listener.ch->ids;
  }
  return id;
}

}  // namespace roce::verbs
