// The service's side of rdma_cm (slice 5, cm_proto.hpp): a program's rdma_cm connection owns
// rdma_cm IDs and event channels of the service's own (library mode's, on the service's CM
// agent), named to the program by handle. Each request runs the same rdma_* function there, so
// the state rules and errnos are library mode's; each event is taken in the service (so the
// REP's RTR/RTS and the RTU happen here, on the service's QP behind the program's), acknowledged
// and pushed to the program on the channel's socket. The connection closing destroys its IDs,
// which sends the REJ or DREQ their state asks.
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "verbs/cm_objects.hpp"
#include "verbs/cm_proto.hpp"
#include "verbs/service.hpp"

namespace roce::verbs {

using service::CmConnParam;
using service::CmEventRecord;
using service::CmIdSnapshot;
using service::CmOp;

struct CmClient {
  struct Channel {
    rdma_event_channel* ch = nullptr;
    int sock = -1;      // the service's end of the channel's socket
    bool dead = false;  // the program stopped reading it: events are taken and dropped
  };
  std::uint32_t next_handle = 1;
  std::uint64_t snapshots = 0;  // CmIdSnapshot::seq
  std::unordered_map<std::uint32_t, Channel> channels;
  std::unordered_map<std::uint32_t, rdma_cm_id*> ids;
  std::unordered_map<const rdma_cm_id*, std::uint32_t> handle_of;

  std::uint32_t add(rdma_cm_id* id) {
    const std::uint32_t h = next_handle++;
    ids.emplace(h, id);
    handle_of.emplace(id, h);
    return h;
  }
  ~CmClient() {
    // IDs first (each sends what its state asks: REJ, DREQ), then the channels they were on.
    for (auto& [h, id] : ids) rdma_destroy_id(id);
    for (auto& [h, c] : channels) {
      rdma_destroy_event_channel(c.ch);
      ::close(c.sock);
    }
  }
};

void CmClientFree::operator()(CmClient* c) const { delete c; }

namespace {

void log(const std::string& what) { std::fprintf(stderr, "roce-verbsd: %s\n", what.c_str()); }

int last_errno() { return errno ? errno : EINVAL; }

void copy_addr(service::CmAddr& to, const sockaddr_storage& from) { std::memcpy(&to, &from, sizeof to); }

CmIdSnapshot snapshot(CmClient& m, rdma_cm_id* id) {
  CmIdSnapshot s;
  s.seq = ++m.snapshots;
  s.state = static_cast<std::uint8_t>(to_cm_id(id)->state.load());
  s.has_verbs = id->verbs != nullptr;
  s.port_num = id->port_num;
  s.qp_state = id->qp ? static_cast<std::int32_t>(id->qp->state) : -1;
  copy_addr(s.src, id->route.addr.src_storage);
  copy_addr(s.dst, id->route.addr.dst_storage);
  s.num_paths = id->route.num_paths;
  if (id->route.path_rec) s.path = *id->route.path_rec;
  return s;
}

bool valid(const CmConnParam& c) { return c.private_len <= service::kCmPrivateBytes; }

rdma_conn_param to_param(const CmConnParam& c) {
  rdma_conn_param p{};
  p.private_data = c.private_len ? c.private_data : nullptr;
  p.private_data_len = c.private_len;
  p.responder_resources = c.responder_resources;
  p.initiator_depth = c.initiator_depth;
  p.flow_control = c.flow_control;
  p.retry_count = c.retry_count;
  p.rnr_retry_count = c.rnr_retry_count;
  p.srq = c.srq;
  p.qp_num = c.qp_num;
  return p;
}

void put_private(CmConnParam& c, const void* data, std::uint8_t len) {
  c.private_len = static_cast<std::uint8_t>(std::min<std::size_t>(len, service::kCmPrivateBytes));
  if (c.private_len && data) std::memcpy(c.private_data, data, c.private_len);
}

// An event as the program's record; a CONNECT_REQUEST's new passive ID gets its handle here.
CmEventRecord record(CmClient& m, const rdma_cm_event& e) {
  CmEventRecord r;
  r.event = e.event;
  r.status = e.status;
  const auto known = m.handle_of.find(e.id);
  if (known != m.handle_of.end()) {
    r.id = known->second;
  } else if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST && e.listen_id && m.handle_of.count(e.listen_id)) {
    r.id = m.add(e.id);
    r.listen_id = m.handle_of[e.listen_id];
  } else {
    return r;  // not the program's (id 0: not sent)
  }
  r.snap = snapshot(m, e.id);
  if (is_ud(e.id->ps)) {
    r.ud = 1;
    put_private(r.conn, e.param.ud.private_data, e.param.ud.private_data_len);
    r.ah_attr = e.param.ud.ah_attr;
    r.ud_qp_num = e.param.ud.qp_num;
    r.ud_qkey = e.param.ud.qkey;
    return r;
  }
  const rdma_conn_param& c = e.param.conn;
  put_private(r.conn, c.private_data, c.private_data_len);
  r.conn.responder_resources = c.responder_resources;
  r.conn.initiator_depth = c.initiator_depth;
  r.conn.flow_control = c.flow_control;
  r.conn.retry_count = c.retry_count;
  r.conn.rnr_retry_count = c.rnr_retry_count;
  r.conn.srq = c.srq;
  r.conn.qp_num = c.qp_num;
  return r;
}

}  // namespace

// The program's end of a channel must be a SOCK_SEQPACKET UNIX socket (records, one per event).
bool is_record_socket(int fd) {
  int type = 0, domain = 0;
  socklen_t l1 = sizeof type, l2 = sizeof domain;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) == 0 && ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l2) == 0 &&
         type == SOCK_SEQPACKET && domain == AF_UNIX;
}

int VerbsService::cm_request(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files,
                             service::Reply& out) {
  const auto op = static_cast<CmOp>(r.arg);
  if (op == CmOp::Open) {
    if (c.ctx != nullptr || c.cm) return EBUSY;  // a context's connection, or opened already
    c.cm.reset(new CmClient);
    return 0;
  }
  if (!c.cm) return EINVAL;  // not an rdma_cm connection
  service::CmRequest q;
  if (len < sizeof q) return EINVAL;
  std::memcpy(&q, r.body, sizeof q);
  if (!files.empty() && op != CmOp::CreateChannel) return EINVAL;
  CmClient& m = *c.cm;
  service::CmReply rep;
  const auto reply = [&] {
    std::memcpy(out.body, &rep, sizeof rep);
    out.size = sizeof rep;
    return 0;
  };
  const auto channel = [&m](std::uint32_t h) -> CmClient::Channel* {
    const auto it = m.channels.find(h);
    return it == m.channels.end() ? nullptr : &it->second;
  };
  errno = 0;
  switch (op) {
    case CmOp::CreateChannel: {
      if (files.size() != 1 || !is_record_socket(files[0])) return EINVAL;
      if (m.channels.size() >= opt_.max_per_client) return ENOMEM;
      const int sock = ::fcntl(files[0], F_DUPFD_CLOEXEC, 0);
      if (sock < 0) return last_errno();
      rdma_event_channel* ch = rdma_create_event_channel();
      if (ch == nullptr) {
        const int e = last_errno();
        ::close(sock);
        return e;
      }
      // Taken in the control loop when its fd is readable: never block the loop.
      ::fcntl(ch->fd, F_SETFL, ::fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
      const std::uint32_t h = m.next_handle++;
      m.channels.emplace(h, CmClient::Channel{ch, sock});
      rep.handle = h;
      return reply();
    }
    case CmOp::DestroyChannel: {
      CmClient::Channel* ch = channel(r.handle);
      if (ch == nullptr) return EINVAL;
      CmChannel* own = to_cm_channel(ch->ch);
      {
        std::lock_guard l(own->mutex);
        if (own->ids) return EBUSY;  // IDs first, as librdmacm
      }
      rdma_destroy_event_channel(ch->ch);
      ::close(ch->sock);
      m.channels.erase(r.handle);
      return 0;
    }
    case CmOp::CreateId: {
      CmClient::Channel* ch = channel(q.channel);
      if (ch == nullptr) return EINVAL;
      if (m.ids.size() >= opt_.max_per_client) return ENOMEM;
      rdma_cm_id* id = nullptr;
      if (rdma_create_id(ch->ch, &id, nullptr, static_cast<rdma_port_space>(q.ps)) != 0) return last_errno();
      rep.handle = m.add(id);
      rep.id = snapshot(m, id);
      return reply();
    }
    default: break;
  }
  // The rest are about one of the program's IDs.
  const auto it = m.ids.find(r.handle);
  if (it == m.ids.end()) return EINVAL;
  rdma_cm_id* id = it->second;
  int rc = 0;
  switch (op) {
    case CmOp::DestroyId:
      m.handle_of.erase(id);
      m.ids.erase(it);
      return rdma_destroy_id(id) == 0 ? 0 : last_errno();
    case CmOp::BindAddr: rc = rdma_bind_addr(id, q.src.sa.sa_family ? &q.src.sa : nullptr); break;
    case CmOp::ResolveAddr:
      rc = rdma_resolve_addr(id, q.src.sa.sa_family ? &q.src.sa : nullptr, q.dst.sa.sa_family ? &q.dst.sa : nullptr,
                             q.timeout_ms);
      break;
    case CmOp::ResolveRoute: rc = rdma_resolve_route(id, q.timeout_ms); break;
    case CmOp::Listen: rc = rdma_listen(id, q.backlog); break;
    case CmOp::Connect:
    case CmOp::Accept: {
      if (!valid(q.conn)) return EINVAL;
      rdma_conn_param p = to_param(q.conn);
      rdma_conn_param* pp = q.conn.given ? &p : nullptr;
      rc = op == CmOp::Connect ? rdma_connect(id, pp) : rdma_accept(id, pp);
      break;
    }
    case CmOp::Reject:
      if (!valid(q.conn)) return EINVAL;
      rc = rdma_reject(id, q.conn.private_len ? q.conn.private_data : nullptr, q.conn.private_len);
      break;
    case CmOp::Disconnect: rc = rdma_disconnect(id); break;
    case CmOp::SetOption:
      if (q.optlen > sizeof q.optval) return EINVAL;
      rc = rdma_set_option(id, q.level, q.optname, q.optval, q.optlen);
      break;
    case CmOp::InitQpAttr:
      rep.qp_attr.qp_state = static_cast<ibv_qp_state>(q.qp_state);
      rc = rdma_init_qp_attr(id, &rep.qp_attr, &rep.qp_attr_mask);
      break;
    case CmOp::Establish: rc = rdma_establish(id); break;
    case CmOp::Notify: rc = rdma_notify(id, static_cast<ibv_event_type>(q.notify_event)); break;
    case CmOp::Migrate: {
      CmClient::Channel* ch = channel(q.channel);
      if (ch == nullptr) return EINVAL;  // never to no channel: the program's synchronous IDs wait on their own
      rc = rdma_migrate_id(id, ch->ch);
      break;
    }
    case CmOp::AttachQp:
      if (int e = cm_attach_qp(c, *id, q.qpn)) return e;
      break;
    case CmOp::DetachQp: id->qp = nullptr; break;
    default: return EOPNOTSUPP;
  }
  if (rc != 0) return last_errno();
  rep.handle = r.handle;
  rep.id = snapshot(m, id);
  return reply();
}

int VerbsService::cm_attach_qp(const Client& c, rdma_cm_id& id, std::uint32_t qpn) {
  if (id.qp != nullptr) return EINVAL;
  // Only a QP of the same program: one of its context connections (same peer process).
  ibv_qp* qp = nullptr;
  for (const auto& k : clients_)
    if (k->pid == c.pid && k.get() != &c)
      for (const auto& [h, s] : k->qps)
        if (s.qp->qp_num == qpn) qp = s.qp;
  if (qp == nullptr) return EINVAL;
  for (const auto& [h, other] : c.cm->ids)
    if (other->qp == qp) return EBUSY;  // one ID per QP, as rdma_create_qp makes a QP per ID
  id.qp = qp;
  // RESET -> INIT (UD on to RTS: it needs no peer), as rdma_create_qp does.
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    if (s != IBV_QPS_INIT && qp->qp_type != IBV_QPT_UD) break;
    ibv_qp_attr a{};
    a.qp_state = s;
    int mask = 0;
    int rc = rdma_init_qp_attr(&id, &a, &mask) != 0 ? last_errno() : ibv_modify_qp(qp, &a, mask);
    if (rc != 0) {
      id.qp = nullptr;
      return rc;
    }
  }
  return 0;
}

void VerbsService::cm_poll_fds(std::vector<pollfd>& fds) const {
  for (const auto& c : clients_)
    if (c->cm)
      for (const auto& [h, ch] : c->cm->channels) fds.push_back({ch.ch->fd, POLLIN, 0});
}

void VerbsService::cm_deliver() {
  for (auto& c : clients_) {
    if (!c->cm) continue;
    CmClient& m = *c->cm;
    for (auto& [h, ch] : m.channels) {
      rdma_cm_event* e = nullptr;
      while (rdma_get_cm_event(ch.ch, &e) == 0) {
        const CmEventRecord rec = record(m, *e);
        rdma_cm_id* orphan = rec.id == 0 && e->event == RDMA_CM_EVENT_CONNECT_REQUEST ? e->id : nullptr;
        rdma_ack_cm_event(e);
        if (orphan) {  // a request for a listener the program destroyed meanwhile
          (void)rdma_reject(orphan, nullptr, 0);
          rdma_destroy_id(orphan);
        }
        if (rec.id == 0) continue;
        if (ch.dead) {
          ++cm_events_dropped_;
          continue;
        }
        if (::send(ch.sock, &rec, sizeof rec, MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof rec)) {
          // A program that does not read its events (or closed the channel) is not waited for.
          log("program " + std::to_string(c->pid) + " does not read rdma_cm channel " + std::to_string(h) +
              ": its events are dropped and the channel closed");
          ::shutdown(ch.sock, SHUT_RDWR);
          ch.dead = true;
          ++cm_events_dropped_;
        }
      }
    }
  }
}

void VerbsService::cm_forget_qp(const ibv_qp* qp) {
  for (auto& c : clients_)
    if (c->cm)
      for (auto& [h, id] : c->cm->ids)
        if (id->qp == qp) id->qp = nullptr;
}

std::uint32_t VerbsService::cm_ids(const Client& c) { return c.cm ? static_cast<std::uint32_t>(c.cm->ids.size()) : 0; }

}  // namespace roce::verbs
