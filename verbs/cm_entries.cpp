// librdmacm's entry points (rdma_cma.h) on the device's own RDMA CM (cm_port.hpp): event
// channels, IDs, address and route resolution, connect/listen/accept/reject/disconnect, the QP
// helpers and the event calls. Conventions are librdmacm's: 0 or -1 with errno, events taken
// with rdma_get_cm_event and given back with rdma_ack_cm_event, rdma_destroy_id waiting for its
// events' acknowledgements. docs/verbs.md lists what is refused and why.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "verbs/cm_port.hpp"
#include "verbs/cm_remote.hpp"
#include "verbs/export.hpp"
#include "verbs/objects.hpp"
#include "verbs/ops.hpp"

using namespace roce;
using namespace roce::verbs;
using service::CmOp;

namespace {

constexpr Nanos kMaxArpWait = 3 * kSecond;

int cm_fail(int err) {
  errno = err;
  return -1;
}

// The port a bound or connecting ID takes when given none (Linux's ephemeral range).
std::uint16_t ephemeral_port() {
  thread_local std::mt19937 gen{std::random_device{}()};
  return static_cast<std::uint16_t>(32768 + gen() % (60999 - 32768 + 1));
}

// The address of an AF_INET or AF_INET6 sockaddr (rdma_cm's two IP families).
std::optional<proto::IpAddress> ip_of(const sockaddr* sa) {
  if (sa == nullptr) return std::nullopt;
  if (sa->sa_family == AF_INET) {
    proto::Ipv4Addr a;
    std::memcpy(a.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return proto::IpAddress::of(a);
  }
  if (sa->sa_family == AF_INET6) {
    proto::Ipv6Addr a;
    std::memcpy(a.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    return proto::IpAddress::of(a);
  }
  return std::nullopt;
}

bool is_ip_family(const sockaddr* sa) { return sa->sa_family == AF_INET || sa->sa_family == AF_INET6; }

socklen_t sockaddr_bytes(const sockaddr* sa) { return sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in); }

std::uint16_t port_of(const sockaddr* sa) {
  if (sa == nullptr) return 0;
  if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  if (sa->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  return 0;
}


int family_of(const rdma::IpAddress& ip) { return ip.version == proto::IpVersion::V4 ? AF_INET : AF_INET6; }

rdma::IpAddress to_rdma(const proto::IpAddress& a) {
  return a.version == proto::IpVersion::V4 ? rdma::IpAddress::ipv4(a.v4) : rdma::IpAddress::ipv6(a.v6);
}

proto::IpAddress to_proto(const rdma::IpAddress& a) {
  return a.version == proto::IpVersion::V4 ? proto::IpAddress::of(a.v4) : proto::IpAddress::of(a.v6);
}

bool is_ours(CmPort& port, const proto::IpAddress& a) { return a.is_any() || a == to_proto(port.local_ip()); }

cm::Gid gid_of(const proto::IpAddress& a) {
  ibv_gid g = rdma::gid_from_ip(to_rdma(a));
  cm::Gid out;
  std::memcpy(out.data(), g.raw, 16);
  return out;
}

// A read/atomic depth a program asks for: RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH mean the
// device's most, anything else above it is EINVAL (as librdmacm's ucma_valid_param).
std::optional<std::uint8_t> depth(std::uint8_t asked, std::uint8_t device_max) {
  if (asked == 0xFF) return device_max;
  if (asked > device_max) return std::nullopt;
  return asked;
}

CmEventBox* local_event(CmIdent& id, rdma_cm_event_type type, int status) {
  auto* e = new CmEventBox{};
  e->id = &id;
  e->counted = &id;
  e->event = type;
  e->status = status;
  return e;
}

// The QP attributes rdma_init_qp_attr gives for the state asked in attr.qp_state.
int qp_attr_for(CmIdent& id, CmPort& port, ibv_qp_attr& attr, int& mask) {
  const ibv_qp_type type = id.qp ? id.qp->qp_type : id.qp_type;
  const ibv_qp_state want = attr.qp_state;
  attr = {};
  if (want == IBV_QPS_INIT) {
    if (type == IBV_QPT_UD) {
      rdma::QpTransition t = rdma::init_transition(type, 0, cm::kRdmaUdpQkey);
      attr = t.attr;
      mask = t.mask;
      return 0;
    }
    // Before the CM has a connection, no remote access (rdma_cm's default INIT); then remote
    // writes, and reads and atomics when this side takes any (IB CM's INIT attributes).
    int access = 0;
    if (id.cm) access = IBV_ACCESS_REMOTE_WRITE | (id.responder_resources ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
    rdma::QpTransition t = rdma::init_transition(type, access);
    attr = t.attr;
    mask = t.mask;
    return 0;
  }
  if (type == IBV_QPT_UD) {
    rdma::QpTransition t = want == IBV_QPS_RTR ? rdma::rtr_transition(type, {}) : rdma::rts_transition(type, rdma::SendSide{id.rq_psn});
    attr = t.attr;
    mask = t.mask;
    return want == IBV_QPS_RTR || want == IBV_QPS_RTS ? 0 : EINVAL;
  }
  cm::CmQpAttrs a;
  if (id.rep) {
    a = cm::active_qp_attrs(id.sent, *id.rep, port.limits());
  } else if (id.req) {
    a = cm::passive_qp_attrs(*id.req, id.rq_psn, port.limits());
    a.rtr.max_dest_rd_atomic = id.responder_resources;
    a.rts.max_rd_atomic = id.initiator_depth;
  } else {
    return EINVAL;  // no connection yet: nothing to tell
  }
  if (id.ack_timeout) a.rts.timeout = *id.ack_timeout;
  rdma::QpTransition t;
  if (want == IBV_QPS_RTR) t = rdma::rtr_transition(type, a.rtr);
  else if (want == IBV_QPS_RTS) t = rdma::rts_transition(type, a.rts);
  else return EINVAL;
  attr = t.attr;
  mask = t.mask;
  return 0;
}

// INIT (again, with the connection's access flags), RTR, RTS: what librdmacm does to a QP it
// made when the REP arrives (active) or at rdma_accept (passive).
int connect_qp(CmIdent& id, CmPort& port) {
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    ibv_qp_attr a{};
    a.qp_state = s;
    int mask = 0;
    if (int rc = qp_attr_for(id, port, a, mask)) return rc;
    if (int rc = ibv_modify_qp(id.qp, &a, mask)) return rc;
  }
  return 0;
}

// The event's private data lives in the box (the program reads it until it acks the event).
template <typename Param>
void fill_private(Param& p, CmEventBox& box, const std::vector<std::uint8_t>& data) {
  const std::size_t n = std::min(data.size(), sizeof box.private_data);
  if (n) std::memcpy(box.private_data, data.data(), n);
  p.private_data = n ? box.private_data : nullptr;
  p.private_data_len = static_cast<std::uint8_t>(n);
}

// A REQ's or a REP's values, as librdmacm gives them to the program (a REP has no retry count).
template <typename Info>
void fill_conn(rdma_conn_param& c, CmEventBox& box, const std::vector<std::uint8_t>& data, const Info& info) {
  fill_private(c, box, data);
  c.responder_resources = info.responder_resources;
  c.initiator_depth = info.initiator_depth;
  c.flow_control = info.flow_control;
  if constexpr (requires { info.retry_count; }) c.retry_count = info.retry_count;
  c.rnr_retry_count = info.rnr_retry_count;
  c.srq = info.srq;
  c.qp_num = info.remote_qpn;
}

// A UD event's parameters: the peer's address as an AH attribute (a global route, as RoCE
// needs), its QP and Q_Key, the private data.
void fill_ud(rdma_ud_param& u, CmEventBox& box, const std::vector<std::uint8_t>& data, const ibv_sa_path_rec& path,
             std::uint32_t qpn, std::uint32_t qkey) {
  fill_private(u, box, data);
  u.ah_attr = {};
  u.ah_attr.is_global = 1;
  u.ah_attr.grh.dgid = path.dgid;
  u.ah_attr.grh.hop_limit = path.hop_limit ? path.hop_limit : 64;
  u.ah_attr.grh.traffic_class = path.traffic_class;
  u.ah_attr.port_num = 1;
  u.qp_num = qpn;
  u.qkey = qkey;
}

// Takes an event's CM detail into the public event; false when the event is the library's
// own business (a REP whose QP the library moves: the ESTABLISHED after the RTU follows).
bool take(CmEventBox& box, CmPort& port) {
  if (!box.raw) return true;
  const cm::RdmaCmEvent& e = *box.raw;
  CmIdent& id = *static_cast<CmIdent*>(box.id);
  box.status = 0;
  rdma_conn_param& c = box.param.conn;
  switch (e.type) {
    case cm::RdmaCmEventType::ConnectRequest: {
      // The requester's MAC before the program answers (its RTR, a UD reply's AH), as the
      // kernel's CM resolves a request's sender (rdma_addr_find_l2_eth_by_grh). An IPv6 peer
      // that found us by neighbour discovery from its link-local address is not in the cache
      // under its RoCE address yet; an IPv4 one is (its ARP request taught us). Not found: the
      // program's RTR or AH says EHOSTUNREACH.
      (void)port.rt().resolve(rdma::ip_from_gid(id.path.dgid), kMaxArpWait);
      if (std::holds_alternative<cm::SidrReqInfo>(e.detail)) {  // UD: a SIDR_REQ, no QP of the peer's
        box.event = RDMA_CM_EVENT_CONNECT_REQUEST;
        fill_ud(box.param.ud, box, e.private_data, id.path, 0, 0);
        return true;
      }
      const auto& req = std::get<cm::ReqInfo>(e.detail);
      box.event = RDMA_CM_EVENT_CONNECT_REQUEST;
      fill_conn(c, box, e.private_data, req);
      return true;
    }
    case cm::RdmaCmEventType::ConnectResponse: {
      const auto& rep = std::get<cm::RepInfo>(e.detail);
      id.rep = rep;
      id.rep_private = e.private_data;
      if (id.qp) {
        // librdmacm's way: the QP to RTS, the RTU, and the program gets ESTABLISHED for the REP.
        int rc = connect_qp(id, port);
        if (rc == 0) {
          EngineGuard g(port.rt().lock());
          if (!id.cm) return false;  // the peer gave up meanwhile: its event follows
          const cm::CmId cid = *id.cm;
          id.swallow_established = true;
          Status s = port.agent().run(port.now(), [&](cm::RdmaCm&, cm::CommunicationManager& m, cm::CmOutput& out) {
            return m.ready_to_use(cid, port.now(), out);
          });
          if (s.ok()) {
            move_to(id, CmIdState::Connected);
            box.event = RDMA_CM_EVENT_ESTABLISHED;
            fill_conn(c, box, e.private_data, rep);
            return true;
          }
          id.swallow_established = false;
          rc = s.code();
        }
        {
          EngineGuard g(port.rt().lock());
          if (id.cm) (void)port.agent().reject(*id.cm, {}, port.now());
        }
        move_to(id, CmIdState::Disconnected);
        box.event = RDMA_CM_EVENT_CONNECT_ERROR;
        box.status = -rc;
        return true;
      }
      move_to(id, CmIdState::ConnectResponse);
      box.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
      fill_conn(c, box, e.private_data, rep);
      return true;
    }
    case cm::RdmaCmEventType::Established:
      if (const auto* rep = std::get_if<cm::SidrRepInfo>(&e.detail)) {  // UD: the service's QP and Q_Key
        move_to(id, CmIdState::Connected);
        box.event = RDMA_CM_EVENT_ESTABLISHED;
        fill_ud(box.param.ud, box, e.private_data, id.path, rep->qpn, rep->qkey);
        return true;
      }
      move_to(id, CmIdState::Connected);
      box.event = RDMA_CM_EVENT_ESTABLISHED;
      if (id.rep) {
        fill_conn(c, box, id.rep_private, *id.rep);
      }
      return true;
    case cm::RdmaCmEventType::Rejected:
      move_to(id, CmIdState::Disconnected);
      if (std::holds_alternative<cm::SidrRepInfo>(e.detail)) {
        // A SIDR_REP refusing: the kernel's rdma_cm reports it as UNREACHABLE with the SIDR status.
        box.event = RDMA_CM_EVENT_UNREACHABLE;
        box.status = e.status;
        return true;
      }
      box.event = RDMA_CM_EVENT_REJECTED;
      box.status = e.status;
      // Only a consumer's refusal carries the peer's private data to the program.
      if (e.status == static_cast<std::uint16_t>(proto::RejReason::ConsumerDefined)) fill_private(c, box, e.private_data);
      return true;
    case cm::RdmaCmEventType::Unreachable:
      move_to(id, CmIdState::Disconnected);
      box.event = RDMA_CM_EVENT_UNREACHABLE;
      box.status = -ETIMEDOUT;
      return true;
    case cm::RdmaCmEventType::ConnectError:
      move_to(id, CmIdState::Disconnected);
      box.event = RDMA_CM_EVENT_CONNECT_ERROR;
      box.status = -ETIMEDOUT;
      return true;
    case cm::RdmaCmEventType::Disconnected:
      move_to(id, CmIdState::Disconnected);
      box.event = RDMA_CM_EVENT_DISCONNECTED;
      return true;
    case cm::RdmaCmEventType::TimewaitExit:
      box.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
      return true;
    case cm::RdmaCmEventType::Count: break;
  }
  return false;
}

// Consumes one count of the channel's eventfd without blocking (an event removed unread).
void drop_count(CmChannel& ch) {
  pollfd p{ch.fd, POLLIN, 0};
  if (::poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
    const int flags = ::fcntl(ch.fd, F_GETFL);
    ::fcntl(ch.fd, F_SETFL, flags | O_NONBLOCK);
    std::uint64_t v;
    [[maybe_unused]] const auto n = ::read(ch.fd, &v, sizeof v);
    ::fcntl(ch.fd, F_SETFL, flags);
  }
}

// A destroyed channel's memory is kept (it is small, and a program destroys few): programs
// such as rping leave a detached thread looping on rdma_get_cm_event, which may call once more
// after the main thread destroyed the channel on its way out. Under librdmacm that thread stays
// blocked in the kernel; here it blocks too, instead of failing and making the program exit 255.
// Never freed, not even by exit's static destructors: rping's CM thread may come back while
// the process runs its exit handlers (the runtime's DREQ flush takes up to 100 ms), and a freed
// channel would read as garbage (EINVAL, rping exits 255) instead of as closed.
void retire(CmChannel* ch) {
  static auto* mutex = new std::mutex;
  static auto* kept = new std::vector<CmChannel*>;  // reachable, so a leak checker stays quiet
  ch->magic = CmMagic::ClosedChannel;
  std::lock_guard l(*mutex);
  kept->push_back(ch);
}

bool is_closed(const rdma_event_channel* channel) {
  return channel != nullptr && static_cast<const CmChannel*>(channel)->magic == CmMagic::ClosedChannel;
}

[[noreturn]] void block_on_closed_channel() {
  for (;;) ::pause();
}

}  // namespace

// --- event channels ---

ROCE_VERBS_EXPORT rdma_event_channel* rdma_create_event_channel() {
  if (cm_served()) return remote_create_channel();  // the channel's socket, from the service
  if (CmPort::get() == nullptr) return nullptr;  // errno: no device, as librdmacm's ENODEV
  auto* ch = new CmChannel{};
  ch->fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (ch->fd < 0) {
    const int err = errno;
    ch->magic = CmMagic::Dead;
    delete ch;
    errno = err;
    return nullptr;
  }
  return ch;
}

ROCE_VERBS_EXPORT void rdma_destroy_event_channel(rdma_event_channel* channel) {
  CmChannel* ch = to_cm_channel(channel);
  if (ch == nullptr) return;
  {
    std::lock_guard l(ch->mutex);
    // IDs still on it would post to freed memory: librdmacm's rule is IDs first. Keep it.
    if (ch->ids) {
      report("rdma_destroy_event_channel: the channel still has " + std::to_string(ch->ids) +
             " rdma_cm IDs; it is left in place (destroy the IDs first)");
      return;
    }
    for (CmEventBox* e : ch->queue) {
      e->magic = CmMagic::Dead;
      delete e;
    }
    ch->queue.clear();
  }
  // Marked closed before the descriptor goes: a thread in rdma_get_cm_event whose read then
  // fails (EBADF, or another file that took the number: EINVAL from an epoll or inotify fd; in
  // service mode the end of the socket the service closes) sees the mark and blocks instead of
  // returning that error.
  const int fd = ch->fd;
  retire(ch);
  if (ch->remote) remote_destroy_channel(*ch);
  ch->fd = -1;
  ::close(fd);
}

ROCE_VERBS_EXPORT int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (is_closed(channel)) block_on_closed_channel();
  CmChannel* ch = to_cm_channel(channel);
  // Closed between the two looks (rping's main thread tearing down while its CM thread comes
  // back for the next event: seen live as "rdma_get_cm_event: Invalid argument", exit 255).
  if (ch == nullptr && is_closed(channel)) block_on_closed_channel();
  if (ch == nullptr || event == nullptr) return cm_fail(EINVAL);
  if (ch->remote) {
    const int rc = remote_get_event(*ch, event);
    if (rc != 0 && is_closed(channel)) block_on_closed_channel();
    return rc;
  }
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  for (;;) {
    std::uint64_t v;
    if (::read(ch->fd, &v, sizeof v) != sizeof v) {
      if (errno == EINTR) continue;
      if (is_closed(channel)) block_on_closed_channel();
      return -1;  // EAGAIN on a non-blocking channel, as librdmacm's read of its fd
    }
    CmEventBox* box = nullptr;
    {
      std::lock_guard l(ch->mutex);
      if (ch->queue.empty()) continue;  // its ID was destroyed after the count was posted
      box = ch->queue.front();
      ch->queue.pop_front();
    }
    if (!take(*box, *port)) {
      box->magic = CmMagic::Dead;
      delete box;
      continue;
    }
    {
      std::lock_guard l(ch->mutex);
      ++box->counted->unacked;
    }
    *event = box;
    return 0;
  }
}

ROCE_VERBS_EXPORT int rdma_ack_cm_event(rdma_cm_event* event) {
  CmEventBox* box = to_cm_event(event);
  if (box == nullptr) return cm_fail(EINVAL);
  CmChannel* ch = box->counted->ch;
  {
    std::lock_guard l(ch->mutex);
    --box->counted->unacked;
  }
  ch->acked.notify_all();
  box->magic = CmMagic::Dead;
  delete box;
  return 0;
}

ROCE_VERBS_EXPORT const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}

// --- IDs ---

ROCE_VERBS_EXPORT int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
  if (id == nullptr) return cm_fail(EINVAL);
  // Without a channel the ID is synchronous (librdmacm): a private channel, and its calls wait.
  const bool sync = channel == nullptr;
  if (sync && ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB) return cm_fail(ps == RDMA_PS_IB ? EAFNOSUPPORT : EINVAL);
  if (sync && (channel = rdma_create_event_channel()) == nullptr) return -1;
  CmChannel* ch = to_cm_channel(channel);
  if (ch == nullptr) return cm_fail(EINVAL);
  ibv_qp_type type;
  switch (ps) {
    case RDMA_PS_TCP: type = IBV_QPT_RC; break;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB: type = IBV_QPT_UD; break;
    case RDMA_PS_IB: return cm_fail(EAFNOSUPPORT);  // AF_IB addressing: IB fabrics only
    default: return cm_fail(EINVAL);
  }
  auto* i = new CmIdent{};
  i->channel = channel;
  i->ch = ch;
  i->context = context;
  i->ps = ps;
  i->qp_type = type;
  i->rq_psn = random_psn();
  i->sync = sync;
  if (ch->remote && remote_create_id(*ch, *i) != 0) {
    const int err = errno;
    i->magic = CmMagic::Dead;
    delete i;
    if (sync) rdma_destroy_event_channel(channel);
    return cm_fail(err);
  }
  {
    std::lock_guard l(ch->mutex);
    ++ch->ids;
  }
  *id = i;
  return 0;
}

// Either family: the device's own address, or a wildcard of either family (the device has one
// address, so a listener on "::" or "0.0.0.0" hears every request to its port, as a dual-stack
// AF_INET6 listener does under Linux). Another address is EADDRNOTAVAIL.
ROCE_VERBS_EXPORT int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || addr == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    put_addr(q.src, addr);
    return remote_call(*i, CmOp::BindAddr, q);
  }
  if (i->state != CmIdState::Idle) return cm_fail(EINVAL);
  if (!is_ip_family(addr)) return cm_fail(EAFNOSUPPORT);  // AF_IB: IB fabrics only
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  const auto ip = ip_of(addr);
  if (!is_ours(*port, *ip)) return cm_fail(EADDRNOTAVAIL);
  std::memset(&i->route.addr.src_storage, 0, sizeof i->route.addr.src_storage);
  std::memcpy(&i->route.addr.src_storage, addr, sockaddr_bytes(addr));
  if (port_of(addr) == 0) set_sockaddr(i->route.addr.src_storage, to_rdma(*ip), ephemeral_port());
  // Bound to the device's address: its device is known (librdmacm leaves verbs NULL for a wildcard).
  if (!ip->is_any()) {
    i->verbs = port->verbs();
    i->port_num = 1;
  }
  move_to(*i, CmIdState::AddrBound);
  return 0;
}

ROCE_VERBS_EXPORT int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr, int timeout_ms) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || dst_addr == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    put_addr(q.src, src_addr);
    put_addr(q.dst, dst_addr);
    q.timeout_ms = timeout_ms;
    return remote_call(*i, CmOp::ResolveAddr, q) == 0 ? sync_complete(*i) : -1;
  }
  const CmIdState s = i->state;
  if (s != CmIdState::Idle && s != CmIdState::AddrBound && s != CmIdState::AddrResolved) return cm_fail(EINVAL);
  if (!is_ip_family(dst_addr) || (src_addr && !is_ip_family(src_addr))) return cm_fail(EAFNOSUPPORT);
  // A source of another family than the destination: the kernel's rdma_resolve_addr says EINVAL.
  if (src_addr && src_addr->sa_family != dst_addr->sa_family) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  const rdma::IpAddress local = port->local_ip();
  // The device has one address: a peer of the other family has no route from it.
  if (dst_addr->sa_family != family_of(local)) return cm_fail(EAFNOSUPPORT);
  if (s == CmIdState::Idle) {
    if (src_addr && !is_ours(*port, *ip_of(src_addr))) return cm_fail(EADDRNOTAVAIL);
    // The source is the device's address (a wildcard source means it too).
    const std::uint16_t p = src_addr ? port_of(src_addr) : 0;
    set_sockaddr(i->route.addr.src_storage, local, p ? p : ephemeral_port());
  } else if (ip_of(&i->route.addr.src_addr)->is_any()) {
    set_sockaddr(i->route.addr.src_storage, local, port_of(&i->route.addr.src_addr));
  }
  std::memset(&i->route.addr.dst_storage, 0, sizeof i->route.addr.dst_storage);
  std::memcpy(&i->route.addr.dst_storage, dst_addr, sockaddr_bytes(dst_addr));
  i->verbs = port->verbs();
  i->port_num = 1;
  // The peer's MAC, as the kernel's address resolution finds the neighbour (ARP for IPv4,
  // neighbour discovery for IPv6): the answer comes as ADDR_RESOLVED or ADDR_ERROR on the channel.
  const auto dst = ip_of(dst_addr);
  const Nanos wait = std::clamp<Nanos>(static_cast<Nanos>(timeout_ms) * kMilli, 10 * kMilli, kMaxArpWait);
  const bool found = port->rt().resolve(to_rdma(*dst), wait).has_value();
  if (found) move_to(*i, CmIdState::AddrResolved);
  post_event(*i->ch, local_event(*i, found ? RDMA_CM_EVENT_ADDR_RESOLVED : RDMA_CM_EVENT_ADDR_ERROR, found ? 0 : -ETIMEDOUT));
  return sync_complete(*i);
}

ROCE_VERBS_EXPORT int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    q.timeout_ms = timeout_ms;
    return remote_call(*i, CmOp::ResolveRoute, q) == 0 ? sync_complete(*i) : -1;
  }
  if (i->state != CmIdState::AddrResolved) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  // RoCE: the route is the GIDs of the two addresses (rdma_cm's cma_resolve_iboe_route).
  const auto src = ip_of(&i->route.addr.src_addr);
  const auto dst = ip_of(&i->route.addr.dst_addr);
  const cm::Gid sg = gid_of(*src), dg = gid_of(*dst);
  std::memcpy(i->path.sgid.raw, sg.data(), 16);
  std::memcpy(i->path.dgid.raw, dg.data(), 16);
  i->path.pkey = htons(0xFFFF);
  i->path.hop_limit = 64;
  i->path.traffic_class = i->tos;
  i->path.mtu = port->limits().max_mtu;
  i->path.packet_life_time = 18;
  i->route.path_rec = &i->path;
  i->route.num_paths = 1;
  move_to(*i, CmIdState::RouteResolved);
  post_event(*i->ch, local_event(*i, RDMA_CM_EVENT_ROUTE_RESOLVED, 0));
  return sync_complete(*i);
}

ROCE_VERBS_EXPORT int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || optval == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    if (optlen > sizeof q.optval) return cm_fail(level != RDMA_OPTION_ID ? ENOSYS : EINVAL);
    q.level = level;
    q.optname = optname;
    q.optlen = static_cast<std::uint32_t>(optlen);
    std::memcpy(q.optval, optval, optlen);
    return remote_call(*i, CmOp::SetOption, q);
  }
  if (level != RDMA_OPTION_ID) return cm_fail(ENOSYS);  // RDMA_OPTION_IB_PATH: IB path records
  switch (optname) {
    case RDMA_OPTION_ID_TOS:
      if (optlen != sizeof(std::uint8_t)) return cm_fail(EINVAL);
      i->tos = *static_cast<std::uint8_t*>(optval);
      return 0;
    case RDMA_OPTION_ID_ACK_TIMEOUT:
      if (optlen != sizeof(std::uint8_t)) return cm_fail(EINVAL);
      i->ack_timeout = std::min<std::uint8_t>(*static_cast<std::uint8_t*>(optval), 31);
      return 0;
    case RDMA_OPTION_ID_REUSEADDR:
    case RDMA_OPTION_ID_AFONLY:
      // One address per device and no port reservations outside listeners: nothing to change.
      if (optlen != sizeof(int)) return cm_fail(EINVAL);
      return 0;
    default: return cm_fail(ENOSYS);
  }
}

ROCE_VERBS_EXPORT int rdma_listen(rdma_cm_id* id, int backlog) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    q.backlog = backlog;
    return remote_call(*i, CmOp::Listen, q);
  }
  if (i->state != CmIdState::AddrBound) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  const std::size_t queue = backlog > 0 ? static_cast<std::size_t>(backlog) : 1024;
  EngineGuard g(port->rt().lock());
  auto l = port->agent().listen(to_proto(i->ps), port_of(&i->route.addr.src_addr), queue);
  if (!l) return cm_fail(l.error().code);
  i->listen = *l;
  port->track_listener(*l, i);
  move_to(*i, CmIdState::Listening);
  return 0;
}

// A call that carries an rdma_conn_param (connect, accept) to the service.
static int remote_conn_call(CmIdent& i, CmOp op, const rdma_conn_param* param) {
  service::CmRequest q;
  if (int rc = put_conn(q.conn, param)) return cm_fail(rc);
  return remote_call(i, op, q);
}

static int connect_async(rdma_cm_id* id, rdma_conn_param* param) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) return remote_conn_call(*i, CmOp::Connect, param);
  if (i->state != CmIdState::RouteResolved) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  if (is_ud(i->ps)) {
    // UD: a SIDR_REQ asks the service for its QP and Q_Key (ESTABLISHED carries them).
    if (param && (param->private_data_len > cm::kRdmaUdResolvePrivateBytes || (param->private_data_len && !param->private_data)))
      return cm_fail(EINVAL);
    cm::RdmaUdResolveParams u;
    u.port_space = to_proto(i->ps);
    u.src = *ip_of(&i->route.addr.src_addr);
    u.dst = *ip_of(&i->route.addr.dst_addr);
    u.src_port = port_of(&i->route.addr.src_addr);
    u.dst_port = port_of(&i->route.addr.dst_addr);
    if (param && param->private_data_len) {
      const auto* d = static_cast<const std::uint8_t*>(param->private_data);
      u.private_data.assign(d, d + param->private_data_len);
    }
    EngineGuard g(port->rt().lock());
    const Nanos now = port->now();
    auto cid = port->agent().run(now, [&](cm::RdmaCm& r, cm::CommunicationManager&, cm::CmOutput& out) { return r.resolve_ud(u, now, out); });
    if (!cid) return cm_fail(cid.error().code);
    i->cm = *cid;
    i->resolve_params = std::move(u);
    i->connect_deadline = now + CmPort::kNoListenerWindow;
    port->track(*cid, i);
    move_to(*i, CmIdState::Connecting);
    return 0;
  }
  rdma_conn_param defaults{};
  defaults.retry_count = 7;
  defaults.rnr_retry_count = 7;
  const rdma_conn_param& c = param ? *param : defaults;
  const std::uint32_t qpn = i->qp ? i->qp->qp_num : c.qp_num;
  if (qpn == 0) return cm_fail(EINVAL);
  if (c.private_data_len > cm::kRdmaConnectPrivateBytes || (c.private_data_len && c.private_data == nullptr))
    return cm_fail(EINVAL);
  const std::uint8_t max = port->limits().max_rd_atomic;
  const auto rr = depth(c.responder_resources, max), idd = depth(c.initiator_depth, max);
  if (!rr || !idd) return cm_fail(EINVAL);
  cm::RdmaConnectParams p;
  p.port_space = proto::RdmaPortSpace::Tcp;
  p.src = *ip_of(&i->route.addr.src_addr);
  p.dst = *ip_of(&i->route.addr.dst_addr);
  p.src_port = port_of(&i->route.addr.src_addr);
  p.dst_port = port_of(&i->route.addr.dst_addr);
  cm::ConnectParams& ib = p.ib;
  ib.path.local_gid = gid_of(p.src);
  ib.path.remote_gid = gid_of(p.dst);
  ib.path.traffic_class = i->tos;
  ib.local_qpn = qpn;
  ib.starting_psn = i->rq_psn;
  ib.transport = (i->qp ? i->qp->qp_type : i->qp_type) == IBV_QPT_UC ? proto::CmTransport::Uc : proto::CmTransport::Rc;
  ib.responder_resources = *rr;
  ib.initiator_depth = *idd;
  ib.retry_count = std::min<std::uint8_t>(c.retry_count, 7);
  ib.rnr_retry_count = std::min<std::uint8_t>(c.rnr_retry_count, 7);
  ib.path_mtu = static_cast<proto::PathMtu>(port->limits().max_mtu);
  ib.srq = i->qp ? i->qp->srq != nullptr : c.srq != 0;
  ib.flow_control = c.flow_control != 0;
  if (c.private_data_len) {
    const auto* d = static_cast<const std::uint8_t*>(c.private_data);
    p.private_data.assign(d, d + c.private_data_len);
  }
  i->sent = ib;
  i->responder_resources = *rr;
  i->initiator_depth = *idd;
  EngineGuard g(port->rt().lock());
  const Nanos now = port->now();
  auto cid = port->agent().run(now, [&](cm::RdmaCm& r, cm::CommunicationManager&, cm::CmOutput& out) { return r.connect(p, now, out); });
  if (!cid) return cm_fail(cid.error().code);
  i->cm = *cid;
  i->connect_params = std::move(p);
  i->connect_deadline = now + CmPort::kNoListenerWindow;
  port->track(*cid, i);
  move_to(*i, CmIdState::Connecting);
  return 0;
}

ROCE_VERBS_EXPORT int rdma_connect(rdma_cm_id* id, rdma_conn_param* param) {
  if (int rc = connect_async(id, param)) return rc;
  return sync_complete(*to_cm_id(id));
}

static int accept_async(rdma_cm_id* id, rdma_conn_param* param) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) return remote_conn_call(*i, CmOp::Accept, param);
  if (i->state != CmIdState::RequestReceived || !(i->req || i->sidr)) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  if (i->sidr) {
    // UD: the SIDR_REP names our QP and rdma_cm's Q_Key; the QP is already in RTS.
    const std::uint32_t qpn = i->qp ? i->qp->qp_num : (param ? param->qp_num : 0);
    if (qpn == 0) return cm_fail(EINVAL);
    if (param && (param->private_data_len > proto::kCmSidrRepPrivateBytes || (param->private_data_len && !param->private_data)))
      return cm_fail(EINVAL);
    std::span<const std::uint8_t> data;
    if (param && param->private_data_len) data = {static_cast<const std::uint8_t*>(param->private_data), param->private_data_len};
    EngineGuard g(port->rt().lock());
    if (!i->cm) return cm_fail(ECONNABORTED);
    if (Status s = port->agent().accept_ud(*i->cm, qpn, cm::kRdmaUdpQkey, data, port->now()); !s) return cm_fail(s.code());
    move_to(*i, CmIdState::Connected);
    return 0;
  }
  const cm::ReqInfo& req = *i->req;
  const std::uint8_t max = port->limits().max_rd_atomic;
  std::uint8_t rr = req.responder_resources, idd = req.initiator_depth;
  if (param) {
    const auto r = depth(param->responder_resources, max), d = depth(param->initiator_depth, max);
    if (!r || !d) return cm_fail(EINVAL);
    if (param->private_data_len > proto::kCmRepPrivateBytes || (param->private_data_len && param->private_data == nullptr))
      return cm_fail(EINVAL);
    rr = std::min(rr, *r);
    idd = std::min(idd, *d);
  }
  // Never more than the peer sends at once or takes at once, never more than the device does.
  i->responder_resources = std::min(rr, max);
  i->initiator_depth = std::min(idd, max);
  const std::uint32_t qpn = i->qp ? i->qp->qp_num : (param ? param->qp_num : 0);
  if (qpn == 0) return cm_fail(EINVAL);
  if (i->qp) {
    if (int rc = connect_qp(*i, *port)) {
      EngineGuard g(port->rt().lock());
      if (i->cm) (void)port->agent().reject(*i->cm, {}, port->now());
      move_to(*i, CmIdState::Disconnected);
      return cm_fail(rc);
    }
  }
  cm::AcceptParams a;
  a.local_qpn = qpn;
  a.starting_psn = i->rq_psn;
  a.responder_resources = i->responder_resources;
  a.initiator_depth = i->initiator_depth;
  a.rnr_retry_count = param ? std::min<std::uint8_t>(param->rnr_retry_count, 7) : 7;
  a.flow_control = param && param->flow_control;
  a.srq = i->qp ? i->qp->srq != nullptr : (param && param->srq);
  if (param && param->private_data_len) {
    const auto* d = static_cast<const std::uint8_t*>(param->private_data);
    a.private_data.assign(d, d + param->private_data_len);
  }
  EngineGuard g(port->rt().lock());
  if (!i->cm) return cm_fail(ECONNABORTED);  // the peer gave up meanwhile
  if (Status s = port->agent().accept(*i->cm, a, port->now()); !s) return cm_fail(s.code());
  move_to(*i, CmIdState::Accepting);
  return 0;
}

// A synchronous passive ID waits for ESTABLISHED (UD: the SIDR_REP is all there is).
ROCE_VERBS_EXPORT int rdma_accept(rdma_cm_id* id, rdma_conn_param* param) {
  if (int rc = accept_async(id, param)) return rc;
  CmIdent* i = to_cm_id(id);
  return i->sidr || (i->remote && is_ud(i->ps)) ? 0 : sync_complete(*i);
}

ROCE_VERBS_EXPORT int rdma_reject(rdma_cm_id* id, const void* private_data, std::uint8_t private_data_len) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    if (private_data_len && private_data == nullptr) return cm_fail(EINVAL);
    rdma_conn_param p{};
    p.private_data = private_data;
    p.private_data_len = private_data_len;
    return remote_conn_call(*i, CmOp::Reject, &p);
  }
  const CmIdState s = i->state;
  if (s != CmIdState::RequestReceived && s != CmIdState::ConnectResponse) return cm_fail(EINVAL);
  if (private_data_len > proto::kCmRejPrivateBytes || (private_data_len && private_data == nullptr)) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  const auto* d = static_cast<const std::uint8_t*>(private_data);
  EngineGuard g(port->rt().lock());
  if (!i->cm) return cm_fail(ECONNABORTED);
  if (Status st = port->agent().reject(*i->cm, std::span<const std::uint8_t>(d, private_data_len), port->now()); !st)
    return cm_fail(st.code());
  move_to(*i, CmIdState::Disconnected);
  return 0;
}

ROCE_VERBS_EXPORT int rdma_establish(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    return remote_call(*i, CmOp::Establish, q);
  }
  if (i->state != CmIdState::ConnectResponse) return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  EngineGuard g(port->rt().lock());
  if (!i->cm) return cm_fail(ECONNABORTED);
  const cm::CmId cid = *i->cm;
  const Nanos now = port->now();
  i->swallow_established = true;  // the program already had CONNECT_RESPONSE
  Status s = port->agent().run(now, [&](cm::RdmaCm&, cm::CommunicationManager& m, cm::CmOutput& out) { return m.ready_to_use(cid, now, out); });
  if (!s) {
    i->swallow_established = false;
    return cm_fail(s.code());
  }
  move_to(*i, CmIdState::Connected);
  return 0;
}

ROCE_VERBS_EXPORT int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (event != IBV_EVENT_COMM_EST) return 0;  // the other QP events mean nothing to the CM
  if (i->remote) {
    service::CmRequest q;
    q.notify_event = event;
    return remote_call(*i, CmOp::Notify, q);
  }
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  EngineGuard g(port->rt().lock());
  if (!i->cm) return cm_fail(EINVAL);
  const cm::CmId cid = *i->cm;
  const Nanos now = port->now();
  Status s = port->agent().run(now, [&](cm::RdmaCm&, cm::CommunicationManager& m, cm::CmOutput& out) { return m.notify_established(cid, now, out); });
  return s ? 0 : cm_fail(s.code());
}

// A DISCONNECTED of the ID waits on its channel (the peer's DREQ came, the program has not
// taken the event yet).
static bool disconnected_queued(CmIdent& i) {
  std::lock_guard l(i.ch->mutex);
  return std::any_of(i.ch->queue.begin(), i.ch->queue.end(), [&i](const CmEventBox* e) {
    return e->counted == &i && e->raw && e->raw->type == cm::RdmaCmEventType::Disconnected;
  });
}

static int disconnect_async(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) {  // the service stops the QP and sends the DREQ; its QP's state comes back
    service::CmRequest q;
    return remote_call(*i, CmOp::Disconnect, q);
  }
  const CmIdState s = i->state;
  if (s != CmIdState::Connected && s != CmIdState::Accepting && s != CmIdState::ConnectResponse && s != CmIdState::Disconnected)
    return cm_fail(EINVAL);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  // The QP stops first (its posted receives flush), then the DREQ goes, as librdmacm does.
  if (i->qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)ibv_modify_qp(i->qp, &a, IBV_QP_STATE);
  }
  EngineGuard g(port->rt().lock());
  move_to(*i, CmIdState::Disconnected);
  if (!i->cm) return 0;  // the CM is already done with the connection
  const cm::CmId cid = *i->cm;
  const Nanos now = port->now();
  Status st = port->agent().run(now, [&](cm::RdmaCm&, cm::CommunicationManager& m, cm::CmOutput& out) { return m.disconnect(cid, now, out); });
  // The peer's DREQ came first (answered at once): the connection is over all the same, whether
  // or not the program has taken that DISCONNECTED yet.
  if (!st && s != CmIdState::Disconnected && !disconnected_queued(*i)) return cm_fail(st.code());
  return 0;
}

// A synchronous ID waits for its DISCONNECTED: the one the DREP (or the DREQ timing out) brings,
// or the one the peer's DREQ brought before, if the program has not taken it yet.
ROCE_VERBS_EXPORT int rdma_disconnect(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  const bool was_connected = i && i->state != CmIdState::Disconnected;
  if (int rc = disconnect_async(id)) return rc;
  if (!i->sync) return 0;
  bool queued;
  if (i->remote) {
    queued = remote_event_waiting(*i->ch);
  } else {
    std::lock_guard l(i->ch->mutex);
    queued = !i->ch->queue.empty();
  }
  return was_connected || queued ? sync_complete(*i) : 0;
}

// Service mode: the service destroys its ID (sending what its state asks); events of it still
// on the channel's socket are dropped when read, those handed out must be acknowledged first.
static int destroy_remote_id(CmIdent* i) {
  if (i->event) {
    rdma_ack_cm_event(i->event);
    i->event = nullptr;
  }
  rdma_event_channel* own = i->sync ? i->channel : nullptr;
  CmChannel& ch = *i->ch;
  remote_destroy_id(*i);
  {
    std::unique_lock l(ch.mutex);
    ch.acked.wait(l, [i] { return i->unacked == 0; });
    --ch.ids;
  }
  i->magic = CmMagic::Dead;
  delete i;
  if (own) rdma_destroy_event_channel(own);
  return 0;
}

ROCE_VERBS_EXPORT int rdma_destroy_id(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  if (i->remote) return destroy_remote_id(i);
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  if (i->event) {  // a synchronous ID's last event (librdmacm acknowledges it here too)
    rdma_ack_cm_event(i->event);
    i->event = nullptr;
  }
  const bool sync = i->sync;
  rdma_event_channel* own = sync ? i->channel : nullptr;
  CmChannel& ch = *i->ch;
  std::vector<CmIdent*> orphans;  // passive IDs of this listener's requests not yet taken
  {
    EngineGuard g(port->rt().lock());
    const Nanos now = port->now();
    if (i->listen) (void)port->agent().rdma().stop_listening(*i->listen);
    if (i->cm) {
      const cm::CmId cid = *i->cm;
      if (i->state == CmIdState::RequestReceived) (void)port->agent().reject(cid, {}, now);
      else
        port->agent().run(now, [&](cm::RdmaCm&, cm::CommunicationManager& m, cm::CmOutput& out) {
          m.destroy(cid, now, out);
          return 0;
        });
    }
    port->forget(i);
    std::lock_guard l(ch.mutex);
    for (auto it = ch.queue.begin(); it != ch.queue.end();) {
      CmEventBox* e = *it;
      if (e->counted != i && e->id != i) {
        ++it;
        continue;
      }
      if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST || (e->raw && e->raw->type == cm::RdmaCmEventType::ConnectRequest))
        if (e->id != i) orphans.push_back(static_cast<CmIdent*>(e->id));
      e->magic = CmMagic::Dead;
      delete e;
      it = ch.queue.erase(it);
      drop_count(ch);
    }
    for (CmIdent* o : orphans) {
      if (o->cm) (void)port->agent().reject(*o->cm, {}, now);
      port->forget(o);
    }
  }
  std::unique_lock l(ch.mutex);
  // Events handed out must be acknowledged first (librdmacm blocks the same way).
  ch.acked.wait(l, [i] { return i->unacked == 0; });
  ch.ids -= 1 + static_cast<std::uint32_t>(orphans.size());
  l.unlock();
  for (CmIdent* o : orphans) {
    o->magic = CmMagic::Dead;
    delete o;
  }
  i->magic = CmMagic::Dead;
  delete i;
  if (own) rdma_destroy_event_channel(own);
  return 0;
}

ROCE_VERBS_EXPORT int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr) return cm_fail(EINVAL);
  // To no channel: the ID becomes synchronous, on a private channel of its own.
  const bool to_sync = channel == nullptr;
  if (to_sync && i->sync) return 0;
  if (to_sync && (channel = rdma_create_event_channel()) == nullptr) return -1;
  if (i->sync && i->event) {  // leaving synchronous mode: its kept event is done with
    rdma_ack_cm_event(i->event);
    i->event = nullptr;
  }
  CmChannel* to = to_cm_channel(channel);
  if (to == nullptr) return cm_fail(EINVAL);
  CmChannel* from = i->ch;
  if (to == from) return 0;
  if (i->remote) {
    // The service's ID moves to the service's side of the channel; this side's counts follow.
    {
      std::unique_lock l(from->mutex);
      from->acked.wait(l, [i] { return i->unacked == 0; });
    }
    service::CmRequest q;
    q.channel = to->remote;
    if (remote_call(*i, CmOp::Migrate, q) != 0) return -1;
    {
      std::lock_guard l(from->mutex);
      --from->ids;
    }
    {
      std::lock_guard l(to->mutex);
      ++to->ids;
    }
    rdma_event_channel* old_private = i->sync && !to_sync ? from : nullptr;
    i->ch = to;
    i->channel = channel;
    i->sync = to_sync;
    if (old_private) rdma_destroy_event_channel(old_private);
    return 0;
  }
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  // The router posts under the engine lock: holding it, no event of the ID is in flight.
  EngineGuard g(port->rt().lock());
  std::vector<CmEventBox*> moving;
  {
    std::unique_lock l(from->mutex);
    from->acked.wait(l, [i] { return i->unacked == 0; });
    for (auto it = from->queue.begin(); it != from->queue.end();) {
      if ((*it)->counted == i) {
        moving.push_back(*it);
        it = from->queue.erase(it);
        drop_count(*from);
      } else {
        ++it;
      }
    }
    --from->ids;
  }
  {
    std::lock_guard l(to->mutex);
    ++to->ids;
  }
  i->ch = to;
  i->channel = channel;
  rdma_event_channel* old_private = i->sync && !to_sync ? from : nullptr;
  i->sync = to_sync;
  for (CmEventBox* e : moving) post_event(*to, e);
  if (old_private) rdma_destroy_event_channel(old_private);
  return 0;
}

// --- QPs ---

// Service mode: the QP through the service-mode verbs (its rings), which take the basic
// attributes only (the extended QP is not served there yet: EOPNOTSUPP).
static ibv_qp* create_service_qp(ibv_qp_init_attr_ex& attr) {
  if (attr.comp_mask & ~static_cast<std::uint32_t>(IBV_QP_INIT_ATTR_PD)) return create_qp_ex_op(attr.pd->context, &attr);
  ibv_qp_init_attr a{};
  a.qp_context = attr.qp_context;
  a.send_cq = attr.send_cq;
  a.recv_cq = attr.recv_cq;
  a.srq = attr.srq;
  a.cap = attr.cap;
  a.qp_type = attr.qp_type;
  a.sq_sig_all = attr.sq_sig_all;
  ibv_qp* qp = ibv_create_qp(attr.pd, &a);
  if (qp) attr.cap = a.cap;
  return qp;
}

ROCE_VERBS_EXPORT int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || attr == nullptr) return cm_fail(EINVAL);
  if (i->verbs == nullptr || i->qp != nullptr) return cm_fail(EINVAL);
  CmPort* port = nullptr;
  if (!i->remote && (port = CmPort::get()) == nullptr) return -1;
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr) {
    attr->pd = i->pd ? i->pd : port ? port->default_pd() : remote_default_pd();
    if (attr->pd == nullptr) return -1;
    attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
  }
  if (attr->pd->context != i->verbs) return cm_fail(EINVAL);
  if (i->srq && attr->srq == nullptr) attr->srq = i->srq;  // the ID's SRQ (rdma_create_srq), as librdmacm
  // No CQs given: librdmacm makes one per direction, each with its completion channel and the
  // ID as its context (rdma_get_send_comp / rdma_get_recv_comp wait on them).
  const bool make_cqs = attr->send_cq == nullptr || attr->recv_cq == nullptr;
  if (make_cqs) {
    if (int rc = make_id_cqs(*i, *attr); rc) return cm_fail(rc);
    attr->send_cq = i->send_cq;
    attr->recv_cq = i->recv_cq;
  }
  ibv_qp* qp = i->remote ? create_service_qp(*attr) : create_qp_ex_op(i->verbs, attr);
  if (qp == nullptr) {
    const int err = errno;
    if (make_cqs) destroy_id_cqs(*i);
    return cm_fail(err);
  }
  i->qp = qp;
  i->pd = attr->pd;
  // RESET -> INIT now (UD: on to RTS, it needs no peer), as librdmacm does; in service mode the
  // service's ID takes the QP (named by its number) and moves it.
  int rc = i->remote ? remote_attach_qp(*i, qp) : 0;
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    if (i->remote) break;
    if (s != IBV_QPS_INIT && qp->qp_type != IBV_QPT_UD) break;
    ibv_qp_attr a{};
    a.qp_state = s;
    int mask = 0;
    if ((rc = qp_attr_for(*i, *port, a, mask)) || (rc = ibv_modify_qp(qp, &a, mask))) break;
  }
  if (rc) {
    i->qp = nullptr;
    ibv_destroy_qp(qp);
    if (make_cqs) destroy_id_cqs(*i);
    return cm_fail(rc);
  }
  return 0;
}

ROCE_VERBS_EXPORT int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (qp_init_attr == nullptr) return cm_fail(EINVAL);
  ibv_qp_init_attr_ex a{};
  a.qp_context = qp_init_attr->qp_context;
  a.send_cq = qp_init_attr->send_cq;
  a.recv_cq = qp_init_attr->recv_cq;
  a.srq = qp_init_attr->srq;
  a.cap = qp_init_attr->cap;
  a.qp_type = qp_init_attr->qp_type;
  a.sq_sig_all = qp_init_attr->sq_sig_all;
  a.pd = pd;
  if (pd) a.comp_mask = IBV_QP_INIT_ATTR_PD;
  if (int rc = rdma_create_qp_ex(id, &a)) return rc;
  qp_init_attr->cap = a.cap;
  return 0;
}

ROCE_VERBS_EXPORT void rdma_destroy_qp(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || i->qp == nullptr) return;
  if (i->remote) {
    service::CmRequest q;
    (void)remote_call(*i, CmOp::DetachQp, q);
  }
  ibv_destroy_qp(i->qp);
  i->qp = nullptr;
  destroy_id_cqs(*i);
}

ROCE_VERBS_EXPORT int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || qp_attr == nullptr || qp_attr_mask == nullptr) return cm_fail(EINVAL);
  if (i->remote) {
    service::CmRequest q;
    q.qp_state = qp_attr->qp_state;
    service::CmReply rep;
    if (remote_call(*i, CmOp::InitQpAttr, q, &rep) != 0) return -1;
    *qp_attr = rep.qp_attr;
    *qp_attr_mask = rep.qp_attr_mask;
    return 0;
  }
  CmPort* port = CmPort::get();
  if (port == nullptr) return -1;
  if (int rc = qp_attr_for(*i, *port, *qp_attr, *qp_attr_mask)) return cm_fail(rc);
  return 0;
}

// --- shared receive queues ---

// librdmacm's SRQ of an ID: made on the ID's device (its PD, or the one given), kept in id->srq,
// and taken by rdma_create_qp when the QP attributes name none. Basic SRQs only: XRC is refused
// as ibv_create_srq_ex's XRC is (the device has no XRC domains).
ROCE_VERBS_EXPORT int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || attr == nullptr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) return cm_fail(EINVAL);
  if (attr->srq_type != IBV_SRQT_BASIC) return cm_fail(EOPNOTSUPP);
  if (i->verbs == nullptr || i->srq != nullptr) return cm_fail(EINVAL);
  CmPort* port = nullptr;
  if (!i->remote && (port = CmPort::get()) == nullptr) return -1;
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == nullptr) {
    attr->pd = i->pd ? i->pd : port ? port->default_pd() : remote_default_pd();  // as rdma_create_qp: a NULL PD takes the device-wide one
    if (attr->pd == nullptr) return -1;
    attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
  }
  if (attr->pd->context != i->verbs) return cm_fail(EINVAL);
  ibv_srq_init_attr basic{};
  basic.srq_context = attr->srq_context;
  basic.attr = attr->attr;
  ibv_srq* srq = ibv_create_srq(attr->pd, &basic);
  if (srq == nullptr) return -1;
  attr->attr = basic.attr;  // what it really got
  if (i->pd == nullptr) i->pd = attr->pd;
  i->srq = srq;
  return 0;
}

ROCE_VERBS_EXPORT int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (attr == nullptr) return cm_fail(EINVAL);
  ibv_srq_init_attr_ex ex{};
  ex.srq_context = attr->srq_context;
  ex.attr = attr->attr;
  ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
  ex.srq_type = IBV_SRQT_BASIC;
  ex.pd = pd;
  const int rc = rdma_create_srq_ex(id, &ex);
  attr->attr = ex.attr;
  return rc;
}

ROCE_VERBS_EXPORT void rdma_destroy_srq(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  if (i == nullptr || i->srq == nullptr) return;
  ibv_destroy_srq(i->srq);
  i->srq = nullptr;
}

// --- small helpers ---

ROCE_VERBS_EXPORT __be16 rdma_get_src_port(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  return i ? htons(port_of(&i->route.addr.src_addr)) : 0;
}

ROCE_VERBS_EXPORT __be16 rdma_get_dst_port(rdma_cm_id* id) {
  CmIdent* i = to_cm_id(id);
  return i ? htons(port_of(&i->route.addr.dst_addr)) : 0;
}

ROCE_VERBS_EXPORT ibv_context** rdma_get_devices(int* num_devices) {
  ibv_context* verbs = nullptr;
  if (cm_served()) verbs = remote_verbs();
  else if (CmPort* port = CmPort::get()) verbs = port->verbs();
  auto** list = static_cast<ibv_context**>(std::calloc(2, sizeof(ibv_context*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  list[0] = verbs;
  if (num_devices) *num_devices = verbs ? 1 : 0;
  return list;
}

ROCE_VERBS_EXPORT void rdma_free_devices(ibv_context** list) { std::free(list); }

// --- refused: kinds of ID and features the device's CM does not have ---

// No multicast on the device.
ROCE_VERBS_EXPORT int rdma_join_multicast(rdma_cm_id* id, sockaddr*, void*) { return cm_fail(to_cm_id(id) ? EOPNOTSUPP : EINVAL); }
ROCE_VERBS_EXPORT int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex*, void*) {
  return cm_fail(to_cm_id(id) ? EOPNOTSUPP : EINVAL);
}
ROCE_VERBS_EXPORT int rdma_leave_multicast(rdma_cm_id* id, sockaddr*) { return cm_fail(to_cm_id(id) ? EOPNOTSUPP : EINVAL); }
// Enhanced connection establishment (ECE): none, as ibv_query_ece answers.
ROCE_VERBS_EXPORT int rdma_set_local_ece(rdma_cm_id* id, ibv_ece*) { return cm_fail(to_cm_id(id) ? EOPNOTSUPP : EINVAL); }
ROCE_VERBS_EXPORT int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece*) { return cm_fail(to_cm_id(id) ? EOPNOTSUPP : EINVAL); }
ROCE_VERBS_EXPORT int rdma_reject_ece(rdma_cm_id* id, const void*, std::uint8_t) { return cm_fail(to_cm_id(id) ? EOPNOTSUPP : EINVAL); }
