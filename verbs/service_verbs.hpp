// The verbs of service mode's client half that make and free objects: each is a request to the
// service (service_proto.hpp) on the context's connection, answered with library mode's errno;
// the program's object here holds the handle the service gave it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include "verbs/objects.hpp"
#include "verbs/service_rings.hpp"

namespace roce::verbs {

ibv_pd* service_alloc_pd(Context& c);
int service_dealloc_pd(Context& c, Pd& p);
// After the library-mode argument checks; moves the buffer's pages to a shared memfd first.
ibv_mr* service_reg_mr(Context& c, Pd& p, void* addr, std::size_t length, std::uint64_t iova, unsigned access);
int service_dereg_mr(Context& c, Mr& m);
// ibv_close_device: the connection is closed (the service frees its side), then ours.
void service_close(Context& c);

// Slice 3: channels, CQs and QPs with their rings (service_rings.hpp).
struct ServiceCqRing {
  std::uint32_t handle = 0;
  int memfd = -1;
  void* map = nullptr;
  std::size_t bytes = 0;
  service::RingHeader* ring = nullptr;
  ibv_wc* entries = nullptr;
  std::uint32_t size = 0;
  std::uint32_t head = 0;  // ours (the consumer's)
  std::mutex mutex;        // pollers of one CQ on several threads
};
struct ServiceQpRings {
  std::uint32_t handle = 0;
  int memfd = -1;
  void* map = nullptr;
  std::size_t bytes = 0;
  service::RingHeader* sq = nullptr;
  service::SendWqe* sq_entries = nullptr;
  std::uint32_t sq_size = 0, sq_tail = 0;
  service::RingHeader* rq = nullptr;
  service::RecvWqe* rq_entries = nullptr;
  std::uint32_t rq_size = 0, rq_tail = 0;
  ibv_qp_cap cap{};
  std::mutex mutex;  // posters of one QP on several threads
};

// An address handle of the service (UD): the program names it by handle in its WQEs.
struct ServiceAh : ibv_ah {
  std::uint32_t service_handle = 0;
};
ibv_ah* service_create_ah(Context& c, Pd& p, const ibv_ah_attr& attr);
int service_destroy_ah(Context& c, ibv_ah* ah);

ibv_comp_channel* service_create_channel(Context& c);
int service_destroy_channel(Context& c, Channel* ch);
ibv_cq* service_create_cq(Context& c, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector);
int service_destroy_cq(Context& c, Cq* q);
// The CQ whose event the service raised on `ch` (nullptr: none left, its CQ was destroyed).
Cq* service_fired_cq(Context& c, Channel* ch);
ibv_qp* service_create_qp(Context& c, Pd& p, ibv_qp_init_attr& attr);
int service_modify_qp(Context& c, Qp& q, ibv_qp_attr& attr, int mask);
int service_query_qp(Context& c, Qp& q, ibv_qp_attr& attr, int mask, ibv_qp_init_attr& init);
int service_destroy_qp(Context& c, Qp* q);
// A ring file: a memfd of `bytes`, sealed at that size, mapped here (map nullptr and errno set
// on failure). The service maps it too (service_ring_files.hpp).
struct RingFile {
  int fd = -1;
  void* map = nullptr;
};
RingFile make_ring_file(std::size_t bytes);
// Unmaps and closes the ring file of a CQ's, QP's or SRQ's rings, then frees them (nullptr: nothing).
template <typename Rings>
void free_rings(Rings* r) {
  if (r == nullptr) return;
  ::munmap(r->map, r->bytes);
  ::close(r->memfd);
  delete r;
}
// A receive WR as a WQE of a ring (its SGEs checked by the caller).
void put_recv_wqe(service::RecvWqe& w, const ibv_recv_wr& wr);

// SRQs (service_srq_client.cpp): the receive WQEs go through a ring as a QP's do.
struct ServiceSrqRing {
  std::uint32_t handle = 0;
  int memfd = -1;
  void* map = nullptr;
  std::size_t bytes = 0;
  service::RingHeader* ring = nullptr;
  service::RecvWqe* entries = nullptr;
  std::uint32_t size = 0, tail = 0;
  std::uint32_t max_sge = 0;
  std::mutex mutex;  // posters on several threads
};
ibv_srq* service_create_srq(Context& c, Pd& p, ibv_srq_init_attr& attr);
int service_modify_srq(Context& c, Srq& s, ibv_srq_attr& attr, int mask);
int service_query_srq(Context& c, Srq& s, ibv_srq_attr& attr);
int service_destroy_srq(Context& c, Srq* s);
int service_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);
// Memory windows (service_objects.cpp; the bind, service_queues.cpp: a WQE in the send ring).
ibv_mw* service_alloc_mw(Context& c, Pd& p, ibv_mw_type type);
int service_dealloc_mw(Context& c, Mw* m);
int service_bind_mw(Qp& q, Mw& m, const ibv_mw_bind& b);
// Asynchronous events (service_async_client.cpp): the context's event socket pair, made before
// Open (returns the service's end, to send with Open, or -1 with errno; the program's end, the
// context's async_fd, in `program_end`), and ibv_get_async_event on a service context.
int service_event_socket(int& program_end);
int service_get_async_event(Context& c, ibv_async_event& e);
// The data-path ops of a service context (its op table).
void install_service_ops(Context& c);

}  // namespace roce::verbs
