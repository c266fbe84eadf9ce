// Synchronous rdma_cm IDs, as librdmacm runs them for programs that use no event channel
// (rdma_create_ep, rdma_get_request: Debian's rdma_server / rdma_client and the rdma_verbs.h
// helpers): each ID has a private channel, every call that raises an event waits for it, and the
// last event stays in rdma_cm_id::event until the next call or rdma_destroy_id acknowledges it.
// The CQs librdmacm makes for an ID's QP when the program gives none are made here too.
#include <rdma/rdma_verbs.h>

#include <cerrno>

#include "verbs/cm_port.hpp"
#include "verbs/export.hpp"

namespace roce::verbs {
namespace {

int fail(int err) {
  errno = err;
  return -1;
}

rdma_port_space port_space_of(const rdma_addrinfo& res) {
  if (res.ai_port_space) return static_cast<rdma_port_space>(res.ai_port_space);
  return res.ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
}

}  // namespace

int sync_complete(CmIdent& id) {
  if (!id.sync) return 0;
  if (id.event) {
    rdma_ack_cm_event(id.event);
    id.event = nullptr;
  }
  if (rdma_get_cm_event(id.channel, &id.event) != 0) return -1;
  const rdma_cm_event& e = *id.event;
  if (e.status == 0) return 0;
  if (e.event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
  return fail(e.status < 0 ? -e.status : e.status);
}

int make_id_cqs(CmIdent& id, const ibv_qp_init_attr_ex& attr) {
  const auto make = [&id](std::uint32_t depth, ibv_comp_channel*& ch, ibv_cq*& cq) {
    ch = ibv_create_comp_channel(id.verbs);
    if (ch == nullptr) return errno;
    cq = ibv_create_cq(id.verbs, static_cast<int>(std::max<std::uint32_t>(depth, 1)), &id, ch, 0);
    if (cq == nullptr) {
      const int err = errno;
      ibv_destroy_comp_channel(ch);
      ch = nullptr;
      return err;
    }
    return 0;
  };
  if (id.send_cq || id.recv_cq) return EINVAL;  // an earlier QP's are still there
  if (int rc = make(attr.cap.max_send_wr, id.send_cq_channel, id.send_cq)) return rc;
  if (int rc = make(attr.cap.max_recv_wr, id.recv_cq_channel, id.recv_cq)) {
    destroy_id_cqs(id);
    return rc;
  }
  id.own_cqs = true;
  return 0;
}

void destroy_id_cqs(CmIdent& id) {
  if (!id.own_cqs && !(id.send_cq_channel || id.recv_cq_channel)) return;
  for (auto [cq, ch] : {std::pair{&id.send_cq, &id.send_cq_channel}, std::pair{&id.recv_cq, &id.recv_cq_channel}}) {
    if (*cq) ibv_destroy_cq(*cq);
    if (*ch) ibv_destroy_comp_channel(*ch);
    *cq = nullptr;
    *ch = nullptr;
  }
  id.own_cqs = false;
}

}  // namespace roce::verbs

using namespace roce::verbs;

// An endpoint from rdma_getaddrinfo's answer: passive (RAI_PASSIVE) is bound and keeps the QP
// attributes for rdma_get_request; active has its address and route resolved and its QP made.
ROCE_VERBS_EXPORT int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (id == nullptr || res == nullptr) return fail(EINVAL);
  rdma_cm_id* cid = nullptr;
  if (rdma_create_id(nullptr, &cid, nullptr, port_space_of(*res)) != 0) return -1;
  CmIdent& i = *to_cm_id(cid);
  int rc = 0;
  if (res->ai_flags & RAI_PASSIVE) {
    rc = rdma_bind_addr(cid, res->ai_src_addr);
    if (rc == 0 && qp_init_attr) {
      i.ep_qp_attr = *qp_init_attr;
      i.ep_qp_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type ? res->ai_qp_type : i.qp_type);
      i.ep_pd = pd;
    }
  } else {
    rc = rdma_resolve_addr(cid, res->ai_src_len ? res->ai_src_addr : nullptr, res->ai_dst_addr, 2000);
    if (rc == 0) rc = rdma_resolve_route(cid, 2000);
    if (rc == 0 && qp_init_attr) {
      qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type ? res->ai_qp_type : i.qp_type);
      rc = rdma_create_qp(cid, pd, qp_init_attr);
    }
  }
  if (rc != 0) {
    const int err = errno;
    rdma_destroy_ep(cid);
    return fail(err);
  }
  *id = cid;
  return 0;
}

// The next connection request of a synchronous listener, as a synchronous ID of its own (with
// the endpoint's QP when rdma_create_ep was given QP attributes).
ROCE_VERBS_EXPORT int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
  CmIdent* l = to_cm_id(listen);
  if (l == nullptr || id == nullptr || !l->sync || l->state != CmIdState::Listening) return fail(EINVAL);
  rdma_cm_event* e = nullptr;
  if (rdma_get_cm_event(l->channel, &e) != 0) return -1;
  if (e->status != 0 || e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
    const int err = e->status ? (e->status < 0 ? -e->status : e->status) : EINVAL;
    rdma_ack_cm_event(e);
    return fail(err);
  }
  rdma_cm_id* child = e->id;
  if (rdma_migrate_id(child, nullptr) != 0) {
    const int err = errno;
    (void)rdma_reject(child, nullptr, 0);
    rdma_ack_cm_event(e);
    rdma_destroy_id(child);
    return fail(err);
  }
  if (l->ep_qp_attr) {
    ibv_qp_init_attr a = *l->ep_qp_attr;
    if (rdma_create_qp(child, l->ep_pd, &a) != 0) {
      const int err = errno;
      (void)rdma_reject(child, nullptr, 0);
      rdma_ack_cm_event(e);
      rdma_destroy_id(child);
      return fail(err);
    }
  }
  child->event = e;  // acknowledged by the child's next call or its destruction
  *id = child;
  return 0;
}

ROCE_VERBS_EXPORT void rdma_destroy_ep(rdma_cm_id* id) {
  if (to_cm_id(id) == nullptr) return;
  rdma_destroy_qp(id);
  rdma_destroy_srq(id);  // librdmacm's order: the QP, then the ID's SRQ
  rdma_destroy_id(id);
}
