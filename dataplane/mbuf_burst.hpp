// Freeing a received burst. A burst of plain mbufs (direct, one segment, no other reference,
// all from one pool: what a ring port or a NIC queue delivers) goes back to the pool in one
// put. rte_pktmbuf_free_bulk checks and fixes each mbuf and copies it to a staging array
// before its put; here the checks are a few loads folded together without a branch, and a
// burst that fails any of them takes the library's path whole.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>

namespace roce::dp {

// Zero when rte_pktmbuf_free would hand `m` straight to `pool` with nothing changed in it: the
// pool's invariant (one segment, `next` null, refcnt 1) already holds and nothing is attached.
inline std::uint64_t not_plain_bits(const rte_mbuf* m, const rte_mempool* pool) {
  // refcnt read plainly (as rte_mbuf_refcnt_read does): only this lcore holds the burst, and
  // next to nb_segs the two are one load.
  const std::uint32_t counts = m->refcnt | std::uint32_t{m->nb_segs} << 16;
  return (reinterpret_cast<std::uintptr_t>(m->pool) ^ reinterpret_cast<std::uintptr_t>(pool)) |
         reinterpret_cast<std::uintptr_t>(m->next) | (counts ^ 0x10001u) |
         (m->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL));
}

inline bool plain_mbuf_of(const rte_mbuf* m, const rte_mempool* pool) { return not_plain_bits(m, pool) == 0; }

// rte_pktmbuf_reset of an mbuf plain_mbuf_of has just passed, less what that test proved: `next`
// is already null and nb_segs already 1 (not stored again), and no flag the reset keeps is set
// (no EXTERNAL bit: ol_flags becomes 0 without being read). The rest as the library resets it.
inline void reset_plain(rte_mbuf* m) {
  m->pkt_len = 0;
  m->tx_offload = 0;
  m->vlan_tci = 0;
  m->vlan_tci_outer = 0;
  m->port = RTE_MBUF_PORT_INVALID;
  m->ol_flags = 0;
  m->packet_type = 0;
  rte_pktmbuf_reset_headroom(m);
  m->data_len = 0;
}

// The bits of not_plain_bits over m[0..n), folded: zero when every one is a plain mbuf of `pool`.
inline std::uint64_t not_plain_bits(rte_mbuf* const* m, unsigned n, const rte_mempool* pool) {
  std::uint64_t bits = 0;
  for (unsigned i = 0; i < n; ++i) bits |= not_plain_bits(m[i], pool);
  return bits;
}

inline void free_burst(rte_mbuf** m, unsigned n) {
  if (n == 0) return;
  rte_mempool* pool = m[0]->pool;
  if (not_plain_bits(m, n, pool) == 0) rte_mempool_put_bulk(pool, reinterpret_cast<void* const*>(m), n);
  else rte_pktmbuf_free_bulk(m, n);
}

}  // namespace roce::dp
