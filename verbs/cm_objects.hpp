// The librdmacm objects our library hands to programs (rdma_event_channel, rdma_cm_id,
// rdma_cm_event), each embedding the public struct of <rdma/rdma_cma.h> as its first base, as
// the verbs objects do (objects.hpp): a pointer a program passes back converts with a cast and
// a magic word tells ours from anything else.
#pragma once

#include <rdma/rdma_cma.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "lib/cm/rdma_cm.hpp"

namespace roce::verbs {

enum class CmMagic : std::uint32_t {
  Dead = 0,
  Channel = 0x52434331,
  ClosedChannel = 0x52434330,  // destroyed, kept: a program's event thread may still call on it
  Id = 0x52434931,
  Event = 0x52434531,
};

// What an rdma_cm_id is doing: rdma_cma.h's calls are allowed in some states only (EINVAL in the
// others, as librdmacm's kernel side answers). Changed only by move_to() (cm_port.cpp).
enum class CmIdState : std::uint8_t {
  Idle,             // rdma_create_id
  AddrBound,        // rdma_bind_addr
  AddrResolved,     // rdma_resolve_addr answered (ADDR_RESOLVED queued)
  RouteResolved,    // rdma_resolve_route
  Listening,        // rdma_listen
  Connecting,       // rdma_connect: REQ sent
  ConnectResponse,  // REP delivered to a program that moves its own QP (rdma_establish next)
  RequestReceived,  // passive ID made by a connection request, not yet accepted or rejected
  Accepting,        // rdma_accept: REP sent, RTU awaited
  Connected,        // ESTABLISHED
  Disconnected,     // DREQ/DREP seen, rdma_disconnect, or the connection failed
};
const char* to_string(CmIdState s);

struct CmEventBox;
struct CmIdent;

// The event channel: a queue and a semaphore eventfd (one count per queued event), so that a
// program may poll() it or set O_NONBLOCK as on librdmacm's /dev/infiniband/rdma_cm file.
struct CmChannel : rdma_event_channel {
  CmMagic magic = CmMagic::Channel;
  std::mutex mutex;
  std::condition_variable acked;   // an event was acknowledged (rdma_destroy_id waits)
  std::deque<CmEventBox*> queue;   // guarded by mutex
  std::uint32_t ids = 0;           // IDs on it (destroy is EBUSY until 0), guarded by mutex
  std::uint32_t remote = 0;        // service mode: the service's handle (fd: the channel's socket)
  const void* owner = nullptr;     // service mode: the rdma_cm connection the handle is of
};

struct CmIdent : rdma_cm_id {
  CmMagic magic = CmMagic::Id;
  std::uint32_t remote = 0;  // service mode: the service's handle for its ID (cm_remote.hpp)
  const void* owner = nullptr;  // service mode: the rdma_cm connection the handle is of
  std::uint64_t remote_seq = 0;  // service mode: the last snapshot of it applied
  std::atomic<CmIdState> state{CmIdState::Idle};  // read by any thread without the lock
  CmChannel* ch = nullptr;
  CmIdent* listener = nullptr;  // a passive ID's listening ID
  std::optional<cm::ListenerId> listen;
  std::optional<cm::CmId> cm;   // the IB CM's ID of its connection
  std::uint32_t unacked = 0;    // events handed out, not yet acknowledged (guarded by ch->mutex)
  // Options (rdma_set_option).
  std::uint8_t tos = 0;
  std::optional<std::uint8_t> ack_timeout;
  // The connection as negotiated: rq_psn is the PSN this side receives with (in its REQ/REP).
  std::uint32_t rq_psn = 0;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  cm::ConnectParams sent;             // active: the REQ
  std::optional<cm::ReqInfo> req;     // passive: the REQ that made the ID
  std::optional<cm::SidrReqInfo> sidr; // passive UD: the SIDR_REQ that made the ID
  std::optional<cm::RepInfo> rep;     // active: the peer's REP
  std::vector<std::uint8_t> rep_private;
  bool swallow_established = false;  // the RTU was ours: the CM's ESTABLISHED is not passed on (engine lock)
  // rdma_connect's request, sent again while the peer answers that nobody listens yet (cm_port.cpp:
  // CmPort::retry_later), until connect_deadline. Engine lock.
  std::optional<cm::RdmaConnectParams> connect_params;
  std::optional<cm::RdmaUdResolveParams> resolve_params;
  Nanos connect_deadline = 0;
  ibv_sa_path_rec path{};
  // Synchronous IDs (made without a channel, rdma_create_ep): a private channel, and every call
  // that raises an event waits for it (cm_sync.cpp); the last one stays in rdma_cm_id::event.
  bool sync = false;
  bool own_cqs = false;  // rdma_create_qp made the CQs and their channels (no CQ was given)
  std::optional<ibv_qp_init_attr> ep_qp_attr;  // a passive endpoint's QP, made by rdma_get_request
  ibv_pd* ep_pd = nullptr;
};

struct CmEventBox : rdma_cm_event {
  CmMagic magic = CmMagic::Event;
  CmIdent* counted = nullptr;              // whose unacked count this event holds
  std::optional<cm::RdmaCmEvent> raw;      // the CM's event, turned into the public one when taken
  std::uint8_t private_data[256] = {};
};

// The port spaces whose services are UD (resolved with SIDR, no connection).
inline bool is_ud(rdma_port_space ps) { return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB; }
inline proto::RdmaPortSpace to_proto(rdma_port_space ps) {
  return ps == RDMA_PS_UDP ? proto::RdmaPortSpace::Udp : ps == RDMA_PS_IPOIB ? proto::RdmaPortSpace::Ipoib : proto::RdmaPortSpace::Tcp;
}

inline CmChannel* to_cm_channel(rdma_event_channel* c) {
  auto* o = static_cast<CmChannel*>(c);
  return c && o->magic == CmMagic::Channel ? o : nullptr;
}
inline CmIdent* to_cm_id(rdma_cm_id* i) {
  auto* o = static_cast<CmIdent*>(i);
  return i && o->magic == CmMagic::Id ? o : nullptr;
}
inline CmEventBox* to_cm_event(rdma_cm_event* e) {
  auto* o = static_cast<CmEventBox*>(e);
  return e && o->magic == CmMagic::Event ? o : nullptr;
}

}  // namespace roce::verbs
