// Service mode's data path (docs/verbs.md, slice 3): rings in shared memory between a program
// and roce-verbsd, one memfd per QP (a send and a receive ring of WQEs) and one per CQ (a ring
// of ibv_wc), made by the program and passed to the service with the create request. Single
// producer, single consumer; each side keeps its own index privately and publishes it in the
// header (the tail is the doorbell the service polls). The service never trusts what the
// program wrote: it keeps its own copy of its index, bounds the program's by the ring size,
// copies each WQE out before checking it, and indexes modulo the size it was told at creation.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace roce::verbs::service {

inline constexpr std::uint32_t kMaxWqeSge = 16;
inline constexpr std::uint32_t kMaxWqeInline = 256;
inline constexpr std::uint32_t kMaxRingEntries = 1u << 16;

struct RingHeader {
  alignas(64) std::atomic<std::uint32_t> head{0};  // the consumer's: entries before it are free again
  alignas(64) std::atomic<std::uint32_t> tail{0};  // the producer's: entries before it are filled
  // CQ rings: `armed` is set by ibv_req_notify_cq and cleared by whichever side raises the
  // event; `fired` counts events the service raised, taken by ibv_get_cq_event.
  alignas(64) std::atomic<std::uint32_t> armed{0};
  std::atomic<std::uint32_t> fired{0};
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

struct SendWqe {
  std::uint64_t wr_id = 0;
  std::uint32_t opcode = 0;  // ibv_wr_opcode
  std::uint32_t send_flags = 0;
  std::uint32_t num_sge = 0;
  std::uint32_t imm_data = 0;  // imm_data or invalidate_rkey, as the program gave it
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  std::uint32_t inline_bytes = 0;  // with IBV_SEND_INLINE: the bytes are in `inline_data`
  std::uint64_t compare_add = 0;
  std::uint64_t swap = 0;
  std::uint32_t ah = 0;  // UD: the service's handle of the address handle
  std::uint32_t remote_qpn = 0;
  std::uint32_t remote_qkey = 0;
  std::uint32_t reserved = 0;
  // BIND_MW and kRingBindType1: the window and the region by the service's handles, the range
  // and access as ibv_mw_bind_info has them; the new key is `rkey`.
  struct Bind {
    std::uint32_t mw = 0;
    std::uint32_t mr = 0;  // 0: unbind
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    std::uint32_t access = 0;
  } bind;
  union {
    ibv_sge sge[kMaxWqeSge];
    std::uint8_t inline_data[kMaxWqeInline];
  };
};

// A ring-only opcode: a type 1 window bound by ibv_bind_mw (the service binds it the same way);
// IBV_WR_BIND_MW in a ring is a work request binding a type 2 window.
inline constexpr std::uint32_t kRingBindType1 = 0x10000;

struct RecvWqe {
  std::uint64_t wr_id = 0;
  std::uint32_t num_sge = 0;
  std::uint32_t reserved = 0;
  ibv_sge sge[kMaxWqeSge];
};

// Where a QP's two rings sit in its memfd, and how big the file is.
struct QpRingLayout {
  std::size_t sq_header = 0, sq_entries = 0, rq_header = 0, rq_entries = 0, bytes = 0;
};
inline QpRingLayout qp_ring_layout(std::uint32_t sq_size, std::uint32_t rq_size) {
  auto up = [](std::size_t n) { return (n + 4095) & ~std::size_t{4095}; };
  QpRingLayout l;
  l.sq_header = 0;
  l.sq_entries = sizeof(RingHeader);
  l.rq_header = up(l.sq_entries + sq_size * sizeof(SendWqe));
  l.rq_entries = l.rq_header + sizeof(RingHeader);
  l.bytes = up(l.rq_entries + rq_size * sizeof(RecvWqe));
  return l;
}
inline std::size_t cq_ring_bytes(std::uint32_t size) {
  return (sizeof(RingHeader) + size * sizeof(ibv_wc) + 4095) & ~std::size_t{4095};
}
// An SRQ's memfd: one ring of receive WQEs.
inline std::size_t srq_ring_bytes(std::uint32_t size) {
  return (sizeof(RingHeader) + size * sizeof(RecvWqe) + 4095) & ~std::size_t{4095};
}
inline bool valid_ring_size(std::uint32_t n) { return n >= 1 && n <= kMaxRingEntries && (n & (n - 1)) == 0; }
inline std::uint32_t ring_size_for(std::uint32_t wanted) {
  std::uint32_t n = 1;
  while (n < wanted && n < kMaxRingEntries) n <<= 1;
  return n;
}

struct CreateCqRequest {
  std::uint32_t cqe = 0;         // as the program asked
  std::uint32_t ring_size = 0;   // entries of the ring in the passed memfd (a power of 2)
  std::uint32_t has_channel = 0;  // a second file: the completion channel's eventfd
};
struct CreateCqReply {
  std::uint32_t handle = 0;
  std::uint32_t cqe = 0;
};

struct CreateQpRequest {
  std::uint32_t send_cq = 0, recv_cq = 0;  // handles
  std::uint32_t srq = 0;                   // handle, 0: none (the QP's own receive ring)
  std::uint32_t qp_type = 0;
  std::uint32_t sq_sig_all = 0;
  ibv_qp_cap cap{};
  std::uint32_t sq_size = 0, rq_size = 0;  // ring entries (powers of 2)
};
struct CreateQpReply {
  std::uint32_t handle = 0;
  std::uint32_t qp_num = 0;
  ibv_qp_cap cap{};
};

struct CreateSrqRequest {
  ibv_srq_attr attr{};         // as the program asked
  std::uint32_t ring_size = 0;  // entries of the ring in the passed memfd (a power of 2)
};
struct CreateSrqReply {
  std::uint32_t handle = 0;
  ibv_srq_attr attr{};  // what the SRQ really got
};
struct ModifySrqRequest {
  ibv_srq_attr attr{};
  std::int32_t mask = 0;
};

struct ModifyQpRequest {
  ibv_qp_attr attr{};
  std::int32_t mask = 0;
};
struct QueryQpReply {
  ibv_qp_attr attr{};
  ibv_qp_cap cap{};
  std::uint32_t sq_sig_all = 0;
};

}  // namespace roce::verbs::service
