// The service's side of a program's memory registration (FreeFlow's move, shared_memory.hpp):
// the program's pages arrive as sealed memfds, are mapped here in one contiguous range, and
// that range is registered with the program's iova, so the engine reads and writes the
// program's own pages and the program's addresses (as iova) name them. And the test probe that
// WRITEs into such a region from a QP pair of the service.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "verbs/service.hpp"

namespace roce::verbs {
namespace {

std::uint64_t page_bytes() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

// A memfd the program may not shrink under the service's mapping (that would fault the
// dataplane with SIGBUS when it touched the lost pages), big enough for its segment.
int check_file(int fd, std::uint64_t offset, std::uint64_t length) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return EINVAL;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) return EINVAL;
  if (offset + length < offset || static_cast<std::uint64_t>(st.st_size) < offset + length) return EINVAL;
  return 0;
}

}  // namespace

bool VerbsService::may_map(const Client& c, std::uint64_t bytes) const {
  std::uint64_t mapped = 0;
  for (const auto& [h, region] : c.mrs) mapped += region.map_bytes;
  for (const auto& [h, q] : c.cqs) mapped += q.map_bytes;
  for (const auto& [h, q] : c.qps) mapped += q.map_bytes;
  for (const auto& [h, q] : c.srqs) mapped += q.map_bytes;
  return mapped <= opt_.max_map_bytes && bytes <= opt_.max_map_bytes - mapped;
}

int VerbsService::reg_mr(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files,
                         service::Reply& out) {
  const auto pd = c.pds.find(r.handle);
  if (pd == c.pds.end()) return EINVAL;
  service::RegMrRequest q{};
  if (len < offsetof(service::RegMrRequest, segment)) return EINVAL;
  std::memcpy(&q, r.body, std::min(len, sizeof q));
  if (q.segments == 0 || q.segments > service::kMaxSegments || files.size() != q.segments) return EINVAL;
  if (len < offsetof(service::RegMrRequest, segment) + q.segments * sizeof(service::RegMrRequest::Segment)) return EINVAL;
  const std::uint64_t page = page_bytes();
  if (q.length == 0 || q.addr + q.length < q.addr) return EINVAL;
  const std::uint64_t start = q.addr & ~(page - 1);
  const std::uint64_t end = (q.addr + q.length + page - 1) & ~(page - 1);
  if (end < start) return EINVAL;
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < q.segments; ++i) {
    const auto& s = q.segment[i];
    if (s.length == 0 || s.length % page || s.fd_offset % page) return EINVAL;
    if (int rc = check_file(files[i], s.fd_offset, s.length)) return rc;
    total += s.length;
    if (total < s.length) return EINVAL;
  }
  if (total != end - start) return EINVAL;  // the segments must cover the buffer's pages exactly
  if (!may_map(c, total)) return ENOMEM;
  // One contiguous range of the service's address space, then each segment over its part.
  void* map = ::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) return ENOMEM;
  std::uint64_t at = 0;
  for (std::uint32_t i = 0; i < q.segments; ++i) {
    const auto& s = q.segment[i];
    if (::mmap(static_cast<char*>(map) + at, s.length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, files[i],
               static_cast<off_t>(s.fd_offset)) == MAP_FAILED) {
      const int e = errno;
      ::munmap(map, total);
      return e;
    }
    at += s.length;
  }
  void* base = static_cast<char*>(map) + (q.addr - start);
  ibv_mr* mr = ibv_reg_mr_iova2(pd->second, base, q.length, q.iova, q.access);
  if (mr == nullptr) {
    const int e = errno ? errno : EINVAL;
    ::munmap(map, total);
    return e;
  }
  const std::uint32_t h = c.next_handle++;
  const auto it = c.mrs.emplace(h, Region{mr, map, total, q.addr}).first;
  c.mr_by_lkey[mr->lkey] = &it->second;
  service::RegMrReply rep{h, mr->lkey, mr->rkey};
  std::memcpy(out.body, &rep, sizeof rep);
  out.size = sizeof rep;
  return 0;
}

namespace {

// RESET -> INIT -> RTR -> RTS of an RC QP toward `peer` at `gid` (the service's own port).
int connect_rc(ibv_qp* qp, std::uint32_t peer, const ibv_gid& gid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return rc;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (int rc = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return rc;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

}  // namespace

// Two RC QPs of the program's PD, connected to each other through the service's port (it
// must loop back, as net_ring does), one WRITE from a buffer of the service into (addr, rkey):
// the bytes travel as packets and the responder places them through the program's MR.
int VerbsService::probe_write(Client& c, const service::Request& r, std::size_t len, service::Reply& out) {
  const auto pd = c.pds.find(r.handle);
  if (pd == c.pds.end() || len < sizeof(service::ProbeWriteRequest)) return EINVAL;
  service::ProbeWriteRequest q{};
  std::memcpy(&q, r.body, sizeof q);
  if (q.length == 0 || q.length > service::kProbeBytes) return EINVAL;
  ibv_gid gid{};
  if (ibv_query_gid(c.ctx, 1, 0, &gid) != 0) return EIO;
  std::vector<std::uint8_t> src(q.length, q.pattern);
  ibv_cq* cq = ibv_create_cq(c.ctx, 4, nullptr, nullptr, 0);
  const int local = IBV_ACCESS_LOCAL_WRITE;  // an int: verbs.h's ibv_reg_mr macro ors it with another enum
  ibv_mr* mr = ibv_reg_mr(pd->second, src.data(), src.size(), local);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap = {1, 1, 1, 1, 0};
  ibv_qp* a = cq && mr ? ibv_create_qp(pd->second, &ia) : nullptr;
  ibv_qp* b = a ? ibv_create_qp(pd->second, &ia) : nullptr;
  int err = b ? 0 : (errno ? errno : ENOMEM);
  if (!err) err = connect_rc(a, b->qp_num, gid);
  if (!err) err = connect_rc(b, a->qp_num, gid);
  if (!err) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(src.data()), q.length, mr->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = q.addr;
    wr.wr.rdma.rkey = q.rkey;
    err = ibv_post_send(a, &wr, &bad);
  }
  if (!err) {
    // Polling drives the engine (library mode); the bound only limits a broken port's wait.
    ibv_wc wc{};
    int got = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got == 0 && std::chrono::steady_clock::now() < until) got = ibv_poll_cq(cq, 1, &wc);
    if (got != 1) {
      err = ETIMEDOUT;
    } else {
      service::Handle status{static_cast<std::uint32_t>(wc.status)};
      std::memcpy(out.body, &status, sizeof status);
      out.size = sizeof status;
      err = wc.status == IBV_WC_SUCCESS ? 0 : EIO;
    }
  }
  if (b) ibv_destroy_qp(b);
  if (a) ibv_destroy_qp(a);
  if (mr) ibv_dereg_mr(mr);
  if (cq) ibv_destroy_cq(cq);
  return err;
}

}  // namespace roce::verbs
