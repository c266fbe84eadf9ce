// Send and receive queue entries as the transport keeps them after post_send/post_recv:
// the verbs work request plus the progress the requester and completer make on it.
#pragma once

#include <infiniband/verbs.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/rdma/verbs_ext.hpp"
#include "protocol/headers.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

// A scatter/gather element already translated through its lkey at post time.
struct LocalSegment {
  std::byte* ptr = nullptr;
  std::uint32_t length = 0;
};

enum class WqeState : std::uint8_t {
  Posted,    // not yet started: no PSN assigned
  InFlight,  // PSNs assigned, some or all packets sent, not yet acknowledged
  Done,      // finished (status says how); waits for older WQEs to complete in order
};

// Destination of a UD send (what an address handle stands for).
struct UdDestination {
  roce::proto::MacAddr mac{};
  bool ipv6 = false;
  roce::proto::Ipv4Addr ipv4{};
  roce::proto::Ipv6Addr ipv6_addr{};
  std::uint32_t remote_qpn = 0;
  std::uint32_t remote_qkey = 0;
  // The AH's GRH: its traffic class (the DSCP part; the ECN bits stay the QP's) and the IPv6
  // flow label, on every datagram sent through it.
  std::uint8_t traffic_class = 0;
  std::uint32_t flow_label = 0;
};

// Laid out by use (docs/perf-changes.md section 90): what every WQE of a SEND or WRITE has
// written by post_send, read by the requester's build and by the completer's retire (its id,
// opcode and flags, segments, length, remote fields, PSNs and progress) in its first cache
// line, each WQE starting on a line; the fields of READs, atomics, FLUSH, BIND_MW and UD after
// it. The rate case keeps 256 WQEs in flight (45 KB of a 176-byte WQE, more than the D1): a
// 64 B WRITE's WQE touched three lines, now one.
struct alignas(64) SendWqe {
  std::uint64_t wr_id = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned send_flags = 0;
  std::uint32_t seg_begin = 0;  // first LocalSegment of this WQE in the QP's pool
  std::uint32_t num_seg = 0;
  std::uint32_t length = 0;     // total payload bytes (READ: bytes to read; atomics: 8)
  std::uint32_t imm_or_rkey = 0;  // immediate data (network order as verbs gives it) or rkey to invalidate
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;

  // Progress.
  std::uint32_t first_psn = 0;
  std::uint32_t npackets = 1;   // PSNs the WQE consumes
  std::uint32_t next_packet = 0;  // requester cursor: next packet index to (re)transmit
  ibv_wc_status status = IBV_WC_SUCCESS;
  WqeState state = WqeState::Posted;
  bool signaled = false;
  bool local_error = false;     // an SGE failed lkey translation at post time
  // Selective repeat: finished before an older WQE, it keeps its READ/atomic credit until it
  // retires (the responder's resource for the older one must not be recycled meanwhile).
  bool rd_credit_held = false;

  // The second line and after: READ progress, then what only some opcodes carry.
  std::uint32_t read_packets_received = 0;  // READ: response packets placed so far
  bool read_expect_first = true;            // READ: next response must be FIRST or ONLY
  // READ: its local buffer overlaps an earlier unfinished READ's, so it is placed in order (an
  // out-of-order placement would let the earlier one's late bytes land over its own).
  bool read_in_order = false;
  // READ with selective repeat (requester_read_holes.cpp): one past the furthest response
  // placed; between read_packets_received and it, holes asked for by READs of their own.
  std::uint32_t read_high = 0;
  std::uint64_t compare_add = 0;
  std::uint64_t swap = 0;
  // FLUSH: its FETH (placement type | selectivity << 4); the length to flush is flush_length.
  std::uint8_t flush_feth = 0;
  std::uint32_t flush_length = 0;
  // BIND_MW: the window (imm_or_rkey holds its key), the key it gets (rkey), the region it is
  // bound to and the range [remote_addr, remote_addr + bind_length) of it, and its access.
  std::uint32_t bind_mr_key = 0;
  std::uint64_t bind_length = 0;
  int bind_access = 0;
  UdDestination ud{};

  bool is_read() const { return opcode == IBV_WR_RDMA_READ; }
  bool is_atomic() const { return opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD; }
  bool is_atomic_write() const { return opcode == IBV_WR_ATOMIC_WRITE; }
  bool is_flush() const { return opcode == kWrFlush; }
  // Executed by the QP itself when the requester reaches them: no packet, no PSN.
  bool is_local_op() const { return opcode == IBV_WR_LOCAL_INV || opcode == IBV_WR_BIND_MW; }
  // READs, atomics, ATOMIC_WRITE and FLUSH finish on a response (READ response data, an atomic
  // ACK, a zero-length READ response), not on an acknowledgement; each takes a responder
  // resource on the peer.
  bool needs_response_data() const { return is_read() || is_atomic() || is_atomic_write() || is_flush(); }
  // Inline: the completer asks it per WQE an ACK covers.
  std::uint32_t last_psn() const { return proto::psn_add(first_psn, static_cast<std::int64_t>(npackets) - 1); }
};
static_assert(offsetof(SendWqe, rd_credit_held) < 64, "a SEND's or WRITE's fields in the WQE's first line");

struct RecvWqe {
  std::uint64_t wr_id = 0;
  std::uint32_t seg_begin = 0;
  std::uint32_t num_seg = 0;
  std::uint32_t length = 0;  // capacity in bytes
  bool local_error = false;
};

// Fixed-capacity FIFO of `depth` entries; indices only grow, so a WQE's slot is index modulo
// the slot count, which is depth rounded up to a power of two: a mask, not a 64-bit division
// (one per post, per WQE the requester walks to and per retire; the division's latency is
// tens of cycles). Arrays kept per slot are slots() long.
template <typename T>
class WorkQueue {
 public:
  explicit WorkQueue(std::uint32_t depth = 0)
      : slots_(depth ? std::bit_ceil(depth) : 0), depth_(depth), mask_(depth ? std::bit_ceil(depth) - 1 : 0) {}
  std::uint32_t depth() const { return depth_; }
  std::uint32_t slots() const { return static_cast<std::uint32_t>(slots_.size()); }
  bool full() const { return tail_ - head_ == depth_; }
  bool empty() const { return tail_ == head_; }
  std::uint64_t head() const { return head_; }
  std::uint64_t tail() const { return tail_; }
  std::uint32_t slot_of(std::uint64_t index) const { return static_cast<std::uint32_t>(index & mask_); }
  T& at(std::uint64_t index) { return slots_[slot_of(index)]; }
  const T& at(std::uint64_t index) const { return slots_[slot_of(index)]; }
  T& push() { return slots_[slot_of(tail_++)]; }
  // The same, telling the slot taken (one division, not two: post_send keeps segments by slot).
  T& push(std::uint32_t* slot) {
    *slot = slot_of(tail_++);
    return slots_[*slot];
  }
  void pop() { ++head_; }
  // An empty queue's indices moved on to the next multiple of the slot count, so that the next
  // push takes slot 0 (QueuePair::post_send; docs/perf-changes.md section 83). Indices still only
  // grow; no entry is in the queue, so none changes slot. Whoever keeps an index of the queue
  // (the requester's cursor) follows.
  void restart_at_first_slot() {
    if (tail_ == head_) head_ = tail_ = (tail_ + mask_) & ~std::uint64_t{mask_};
  }
  std::uint64_t size() const { return tail_ - head_; }

 private:
  std::vector<T> slots_;
  std::uint32_t depth_ = 0;
  std::uint32_t mask_ = 0;
  std::uint64_t head_ = 0;
  std::uint64_t tail_ = 0;
};

}  // namespace roce::rdma
