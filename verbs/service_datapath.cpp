// The service's side of CQs and QPs (slice 3): the program's rings mapped here, the service's
// own CQs and QPs behind them, and the pump that moves WQEs from the rings into the QPs and
// completions from the CQs into the rings, once per loop iteration (service_rings.hpp).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "verbs/service.hpp"
#include "verbs/service_ring_files.hpp"

namespace roce::verbs {
namespace {

using service::RecvWqe;
using service::SendWqe;

}  // namespace

void* map_ring(int fd, std::size_t bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) < bytes) return nullptr;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) return nullptr;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? nullptr : m;
}

int VerbsService::create_cq(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files,
                            service::Reply& out) {
  service::CreateCqRequest q;
  if (c.ctx == nullptr || !read_body(r, len, q)) return EINVAL;
  if (files.size() != 1u + (q.has_channel ? 1u : 0u) || !service::valid_ring_size(q.ring_size)) return EINVAL;
  if (q.cqe == 0 || q.cqe > q.ring_size) return EINVAL;  // the ring holds every entry the CQ can
  const std::size_t bytes = service::cq_ring_bytes(q.ring_size);
  if (!may_map(c, bytes)) return ENOMEM;
  void* map = map_ring(files[0], bytes);
  if (map == nullptr) return EINVAL;
  ibv_cq* cq = ibv_create_cq(c.ctx, static_cast<int>(q.cqe), nullptr, nullptr, 0);
  if (cq == nullptr) {
    const int e = errno ? errno : ENOMEM;
    ::munmap(map, bytes);
    return e;
  }
  CqState s;
  s.cq = cq;
  s.map = map;
  s.map_bytes = bytes;
  s.ring = static_cast<service::RingHeader*>(map);
  s.entries = reinterpret_cast<ibv_wc*>(static_cast<char*>(map) + sizeof(service::RingHeader));
  s.size = q.ring_size;
  s.tail = s.ring->tail.load(std::memory_order_relaxed);  // a new ring starts wherever the program left it
  if (q.has_channel) s.event_fd = ::fcntl(files[1], F_DUPFD_CLOEXEC, 0);
  const std::uint32_t h = c.next_handle++;
  c.cqs.emplace(h, s);
  service::CreateCqReply rep{h, static_cast<std::uint32_t>(cq->cqe)};
  std::memcpy(out.body, &rep, sizeof rep);
  out.size = sizeof rep;
  return 0;
}

int VerbsService::destroy_cq(Client& c, std::uint32_t handle) {
  const auto it = c.cqs.find(handle);
  if (it == c.cqs.end()) return EINVAL;
  if (it->second.qps) return EBUSY;
  if (int rc = ibv_destroy_cq(it->second.cq); rc != 0) return rc;
  ::munmap(it->second.map, it->second.map_bytes);
  if (it->second.event_fd >= 0) ::close(it->second.event_fd);
  c.cqs.erase(it);
  return 0;
}

int VerbsService::create_qp(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files,
                            service::Reply& out) {
  service::CreateQpRequest q;
  if (!read_body(r, len, q) || files.size() != 1) return EINVAL;
  const auto pd = c.pds.find(r.handle);
  const auto scq = c.cqs.find(q.send_cq);
  const auto rcq = c.cqs.find(q.recv_cq);
  if (pd == c.pds.end() || scq == c.cqs.end() || rcq == c.cqs.end()) return EINVAL;
  const auto srq = q.srq ? c.srqs.find(q.srq) : c.srqs.end();
  if (q.srq && srq == c.srqs.end()) return EINVAL;
  if (!service::valid_ring_size(q.sq_size) || !service::valid_ring_size(q.rq_size)) return EINVAL;
  if (q.cap.max_send_sge > service::kMaxWqeSge || q.cap.max_recv_sge > service::kMaxWqeSge ||
      q.cap.max_inline_data > service::kMaxWqeInline || q.cap.max_send_wr > q.sq_size ||
      (q.srq == 0 && q.cap.max_recv_wr > q.rq_size))
    return EINVAL;
  const auto layout = service::qp_ring_layout(q.sq_size, q.rq_size);
  if (!may_map(c, layout.bytes)) return ENOMEM;
  void* map = map_ring(files[0], layout.bytes);
  if (map == nullptr) return EINVAL;
  ibv_qp_init_attr ia{};
  ia.send_cq = scq->second.cq;
  ia.recv_cq = rcq->second.cq;
  ia.qp_type = static_cast<ibv_qp_type>(q.qp_type);
  ia.sq_sig_all = q.sq_sig_all != 0;
  ia.cap = q.cap;
  if (q.srq) ia.srq = srq->second.srq;
  ibv_qp* qp = ibv_create_qp(pd->second, &ia);
  if (qp == nullptr) {
    const int e = errno ? errno : ENOMEM;
    ::munmap(map, layout.bytes);
    return e;
  }
  QpState s;
  s.qp = qp;
  s.map = map;
  s.map_bytes = layout.bytes;
  char* base = static_cast<char*>(map);
  s.sq = reinterpret_cast<service::RingHeader*>(base + layout.sq_header);
  s.sq_entries = reinterpret_cast<SendWqe*>(base + layout.sq_entries);
  s.sq_size = q.sq_size;
  s.sq_head = s.sq->head.load(std::memory_order_relaxed);
  s.rq = reinterpret_cast<service::RingHeader*>(base + layout.rq_header);
  s.rq_entries = reinterpret_cast<RecvWqe*>(base + layout.rq_entries);
  s.rq_size = q.rq_size;
  s.rq_head = s.rq->head.load(std::memory_order_relaxed);
  s.send_cq = q.send_cq;
  s.recv_cq = q.recv_cq;
  s.srq = q.srq;
  s.max_send_sge = ia.cap.max_send_sge;
  s.max_recv_sge = ia.cap.max_recv_sge;
  s.max_inline = ia.cap.max_inline_data;
  s.ud = ia.qp_type == IBV_QPT_UD;
  ++scq->second.qps;
  ++rcq->second.qps;
  if (q.srq) ++srq->second.qps;
  const std::uint32_t h = c.next_handle++;
  c.qps.emplace(h, s);
  service::CreateQpReply rep{h, qp->qp_num, ia.cap};
  std::memcpy(out.body, &rep, sizeof rep);
  out.size = sizeof rep;
  return 0;
}

int VerbsService::modify_qp(Client& c, const service::Request& r, std::size_t len) {
  service::ModifyQpRequest q;
  const auto it = c.qps.find(r.handle);
  if (it == c.qps.end() || !read_body(r, len, q)) return EINVAL;
  if (it->second.broken && (q.mask & IBV_QP_STATE) && q.attr.qp_state != IBV_QPS_ERR) return EINVAL;
  return ibv_modify_qp(it->second.qp, &q.attr, q.mask);
}

int VerbsService::query_qp(Client& c, const service::Request& r, service::Reply& out) {
  const auto it = c.qps.find(r.handle);
  if (it == c.qps.end()) return EINVAL;
  service::QueryQpReply rep;
  ibv_qp_init_attr ia{};
  if (int rc = ibv_query_qp(it->second.qp, &rep.attr, static_cast<int>(r.arg), &ia); rc != 0) return rc;
  rep.cap = ia.cap;
  rep.sq_sig_all = static_cast<std::uint32_t>(ia.sq_sig_all);
  std::memcpy(out.body, &rep, sizeof rep);
  out.size = sizeof rep;
  return 0;
}

int VerbsService::destroy_qp(Client& c, std::uint32_t handle) {
  const auto it = c.qps.find(handle);
  if (it == c.qps.end()) return EINVAL;
  if (int rc = ibv_destroy_qp(it->second.qp); rc != 0) return rc;
  cm_forget_qp(it->second.qp);  // no rdma_cm ID of the program's holds it any more
  ::munmap(it->second.map, it->second.map_bytes);
  if (auto s = c.cqs.find(it->second.send_cq); s != c.cqs.end()) --s->second.qps;
  if (auto s = c.cqs.find(it->second.recv_cq); s != c.cqs.end()) --s->second.qps;
  if (auto s = c.srqs.find(it->second.srq); s != c.srqs.end()) --s->second.qps;
  c.qps.erase(it);
  return 0;
}

// The program's address moved by the same offset into the service's view of its region. An
// address outside the region stays outside (unsigned arithmetic keeps the distance), so the
// engine's bounds check answers it as it would the program's own; an lkey the program does not
// own is left alone and the engine refuses it (no such key, or another program's PD).
void VerbsService::translate(const Client& c, ibv_sge& sge) {
  const auto it = c.mr_by_lkey.find(sge.lkey);
  if (it == c.mr_by_lkey.end()) return;
  sge.addr = reinterpret_cast<std::uintptr_t>(it->second->mr->addr) + (sge.addr - it->second->program_addr);
}

bool VerbsService::recv_wr_from(const Client& c, const service::RecvWqe& w, std::uint32_t max_sge, ibv_sge* sge,
                                ibv_recv_wr& wr) {
  if (w.num_sge > max_sge || w.num_sge > service::kMaxWqeSge) return false;
  std::memcpy(sge, w.sge, w.num_sge * sizeof(ibv_sge));
  for (std::uint32_t i = 0; i < w.num_sge; ++i) translate(c, sge[i]);
  wr.wr_id = w.wr_id;
  wr.sg_list = sge;
  wr.num_sge = static_cast<int>(w.num_sge);
  return true;
}

void VerbsService::fail_wqe(Client& c, QpState& q, std::uint64_t wr_id, bool send, ibv_wc_status status) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(q.qp, &a, IBV_QP_STATE);
  const auto cq = c.cqs.find(send ? q.send_cq : q.recv_cq);
  if (cq == c.cqs.end()) return;
  CqState& s = cq->second;
  const std::uint32_t head = s.ring->head.load(std::memory_order_acquire);
  if (s.tail - head >= s.size) return;  // no room: the QP's error state still tells
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = send ? IBV_WC_SEND : IBV_WC_RECV;
  wc.qp_num = q.qp->qp_num;
  s.entries[s.tail & (s.size - 1)] = wc;
  ++s.tail;
  s.ring->tail.store(s.tail, std::memory_order_release);
}

bool VerbsService::pump_qp(QpState& q, Client& c) {
  if (q.broken) return false;
  bool moved = false;
  // Send ring: the program's tail bounded by the ring size, each WQE copied out, then checked.
  std::uint32_t tail = q.sq->tail.load(std::memory_order_acquire);
  if (tail - q.sq_head > q.sq_size) {
    q.broken = true;
    fail_wqe(c, q, 0, true, IBV_WC_LOC_QP_OP_ERR);
    return true;
  }
  while (q.sq_head != tail) {
    const SendWqe w = q.sq_entries[q.sq_head & (q.sq_size - 1)];
    if (w.opcode == IBV_WR_BIND_MW || w.opcode == service::kRingBindType1) {
      const int rc = post_bind(c, q, w);
      if (rc == ENOMEM) break;  // the QP is full: the WQE stays in the ring for the next round
      if (rc != 0) fail_wqe(c, q, w.wr_id, true, IBV_WC_LOC_QP_OP_ERR);
      ++q.sq_head;
      moved = true;
      continue;
    }
    ibv_send_wr wr{};
    ibv_sge sge[service::kMaxWqeSge];
    ibv_sge inline_sge{};
    wr.wr_id = w.wr_id;
    wr.opcode = static_cast<ibv_wr_opcode>(w.opcode);
    wr.send_flags = w.send_flags;
    wr.imm_data = w.imm_data;
    if (w.send_flags & IBV_SEND_INLINE) {
      if (w.inline_bytes > q.max_inline || w.inline_bytes > service::kMaxWqeInline) {
        fail_wqe(c, q, w.wr_id, true, IBV_WC_LOC_LEN_ERR);
        ++q.sq_head;
        continue;
      }
      inline_sge = {reinterpret_cast<std::uintptr_t>(w.inline_data), w.inline_bytes, 0};
      wr.sg_list = &inline_sge;
      wr.num_sge = w.inline_bytes ? 1 : 0;
    } else {
      if (w.num_sge > q.max_send_sge || w.num_sge > service::kMaxWqeSge) {
        fail_wqe(c, q, w.wr_id, true, IBV_WC_LOC_LEN_ERR);
        ++q.sq_head;
        continue;
      }
      std::memcpy(sge, w.sge, w.num_sge * sizeof(ibv_sge));
      for (std::uint32_t i = 0; i < w.num_sge; ++i) translate(c, sge[i]);
      wr.sg_list = sge;
      wr.num_sge = static_cast<int>(w.num_sge);
    }
    if (q.ud) {
      const auto ah = c.ahs.find(w.ah);
      if (ah == c.ahs.end()) {  // not one of this program's address handles
        fail_wqe(c, q, w.wr_id, true, IBV_WC_LOC_QP_OP_ERR);
        ++q.sq_head;
        continue;
      }
      wr.wr.ud.ah = ah->second;
      wr.wr.ud.remote_qpn = w.remote_qpn;
      wr.wr.ud.remote_qkey = w.remote_qkey;
    } else if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = w.remote_addr;
      wr.wr.atomic.rkey = w.rkey;
      wr.wr.atomic.compare_add = w.compare_add;
      wr.wr.atomic.swap = w.swap;
    } else {
      wr.wr.rdma.remote_addr = w.remote_addr;
      wr.wr.rdma.rkey = w.rkey;
    }
    ibv_send_wr* bad = nullptr;
    const int rc = ibv_post_send(q.qp, &wr, &bad);
    if (rc == ENOMEM) break;  // the QP is full: the WQE stays in the ring for the next round
    if (rc != 0) fail_wqe(c, q, w.wr_id, true, IBV_WC_LOC_QP_OP_ERR);  // what library mode refuses at post
    ++q.sq_head;
    moved = true;
  }
  q.sq->head.store(q.sq_head, std::memory_order_release);
  if (q.srq) return moved;  // its receives come from the SRQ's ring
  // Receive ring, the same way.
  tail = q.rq->tail.load(std::memory_order_acquire);
  if (tail - q.rq_head > q.rq_size) {
    q.broken = true;
    fail_wqe(c, q, 0, false, IBV_WC_LOC_QP_OP_ERR);
    return true;
  }
  while (q.rq_head != tail) {
    const RecvWqe w = q.rq_entries[q.rq_head & (q.rq_size - 1)];
    ibv_sge sge[service::kMaxWqeSge];
    ibv_recv_wr wr{};
    if (!recv_wr_from(c, w, q.max_recv_sge, sge, wr)) {
      fail_wqe(c, q, w.wr_id, false, IBV_WC_LOC_LEN_ERR);
      ++q.rq_head;
      continue;
    }
    ibv_recv_wr* bad = nullptr;
    const int rc = ibv_post_recv(q.qp, &wr, &bad);
    if (rc == ENOMEM) break;
    if (rc != 0) fail_wqe(c, q, w.wr_id, false, IBV_WC_LOC_QP_OP_ERR);
    ++q.rq_head;
    moved = true;
  }
  q.rq->head.store(q.rq_head, std::memory_order_release);
  return moved;
}

bool VerbsService::pump_cq(CqState& q) {
  const std::uint32_t head = q.ring->head.load(std::memory_order_acquire);
  const std::uint32_t used = q.tail - head;
  if (used > q.size) return false;  // the program corrupted its head: nothing more is written there
  std::uint32_t room = q.size - used;
  if (room == 0) return false;  // completions wait in the service's CQ until the program polls
  ibv_wc wc[16];
  const int n = ibv_poll_cq(q.cq, static_cast<int>(std::min<std::uint32_t>(room, 16)), wc);
  if (n <= 0) return false;
  for (int i = 0; i < n; ++i) q.entries[(q.tail + static_cast<std::uint32_t>(i)) & (q.size - 1)] = wc[i];
  q.tail += static_cast<std::uint32_t>(n);
  q.ring->tail.store(q.tail, std::memory_order_release);
  if (q.event_fd >= 0 && q.ring->armed.exchange(0, std::memory_order_acq_rel) != 0) {
    q.ring->fired.fetch_add(1, std::memory_order_release);
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto w = ::write(q.event_fd, &one, sizeof one);
  }
  return true;
}

bool VerbsService::pump() {
  bool moved = false;
  for (auto& c : clients_) {
    for (auto& [h, q] : c->srqs) moved |= pump_srq(q, *c);
    for (auto& [h, q] : c->qps) moved |= pump_qp(q, *c);
    for (auto& [h, q] : c->cqs) moved |= pump_cq(q);
  }
  return moved;
}

}  // namespace roce::verbs
