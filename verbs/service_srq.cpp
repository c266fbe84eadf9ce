// The service's side of shared receive queues: the program's ring of receive WQEs mapped here,
// the service's SRQ behind it (the in-process verbs, so library mode's errnos and limits), and
// the pump that moves the ring's WQEs into the SRQ once per loop iteration, as for a QP's
// receive ring (service_datapath.cpp). An SRQ limit is the service's SRQ's: its event reaches the
// program through the context's event socket (service_async.cpp), counted on the WQEs the pump
// has moved into the SRQ (it moves them every loop pass, as soon as the ring has them).
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "verbs/service.hpp"
#include "verbs/service_ring_files.hpp"

namespace roce::verbs {

int VerbsService::create_srq(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files,
                             service::Reply& out) {
  service::CreateSrqRequest q;
  if (!read_body(r, len, q) || files.size() != 1) return EINVAL;
  const auto pd = c.pds.find(r.handle);
  if (pd == c.pds.end() || !service::valid_ring_size(q.ring_size)) return EINVAL;
  if (q.attr.max_wr > q.ring_size || q.attr.max_sge > service::kMaxWqeSge) return EINVAL;
  const std::size_t bytes = service::srq_ring_bytes(q.ring_size);
  if (!may_map(c, bytes)) return ENOMEM;
  void* map = map_ring(files[0], bytes);
  if (map == nullptr) return EINVAL;
  ibv_srq_init_attr ia{};
  ia.attr = q.attr;
  ibv_srq* srq = ibv_create_srq(pd->second, &ia);
  if (srq == nullptr) {
    const int e = errno ? errno : ENOMEM;
    ::munmap(map, bytes);
    return e;
  }
  SrqState s;
  s.srq = srq;
  s.map = map;
  s.map_bytes = bytes;
  s.ring = static_cast<service::RingHeader*>(map);
  s.entries = reinterpret_cast<service::RecvWqe*>(static_cast<char*>(map) + sizeof(service::RingHeader));
  s.size = q.ring_size;
  s.head = s.ring->head.load(std::memory_order_relaxed);
  s.max_sge = ia.attr.max_sge;
  const std::uint32_t h = c.next_handle++;
  c.srqs.emplace(h, s);
  service::CreateSrqReply rep{h, ia.attr};
  std::memcpy(out.body, &rep, sizeof rep);
  out.size = sizeof rep;
  return 0;
}

int VerbsService::modify_srq(Client& c, const service::Request& r, std::size_t len) {
  service::ModifySrqRequest q;
  const auto it = c.srqs.find(r.handle);
  if (it == c.srqs.end() || !read_body(r, len, q)) return EINVAL;
  return ibv_modify_srq(it->second.srq, &q.attr, q.mask);
}

int VerbsService::query_srq(Client& c, const service::Request& r, service::Reply& out) {
  const auto it = c.srqs.find(r.handle);
  if (it == c.srqs.end()) return EINVAL;
  ibv_srq_attr a{};
  if (int rc = ibv_query_srq(it->second.srq, &a); rc != 0) return rc;
  std::memcpy(out.body, &a, sizeof a);
  out.size = sizeof a;
  return 0;
}

int VerbsService::destroy_srq(Client& c, std::uint32_t handle) {
  const auto it = c.srqs.find(handle);
  if (it == c.srqs.end()) return EINVAL;
  if (it->second.qps) return EBUSY;
  if (int rc = ibv_destroy_srq(it->second.srq); rc != 0) return rc;
  ::munmap(it->second.map, it->second.map_bytes);
  c.srqs.erase(it);
  return 0;
}

// As a QP's receive ring, but a WQE the SRQ cannot take has no QP to complete in error on:
// the SRQ is marked broken and its ring is no longer read (the program's QPs on it then see
// RNR from their peers, as with an SRQ left empty).
bool VerbsService::pump_srq(SrqState& q, const Client& c) {
  if (q.broken) return false;
  const std::uint32_t tail = q.ring->tail.load(std::memory_order_acquire);
  if (tail - q.head > q.size) {
    q.broken = true;
    return false;
  }
  bool moved = false;
  while (q.head != tail) {
    const service::RecvWqe w = q.entries[q.head & (q.size - 1)];
    ibv_sge sge[service::kMaxWqeSge];
    ibv_recv_wr wr{};
    if (!recv_wr_from(c, w, q.max_sge, sge, wr)) {
      q.broken = true;
      break;
    }
    ibv_recv_wr* bad = nullptr;
    const int rc = ibv_post_srq_recv(q.srq, &wr, &bad);
    if (rc == ENOMEM) break;  // full: the WQE stays in the ring for the next round
    if (rc != 0) {
      q.broken = true;
      break;
    }
    ++q.head;
    moved = true;
  }
  q.ring->head.store(q.head, std::memory_order_release);
  return moved;
}

}  // namespace roce::verbs
