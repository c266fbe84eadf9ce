// Creates QPs on a dataplane's workers and brings them to RTS against a peer described by
// an out-of-band record, from the control thread: every engine call runs on the worker that
// owns the QP (Dataplane::call).
#pragma once

#include <infiniband/verbs.h>

#include <mutex>

#include "dataplane/dataplane.hpp"

namespace roce::client {

struct QpParams {
  ibv_qp_type type = IBV_QPT_RC;
  ibv_mtu mtu = IBV_MTU_1024;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t min_rnr_timer = 12;
  std::uint8_t max_rd_atomic = 16;
  std::uint32_t send_depth = 512;
  std::uint32_t recv_depth = 512;
  std::uint32_t max_sge = 1;
  std::uint32_t max_inline = 0;
  std::uint8_t traffic_class = 0;  // the IP TOS byte of what the QP sends (its ECN bits are the engine's)
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  // Receives come from this shared receive queue (create_srq), not a queue of the QP's own:
  // the QP must be created on the SRQ's worker.
  rdma::SharedReceiveQueue* srq = nullptr;
  // RC: the reorder window agreed with the peer for selective repeat (docs/loss.md), set on the
  // QP before RTR; 0 = go-back-N. Only ever what both ends agreed (never a default of ours).
  std::uint32_t selective_repeat = 0;
};

// The reorder window roce-gen and roce-appliance offer and accept for selective repeat by
// default (--selective-repeat): 128 packets. The reorder buffer's slots come from the engine's
// pool as holes need them (lib/rdma/reorder_pool.hpp), not per QP at connection time, so the
// window costs a QP memory only while it holds a hole (docs/loss.md, part 2, session 13).
inline constexpr std::uint32_t kDefaultSelectiveRepeatWindow = 128;
// What a QP takes (QueuePair::set_selective_repeat): 0, or a power of two from 8 to 128.
constexpr bool valid_selective_repeat_window(std::uint32_t w) { return w == 0 || (w >= 8 && w <= 128 && (w & (w - 1)) == 0); }
inline constexpr const char* kSelectiveRepeatHelp =
    "selective repeat with a rocev2-dp peer that agrees (roce-gen, roce-appliance; others always get go-back-N): "
    "the reorder window in packets, a power of two 8 .. 128, 0 = go-back-N always";

struct LocalQp {
  unsigned worker = 0;
  rdma::QueuePair* qp = nullptr;
  rdma::CompletionQueue* cq = nullptr;
  rdma::PdHandle pd = 0;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;  // our starting send PSN
};

struct RemoteQp {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  ibv_gid gid{};
};

class Connector {
 public:
  // pd = 0: a new protection domain. Sessions that share memory share a PD.
  Connector(dp::Dataplane& dp, std::uint64_t psn_seed, rdma::PdHandle pd = 0);

  rdma::PdHandle pd() const { return pd_; }
  dp::Dataplane& dataplane() { return dp_; }
  ibv_gid local_gid() const { return rdma::gid_from_ip(dp_.local().ip); }

  // The worker the next QP goes to, taken in turn (for objects its QPs must share, as an SRQ).
  unsigned next_worker();
  // A QP on the next worker in turn (or on `worker`), in INIT.
  Result<LocalQp> create(const QpParams& p, int worker = -1);
  // Resolves the peer's MAC (ARP) and moves the QP to RTR and RTS.
  Status connect(const LocalQp& qp, const RemoteQp& peer, const QpParams& p, Nanos arp_wait = 3 * kSecond);
  // UD: RTR and RTS straight away (a datagram QP has no peer).
  Status ready_datagram(const LocalQp& qp);
  Status destroy(const LocalQp& qp);
  // A shared receive queue of max_wr `depth` in our PD on `worker`; destroyed after its QPs.
  Result<rdma::SharedReceiveQueue*> create_srq(unsigned worker, std::uint32_t depth, std::uint32_t max_sge = 1);
  Status destroy_srq(unsigned worker, rdma::SharedReceiveQueue* srq);
  Result<const rdma::MemoryRegion*> register_memory(void* addr, std::size_t len, int access);

 private:
  dp::Dataplane& dp_;
  rdma::PdHandle pd_;
  std::mutex mutex_;  // several control threads (one per session) create QPs
  unsigned next_worker_ = 0;
  std::uint64_t psn_state_;
};

}  // namespace roce::client
