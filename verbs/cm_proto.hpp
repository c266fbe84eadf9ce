// rdma_cm through the service (docs/verbs.md, "2. Service mode", slice 5): the records a
// program's rdma_* calls and roce-verbsd exchange. Requests go on one more connection of the
// program (service_proto.hpp's Op::Cm, the CmOp in Request::arg, the ID's or channel's handle in
// Request::handle, a CmRequest as the body; the answer's body a CmReply). The service runs the
// same rdma_* function on its own rdma_cm_id, so the errno is library mode's. Events come on the
// channel's own socket (the program's end is the channel's fd), one CmEventRecord per event.
#pragma once

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <cstdint>

#include "verbs/service_proto.hpp"

namespace roce::verbs::service {

enum class CmOp : std::uint32_t {
  Open = 1,           // the connection becomes the program's rdma_cm connection
  CreateChannel = 2,  // file: the service's end of the channel's socket; answer: handle
  DestroyChannel = 3,
  CreateId = 4,       // channel, ps; answer: handle
  DestroyId = 5,
  BindAddr = 6,       // src
  ResolveAddr = 7,    // [src], dst, timeout_ms
  ResolveRoute = 8,
  Listen = 9,         // backlog
  Connect = 10,       // conn
  Accept = 11,        // conn
  Reject = 12,        // conn's private data
  Disconnect = 13,
  SetOption = 14,     // level, optname, optval
  InitQpAttr = 15,    // qp_state; answer: qp_attr, qp_attr_mask
  Establish = 16,
  Notify = 17,        // notify_event
  Migrate = 18,       // channel
  AttachQp = 19,      // qpn: a QP of one of the program's contexts becomes the ID's (moved to INIT)
  DetachQp = 20,
};

// Private data of any CM message fits (REP: 196 bytes, the largest).
inline constexpr std::size_t kCmPrivateBytes = 196;

// An rdma_conn_param without its pointer (`given`: the program passed one, not NULL).
struct CmConnParam {
  std::uint8_t given = 0;
  std::uint8_t responder_resources = 0, initiator_depth = 0, flow_control = 0, retry_count = 0, rnr_retry_count = 0,
               srq = 0;
  std::uint8_t private_len = 0;
  std::uint32_t qp_num = 0;
  std::uint8_t private_data[kCmPrivateBytes]{};
};

// An address of either family (a sockaddr_in fits in a sockaddr_in6); family 0: none.
union CmAddr {
  sockaddr sa;
  sockaddr_in in;
  sockaddr_in6 in6;
};

struct CmRequest {
  std::uint32_t channel = 0;
  std::int32_t ps = 0;
  std::int32_t timeout_ms = 0;
  std::int32_t backlog = 0;
  CmAddr src{}, dst{};
  CmConnParam conn;
  std::int32_t level = 0, optname = 0;
  std::uint32_t optlen = 0;
  std::uint8_t optval[8]{};
  std::uint32_t qpn = 0;
  std::int32_t qp_state = 0;
  std::int32_t notify_event = 0;
};

// What the program's rdma_cm_id shows, after a call or an event. `seq` orders the snapshots of
// one connection: an event read after a later call's answer carries an older one, not applied.
struct CmIdSnapshot {
  std::uint64_t seq = 0;
  std::uint8_t state = 0;      // CmIdState
  std::uint8_t has_verbs = 0;  // the service's ID knows its device (bound to the address, resolved)
  std::uint8_t port_num = 0;
  std::int32_t qp_state = -1;  // its QP's state after the call, -1: no QP
  CmAddr src{}, dst{};
  std::int32_t num_paths = 0;
  ibv_sa_path_rec path{};
};

struct CmReply {
  std::uint32_t handle = 0;
  CmIdSnapshot id;
  ibv_qp_attr qp_attr{};
  std::int32_t qp_attr_mask = 0;
};

struct CmEventRecord {
  std::uint32_t id = 0;         // the ID's handle (for CONNECT_REQUEST: the new passive ID's)
  std::uint32_t listen_id = 0;  // CONNECT_REQUEST: the listener's handle
  std::int32_t event = 0;       // rdma_cm_event_type
  std::int32_t status = 0;
  CmIdSnapshot snap;            // of `id`, after the event
  std::uint8_t ud = 0;          // param is the UD one (ah_attr, qp_num, qkey)
  CmConnParam conn;             // param.conn, or the UD one's private data
  ibv_ah_attr ah_attr{};
  std::uint32_t ud_qp_num = 0, ud_qkey = 0;
};

static_assert(sizeof(CmRequest) <= kBodyBytes && sizeof(CmReply) <= kBodyBytes);

}  // namespace roce::verbs::service
