// The extended send API (ibv_wr_start .. ibv_wr_complete) on QPs made with send_ops_flags: the
// builders collect work requests; wr_complete posts them as one list, as a doorbell would.
#include <cstring>

#include "verbs/objects.hpp"
#include "verbs/ops.hpp"

namespace roce::verbs {
namespace {

Qp& qp_of(ibv_qp_ex* qp) { return *static_cast<Qp*>(qp); }

ibv_send_wr& begin(ibv_qp_ex* ex, ibv_wr_opcode op) {
  Qp& q = qp_of(ex);
  Qp::Pending& p = q.batch.emplace_back();
  p.wr.wr_id = ex->wr_id;
  p.wr.send_flags = ex->wr_flags;
  p.wr.opcode = op;
  p.first_sge = static_cast<std::uint32_t>(q.sges.size());
  return p.wr;
}

// Builders called out of order (a setter before any WR) or for what the device lacks fail the
// batch at wr_complete, as providers do.
ibv_send_wr* last(ibv_qp_ex* ex) {
  Qp& q = qp_of(ex);
  if (q.batch.empty()) {
    q.batch_error = EINVAL;
    return nullptr;
  }
  return &q.batch.back().wr;
}

void unsupported(ibv_qp_ex* ex) { qp_of(ex).batch_error = EOPNOTSUPP; }

void wr_start(ibv_qp_ex* ex) {
  Qp& q = qp_of(ex);
  q.batch.clear();
  q.sges.clear();
  q.inline_bytes.clear();
  q.batch_error = 0;
}

void wr_abort(ibv_qp_ex* ex) { wr_start(ex); }

int wr_complete(ibv_qp_ex* ex) {
  Qp& q = qp_of(ex);
  if (q.batch_error || q.batch.empty()) {
    const int err = q.batch_error;
    wr_start(ex);
    return err;
  }
  for (std::size_t i = 0; i < q.batch.size(); ++i) {
    Qp::Pending& p = q.batch[i];
    ibv_send_wr& w = p.wr;
    if (p.inline_data) {
      // One SGE over this WR's bytes in inline_bytes (which may have moved while it grew).
      p.inline_sge = ibv_sge{reinterpret_cast<std::uintptr_t>(q.inline_bytes.data()) + p.inline_at, p.inline_len, 0};
      w.sg_list = &p.inline_sge;
      w.num_sge = 1;
    } else {
      w.sg_list = w.num_sge ? &q.sges[p.first_sge] : nullptr;
    }
    w.next = i + 1 < q.batch.size() ? &q.batch[i + 1].wr : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = post_send_op(&ex->qp_base, &q.batch.front().wr, &bad);
  wr_start(ex);
  return rc;
}

void wr_rdma_write(ibv_qp_ex* ex, std::uint32_t rkey, std::uint64_t addr) {
  ibv_send_wr& w = begin(ex, IBV_WR_RDMA_WRITE);
  w.wr.rdma.rkey = rkey;
  w.wr.rdma.remote_addr = addr;
}
void wr_rdma_write_imm(ibv_qp_ex* ex, std::uint32_t rkey, std::uint64_t addr, __be32 imm) {
  ibv_send_wr& w = begin(ex, IBV_WR_RDMA_WRITE_WITH_IMM);
  w.wr.rdma.rkey = rkey;
  w.wr.rdma.remote_addr = addr;
  w.imm_data = imm;
}
void wr_rdma_read(ibv_qp_ex* ex, std::uint32_t rkey, std::uint64_t addr) {
  ibv_send_wr& w = begin(ex, IBV_WR_RDMA_READ);
  w.wr.rdma.rkey = rkey;
  w.wr.rdma.remote_addr = addr;
}
void wr_send(ibv_qp_ex* ex) { begin(ex, IBV_WR_SEND); }
void wr_send_imm(ibv_qp_ex* ex, __be32 imm) { begin(ex, IBV_WR_SEND_WITH_IMM).imm_data = imm; }
void wr_send_inv(ibv_qp_ex* ex, std::uint32_t rkey) { begin(ex, IBV_WR_SEND_WITH_INV).invalidate_rkey = rkey; }
void wr_atomic_cmp_swp(ibv_qp_ex* ex, std::uint32_t rkey, std::uint64_t addr, std::uint64_t compare, std::uint64_t swap) {
  ibv_send_wr& w = begin(ex, IBV_WR_ATOMIC_CMP_AND_SWP);
  w.wr.atomic.rkey = rkey;
  w.wr.atomic.remote_addr = addr;
  w.wr.atomic.compare_add = compare;
  w.wr.atomic.swap = swap;
}
void wr_atomic_fetch_add(ibv_qp_ex* ex, std::uint32_t rkey, std::uint64_t addr, std::uint64_t add) {
  ibv_send_wr& w = begin(ex, IBV_WR_ATOMIC_FETCH_AND_ADD);
  w.wr.atomic.rkey = rkey;
  w.wr.atomic.remote_addr = addr;
  w.wr.atomic.compare_add = add;
}
void wr_set_ud_addr(ibv_qp_ex* ex, ibv_ah* ah, std::uint32_t remote_qpn, std::uint32_t remote_qkey) {
  if (ibv_send_wr* w = last(ex)) {
    w->wr.ud.ah = ah;
    w->wr.ud.remote_qpn = remote_qpn;
    w->wr.ud.remote_qkey = remote_qkey;
  }
}
void wr_set_sge(ibv_qp_ex* ex, std::uint32_t lkey, std::uint64_t addr, std::uint32_t length) {
  if (ibv_send_wr* w = last(ex)) {
    qp_of(ex).sges.push_back(ibv_sge{addr, length, lkey});
    w->num_sge = 1;
  }
}
void wr_set_sge_list(ibv_qp_ex* ex, std::size_t n, const ibv_sge* list) {
  if (ibv_send_wr* w = last(ex)) {
    auto& s = qp_of(ex).sges;
    s.insert(s.end(), list, list + n);
    w->num_sge = static_cast<int>(n);
  }
}
// Inline bytes are copied now (the caller may reuse its buffers at once), one WR's back to back.
void set_inline(ibv_qp_ex* ex, const ibv_data_buf* bufs, std::size_t n) {
  if (last(ex) == nullptr) return;
  Qp& q = qp_of(ex);
  Qp::Pending& p = q.batch.back();
  p.inline_data = true;
  p.inline_at = static_cast<std::uint32_t>(q.inline_bytes.size());
  p.inline_len = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = q.inline_bytes.size();
    q.inline_bytes.resize(at + bufs[i].length);
    if (bufs[i].length) std::memcpy(q.inline_bytes.data() + at, bufs[i].addr, bufs[i].length);
    p.inline_len += static_cast<std::uint32_t>(bufs[i].length);
  }
  p.wr.send_flags |= IBV_SEND_INLINE;
}
void wr_set_inline_data(ibv_qp_ex* ex, void* addr, std::size_t length) {
  const ibv_data_buf b{addr, length};
  set_inline(ex, &b, 1);
}
void wr_set_inline_data_list(ibv_qp_ex* ex, std::size_t n, const ibv_data_buf* bufs) { set_inline(ex, bufs, n); }
void wr_set_xrc_srqn(ibv_qp_ex* ex, std::uint32_t) { unsupported(ex); }
void wr_local_inv(ibv_qp_ex* ex, std::uint32_t rkey) { begin(ex, IBV_WR_LOCAL_INV).invalidate_rkey = rkey; }
void wr_bind_mw(ibv_qp_ex* ex, ibv_mw* mw, std::uint32_t rkey, const ibv_mw_bind_info* info) {
  if (mw == nullptr || info == nullptr) {
    qp_of(ex).batch_error = EINVAL;
    return;
  }
  ibv_send_wr& w = begin(ex, IBV_WR_BIND_MW);
  w.bind_mw.mw = mw;
  w.bind_mw.rkey = rkey;
  w.bind_mw.bind_info = *info;
}
void wr_send_tso(ibv_qp_ex* ex, void*, std::uint16_t, std::uint16_t) { unsupported(ex); }
// The 8 bytes are copied now (rdma-core's contract), carried inline in the WQE.
void wr_atomic_write(ibv_qp_ex* ex, std::uint32_t rkey, std::uint64_t addr, const void* data) {
  ibv_send_wr& w = begin(ex, IBV_WR_ATOMIC_WRITE);
  w.wr.rdma.rkey = rkey;
  w.wr.rdma.remote_addr = addr;
  const ibv_data_buf b{const_cast<void*>(data), 8};
  set_inline(ex, &b, 1);
}

}  // namespace

void install_wr_api(Qp& q) {
  q.wr_start = wr_start;
  q.wr_complete = wr_complete;
  q.wr_abort = wr_abort;
  q.wr_rdma_write = wr_rdma_write;
  q.wr_rdma_write_imm = wr_rdma_write_imm;
  q.wr_rdma_read = wr_rdma_read;
  q.wr_send = wr_send;
  q.wr_send_imm = wr_send_imm;
  q.wr_send_inv = wr_send_inv;
  q.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  q.wr_atomic_fetch_add = wr_atomic_fetch_add;
  q.wr_set_ud_addr = wr_set_ud_addr;
  q.wr_set_sge = wr_set_sge;
  q.wr_set_sge_list = wr_set_sge_list;
  q.wr_set_inline_data = wr_set_inline_data;
  q.wr_set_inline_data_list = wr_set_inline_data_list;
  q.wr_set_xrc_srqn = wr_set_xrc_srqn;
  q.wr_local_inv = wr_local_inv;
  q.wr_bind_mw = wr_bind_mw;
  q.wr_send_tso = wr_send_tso;
  q.wr_atomic_write = wr_atomic_write;
}

}  // namespace roce::verbs
