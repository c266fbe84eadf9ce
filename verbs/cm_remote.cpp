#include "verbs/cm_remote.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "verbs/cm_port.hpp"
#include "verbs/device.hpp"
#include "verbs/objects.hpp"
#include "verbs/service_client.hpp"

namespace roce::verbs {
namespace {

using service::CmOp;

// The program's rdma_cm connection, its context and the IDs the service's events name.
struct Remote {
  std::unique_ptr<ServiceConnection> conn;
  ibv_context* verbs = nullptr;
  std::mutex mutex;  // guards pd, ids and the snapshots' application to the IDs
  ibv_pd* pd = nullptr;
  std::unordered_map<std::uint32_t, CmIdent*> ids;
};

std::mutex g_remote_mutex;
Remote* g_remote = nullptr;

// fork(): the child's rdma_cm starts afresh. It closes its copy of the parent's connection (so
// the service still sees the parent go when it exits or is killed, whatever the child does) and
// makes a connection of its own on its first rdma_cm call; the parent's channels and IDs are
// not the child's (EINVAL there: their handles name the parent's objects). The Remote itself is
// left behind, its mutexes possibly held by a parent thread that is not in the child.
void lock_for_fork() { g_remote_mutex.lock(); }
void unlock_after_fork() { g_remote_mutex.unlock(); }
void forget_in_child() {
  if (g_remote) g_remote->conn.reset();
  g_remote = nullptr;
  g_remote_mutex.unlock();
}

// Whether an object's handle is of this process's rdma_cm connection.
bool mine(const void* owner) {
  std::lock_guard l(g_remote_mutex);
  return owner != nullptr && owner == g_remote;
}

// Made by the first call that needs it (rdma_create_event_channel), kept until the process
// ends as librdmacm keeps its device; nullptr with errno when the service cannot be reached.
Remote* remote() {
  std::lock_guard l(g_remote_mutex);
  if (g_remote) return g_remote;
  Device* d = configured_device();
  if (d == nullptr || d->config.service.empty()) {
    errno = ENODEV;
    return nullptr;
  }
  ibv_context* ctx = ibv_open_device(d);
  if (ctx == nullptr) return nullptr;
  auto conn = ServiceConnection::connect(d->config.service);
  if (!conn) {
    report("rdma_cm: " + conn.error().message);
    ibv_close_device(ctx);
    errno = conn.error().code;
    return nullptr;
  }
  if (int rc = (*conn)->call(service::Op::Cm, 0, static_cast<std::uint32_t>(CmOp::Open), nullptr, 0, nullptr, 0); rc) {
    report(std::string("rdma_cm: the service refused rdma_cm: ") + std::strerror(rc));
    ibv_close_device(ctx);
    errno = rc;
    return nullptr;
  }
  auto* r = new Remote{};
  r->conn = std::move(*conn);
  r->verbs = ctx;
  g_remote = r;
  static const int forks = pthread_atfork(lock_for_fork, unlock_after_fork, forget_in_child);
  (void)forks;
  return r;
}

int call(std::uint32_t handle, CmOp op, const service::CmRequest& q, service::CmReply& rep, const int* fds = nullptr,
         std::size_t nfds = 0) {
  Remote* r = remote();
  if (r == nullptr) return -1;
  const int err = r->conn->call(service::Op::Cm, handle, static_cast<std::uint32_t>(op), &q, sizeof q, &rep, sizeof rep, fds, nfds);
  if (err == 0) return 0;
  errno = err;
  return -1;
}

void apply(CmIdent& id, const service::CmIdSnapshot& s) {
  if (s.seq <= id.remote_seq) return;  // an event taken before the answer already applied
  id.remote_seq = s.seq;
  move_to(id, static_cast<CmIdState>(s.state));
  std::memset(&id.route.addr.src_storage, 0, sizeof id.route.addr.src_storage);
  std::memset(&id.route.addr.dst_storage, 0, sizeof id.route.addr.dst_storage);
  std::memcpy(&id.route.addr.src_storage, &s.src, sizeof s.src);
  std::memcpy(&id.route.addr.dst_storage, &s.dst, sizeof s.dst);
  if (s.num_paths) {
    id.path = s.path;
    id.route.path_rec = &id.path;
    id.route.num_paths = s.num_paths;
  }
  if (s.has_verbs && id.verbs == nullptr) {
    id.verbs = remote_verbs();
    id.port_num = s.port_num;
  }
  if (id.qp && s.qp_state >= 0) id.qp->state = static_cast<ibv_qp_state>(s.qp_state);
}

// An event's private data lives in its box until the program acknowledges it.
template <typename Param>
void take_private(Param& p, CmEventBox& box, const service::CmConnParam& c) {
  const std::size_t n = std::min<std::size_t>(c.private_len, sizeof box.private_data);
  std::memcpy(box.private_data, c.private_data, n);
  p.private_data = n ? box.private_data : nullptr;
  p.private_data_len = static_cast<std::uint8_t>(n);
}

// A passive ID for a connection request the service pushed: the listener's channel, context
// and port space, as librdmacm's new ID has them.
CmIdent* passive_id(CmIdent& listener, std::uint32_t handle) {
  auto* id = new CmIdent{};
  id->remote = handle;
  id->verbs = remote_verbs();
  id->channel = listener.channel;
  id->ch = listener.ch;
  id->context = listener.context;
  id->ps = listener.ps;
  id->qp_type = listener.qp_type;
  id->port_num = 1;
  id->listener = &listener;
  std::lock_guard l(listener.ch->mutex);
  ++listener.ch->ids;
  return id;
}

}  // namespace

bool cm_served() {
  const Device* d = configured_device();
  return d != nullptr && !d->config.service.empty();
}

ibv_context* remote_verbs() {
  Remote* r = remote();
  return r ? r->verbs : nullptr;
}

ibv_pd* remote_default_pd() {
  Remote* r = remote();
  if (r == nullptr) return nullptr;
  std::lock_guard l(r->mutex);
  if (r->pd == nullptr) r->pd = ibv_alloc_pd(r->verbs);
  return r->pd;
}

CmChannel* remote_create_channel() {
  if (remote() == nullptr) return nullptr;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return nullptr;
  service::CmRequest q;
  service::CmReply rep;
  const int rc = call(0, CmOp::CreateChannel, q, rep, &sv[1], 1);
  const int err = errno;
  ::close(sv[1]);  // the service has its copy
  if (rc != 0) {
    ::close(sv[0]);
    errno = err;
    return nullptr;
  }
  auto* ch = new CmChannel{};
  ch->fd = sv[0];
  ch->remote = rep.handle;
  ch->owner = remote();
  return ch;
}

void remote_destroy_channel(CmChannel& ch) {
  if (!mine(ch.owner)) return;  // the parent's (fork): its socket is closed, the service's is the parent's
  service::CmRequest q;
  service::CmReply rep;
  (void)call(ch.remote, CmOp::DestroyChannel, q, rep);
}

bool remote_event_waiting(CmChannel& ch) {
  pollfd p{ch.fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int remote_get_event(CmChannel& ch, rdma_cm_event** event) {
  if (!mine(ch.owner)) {  // the parent's (fork): reading it would take the parent's events
    errno = EINVAL;
    return -1;
  }
  Remote* r = remote();
  if (r == nullptr) return -1;
  for (;;) {
    service::CmEventRecord rec;
    const ssize_t n = ::recv(ch.fd, &rec, sizeof rec, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;  // EAGAIN on a non-blocking channel, as librdmacm's read of its fd
    if (n == 0) {          // the service closed it (gone, or this program stopped reading)
      errno = ECONNRESET;
      return -1;
    }
    if (static_cast<std::size_t>(n) != sizeof rec) {
      errno = EPROTO;
      return -1;
    }
    std::unique_lock l(r->mutex);
    const auto found = r->ids.find(rec.id);
    CmIdent* id = found == r->ids.end() ? nullptr : found->second;
    CmIdent* listener = nullptr;
    if (rec.event == RDMA_CM_EVENT_CONNECT_REQUEST && id == nullptr) {
      const auto l_it = r->ids.find(rec.listen_id);
      if (l_it == r->ids.end()) {  // the listener was destroyed meanwhile: the request is refused
        l.unlock();
        service::CmRequest q;
        service::CmReply rep;
        (void)call(rec.id, CmOp::DestroyId, q, rep);
        continue;
      }
      listener = l_it->second;
      id = passive_id(*listener, rec.id);
      id->owner = r;
      r->ids.emplace(rec.id, id);
    }
    if (id == nullptr) continue;  // the program destroyed the ID: its late events are dropped
    apply(*id, rec.snap);
    auto* box = new CmEventBox{};
    box->id = id;
    box->listen_id = listener;
    box->counted = listener ? listener : id;
    box->event = static_cast<rdma_cm_event_type>(rec.event);
    box->status = rec.status;
    if (rec.ud) {
      take_private(box->param.ud, *box, rec.conn);
      box->param.ud.ah_attr = rec.ah_attr;
      box->param.ud.qp_num = rec.ud_qp_num;
      box->param.ud.qkey = rec.ud_qkey;
    } else {
      rdma_conn_param& c = box->param.conn;
      take_private(c, *box, rec.conn);
      c.responder_resources = rec.conn.responder_resources;
      c.initiator_depth = rec.conn.initiator_depth;
      c.flow_control = rec.conn.flow_control;
      c.retry_count = rec.conn.retry_count;
      c.rnr_retry_count = rec.conn.rnr_retry_count;
      c.srq = rec.conn.srq;
      c.qp_num = rec.conn.qp_num;
    }
    {
      // Counted while the ID is still known (rdma_destroy_id forgets it under r->mutex, then
      // waits for its count to go back to 0).
      std::lock_guard cl(box->counted->ch->mutex);
      ++box->counted->unacked;
    }
    *event = box;
    return 0;
  }
}

int remote_create_id(CmChannel& ch, CmIdent& id) {
  if (!mine(ch.owner)) {
    errno = EINVAL;
    return -1;
  }
  service::CmRequest q;
  q.channel = ch.remote;
  q.ps = id.ps;
  service::CmReply rep;
  if (call(0, CmOp::CreateId, q, rep) != 0) return -1;
  Remote* r = remote();
  std::lock_guard l(r->mutex);
  id.remote = rep.handle;
  id.owner = r;
  apply(id, rep.id);
  r->ids.emplace(rep.handle, &id);
  return 0;
}

void remote_destroy_id(CmIdent& id) {
  if (!mine(id.owner)) return;  // the parent's (fork): the parent destroys it
  Remote* r = remote();
  if (r == nullptr) return;
  {
    std::lock_guard l(r->mutex);
    r->ids.erase(id.remote);
  }
  service::CmRequest q;
  service::CmReply rep;
  (void)call(id.remote, CmOp::DestroyId, q, rep);
}

int remote_call(CmIdent& id, CmOp op, service::CmRequest& q, service::CmReply* out) {
  if (!mine(id.owner)) {  // the parent's (fork)
    errno = EINVAL;
    return -1;
  }
  service::CmReply rep;
  if (call(id.remote, op, q, rep) != 0) return -1;
  {
    std::lock_guard l(remote()->mutex);  // as the event thread's apply
    apply(id, rep.id);
  }
  if (out) *out = rep;
  return 0;
}

int remote_attach_qp(CmIdent& id, ibv_qp* qp) {
  service::CmRequest q;
  q.qpn = qp->qp_num;
  id.qp = qp;  // so that the answer's QP state lands on it
  if (remote_call(id, CmOp::AttachQp, q) != 0) {
    const int err = errno;
    id.qp = nullptr;
    return err;
  }
  return 0;
}

void put_addr(service::CmAddr& to, const sockaddr* from) {
  to = {};
  if (from == nullptr) return;
  const std::size_t n = from->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : from->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr);
  std::memcpy(&to, from, std::min(n, sizeof to));
}

int put_conn(service::CmConnParam& to, const rdma_conn_param* from) {
  to = {};
  if (from == nullptr) return 0;
  if (from->private_data_len > service::kCmPrivateBytes || (from->private_data_len && from->private_data == nullptr)) return EINVAL;
  to.given = 1;
  to.responder_resources = from->responder_resources;
  to.initiator_depth = from->initiator_depth;
  to.flow_control = from->flow_control;
  to.retry_count = from->retry_count;
  to.rnr_retry_count = from->rnr_retry_count;
  to.srq = from->srq;
  to.qp_num = from->qp_num;
  to.private_len = from->private_data_len;
  if (to.private_len) std::memcpy(to.private_data, from->private_data, to.private_len);
  return 0;
}

}  // namespace roce::verbs
