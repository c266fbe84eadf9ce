// Verbs values newer than Debian 12's libibverbs (rdma-core 44): FLUSH (rdma-core 45+, Linux
// 6.2+) and its access flags. The numbers are rdma-core's and the kernel's (verbs.h,
// ib_user_verbs.h), so a work request or a completion reads the same on a newer libibverbs.
// rdma-core only offers FLUSH through ibv_wr_flush(); this library's ibv_send_wr-based
// post_send carries its arguments as flush_wr() lays them out.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace roce::rdma {

inline constexpr auto kWrFlush = static_cast<ibv_wr_opcode>(14);  // IBV_WR_FLUSH
inline constexpr auto kWcFlush = static_cast<ibv_wc_opcode>(8);   // IBV_WC_FLUSH

// Memory region and QP access flags a FLUSH of each placement type needs.
inline constexpr int kAccessFlushGlobal = 1 << 8;      // IBV_ACCESS_FLUSH_GLOBAL
inline constexpr int kAccessFlushPersistent = 1 << 9;  // IBV_ACCESS_FLUSH_PERSISTENT

// FETH placement type bits (IBA A19.4.1.1) and selectivity levels (A19.4.1.2).
inline constexpr std::uint8_t kFlushGlobal = 1 << 0;      // IB_FLUSH_GLOBAL
inline constexpr std::uint8_t kFlushPersistent = 1 << 1;  // IB_FLUSH_PERSISTENT
inline constexpr std::uint8_t kFlushPlacementMask = kFlushGlobal | kFlushPersistent;
inline constexpr std::uint8_t kFlushRange = 0;  // IB_FLUSH_RANGE: [va, va + length)
inline constexpr std::uint8_t kFlushMr = 1;     // IB_FLUSH_MR: the whole region the R_Key names

// A FLUSH work request for post_send: the target in wr.atomic (remote_addr, rkey), the length
// in wr.atomic.compare_add, placement type | selectivity << 4 in wr.atomic.swap (the FETH's own
// layout). No scatter list.
inline ibv_send_wr flush_wr(std::uint64_t wr_id, std::uint32_t rkey, std::uint64_t remote_addr, std::uint32_t length,
                            std::uint8_t placement, std::uint8_t selectivity, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = kWrFlush;
  wr.send_flags = flags;
  wr.wr.atomic.remote_addr = remote_addr;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = length;
  wr.wr.atomic.swap = static_cast<std::uint64_t>(placement & 0x0F) | static_cast<std::uint64_t>(selectivity & 0x03) << 4;
  return wr;
}

}  // namespace roce::rdma
