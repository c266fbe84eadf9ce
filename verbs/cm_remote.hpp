// rdma_cm in service mode (docs/verbs.md, "2. Service mode", slice 5): the program's side. The
// rdma_* entry points (cm_entries.cpp) keep their objects and checks, and hand what acts to the
// service over the program's rdma_cm connection (cm_proto.hpp), which runs the same call on an
// rdma_cm ID of its own; the answer's snapshot (state, addresses, route, the QP's state) is
// copied into the program's ID. A channel's fd is its own socket, on which the service pushes
// the channel's events; acknowledgements are counted here, as in library mode.
#pragma once

#include "verbs/cm_objects.hpp"
#include "verbs/cm_proto.hpp"

namespace roce::verbs {

// The configured device is a service's: rdma_cm goes through it.
bool cm_served();

// The context rdma_cm IDs use (librdmacm keeps one per device) and its device-wide PD.
ibv_context* remote_verbs();
ibv_pd* remote_default_pd();

CmChannel* remote_create_channel();
void remote_destroy_channel(CmChannel& ch);
int remote_get_event(CmChannel& ch, rdma_cm_event** event);
// True when an event waits on the channel's socket.
bool remote_event_waiting(CmChannel& ch);
// The service's ID for `id` (made on ch); 0 or -1 with errno.
int remote_create_id(CmChannel& ch, CmIdent& id);
// The service's ID destroyed; events of it still on a socket are dropped when read.
void remote_destroy_id(CmIdent& id);
// One request about `id`: 0 (its snapshot applied) or -1 with errno.
int remote_call(CmIdent& id, service::CmOp op, service::CmRequest& q, service::CmReply* out = nullptr);
// The QP the program made through the service-mode verbs becomes the service ID's (to INIT).
int remote_attach_qp(CmIdent& id, ibv_qp* qp);

void put_addr(service::CmAddr& to, const sockaddr* from);
// EINVAL when the private data does not fit any CM message.
int put_conn(service::CmConnParam& to, const rdma_conn_param* from);

}  // namespace roce::verbs
