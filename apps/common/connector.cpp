#include "apps/common/connector.hpp"

namespace roce::app {

Connector::Connector(dp::Dataplane& dp, std::uint64_t psn_seed, PdHandle pd)
    : dp_(dp), pd_(pd ? pd : dp.memory().alloc_pd()), psn_state_(psn_seed | 1) {}

Result<LocalQp> Connector::create(const QpParams& p, int worker) {
  unsigned w;
  std::uint32_t psn;
  {
    std::lock_guard lock(mutex_);
    w = worker >= 0 ? static_cast<unsigned>(worker) : next_worker_++ % dp_.worker_count();
    // xorshift: a different starting PSN per QP, as lrand48() gives the real tools.
    psn_state_ ^= psn_state_ << 13;
    psn_state_ ^= psn_state_ >> 7;
    psn_state_ ^= psn_state_ << 17;
    psn = static_cast<std::uint32_t>(psn_state_ & 0xFFFFFF);
  }
  const PdHandle pd = pd_;
  return dp_.call(w, [&](Engine& e) -> Result<LocalQp> {
    auto cq = e.create_cq(p.send_depth + p.recv_depth + 16);
    if (!cq) return cq.error();
    QpInit init;
    init.type = p.type;
    init.send_cq = *cq;
    init.recv_cq = *cq;
    init.cap = ibv_qp_cap{p.send_depth, p.recv_depth, p.max_sge, p.max_sge, p.max_inline};
    auto qp = e.create_qp(pd, init);
    if (!qp) return qp.error();
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (p.type == IBV_QPT_UD) {
      a.qkey = 0x11111111;
      mask |= IBV_QP_QKEY;
    } else {
      a.qp_access_flags = static_cast<unsigned>(p.access);
      mask |= IBV_QP_ACCESS_FLAGS;
    }
    if (Status s = e.modify_qp(*qp, a, mask); !s) return s.error();
    return LocalQp{w, *qp, *cq, pd, (*qp)->qpn(), psn};
  });
}

Status Connector::connect(const LocalQp& qp, const RemoteQp& peer, const QpParams& p, Nanos arp_wait) {
  const IpAddress ip = ip_from_gid(peer.gid);
  if (ip.version == proto::IpVersion::V4 && !dp_.resolve(ip, arp_wait))
    return make_error(EHOSTUNREACH, "no ARP answer from " + to_string(ip) + " (is the peer on this port's link?)");
  return dp_.call(qp.worker, [&](Engine& e) -> Status {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    int mask = IBV_QP_STATE;
    if (p.type != IBV_QPT_UD) {
      a.path_mtu = p.mtu;
      a.dest_qp_num = peer.qpn;
      a.rq_psn = peer.psn;
      a.ah_attr.is_global = 1;
      a.ah_attr.grh.dgid = peer.gid;
      a.ah_attr.grh.hop_limit = 64;
      a.ah_attr.port_num = 1;
      mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (p.type == IBV_QPT_RC) {
        a.max_dest_rd_atomic = p.max_rd_atomic;
        a.min_rnr_timer = p.min_rnr_timer;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      }
    }
    if (Status s = e.modify_qp(qp.qp, a, mask); !s) return s;
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = qp.psn;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (p.type == IBV_QPT_RC) {
      a.timeout = p.timeout;
      a.retry_cnt = p.retry_cnt;
      a.rnr_retry = p.rnr_retry;
      a.max_rd_atomic = p.max_rd_atomic;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    return e.modify_qp(qp.qp, a, mask);
  });
}

Status Connector::destroy(const LocalQp& qp) {
  return dp_.call(qp.worker, [&](Engine& e) -> Status {
    if (Status s = e.destroy_qp(qp.qp); !s) return s;
    return e.destroy_cq(qp.cq);
  });
}

Result<const MemoryRegion*> Connector::register_memory(void* addr, std::size_t len, int access) {
  return dp_.memory().register_region(pd_, addr, len, access);
}

}  // namespace roce::app
