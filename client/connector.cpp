#include "client/connector.hpp"

#include "lib/rdma/qp_bring_up.hpp"

namespace roce::client {

namespace {

// What a peer on the link failed to answer, by its family.
std::string no_answer_from(const rdma::IpAddress& ip) {
  return (ip.version == proto::IpVersion::V4 ? "no ARP answer from " : "no neighbour advertisement from ") + to_string(ip);
}

}  // namespace


Connector::Connector(dp::Dataplane& dp, std::uint64_t psn_seed, rdma::PdHandle pd)
    : dp_(dp), pd_(pd ? pd : dp.memory().alloc_pd()), psn_state_(psn_seed | 1) {}

unsigned Connector::next_worker() {
  std::lock_guard lock(mutex_);
  return next_worker_++ % dp_.worker_count();
}

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
  const rdma::PdHandle pd = pd_;
  return dp_.call(w, [&](rdma::Engine& e) -> Result<LocalQp> {
    auto cq = e.create_cq(p.send_depth + p.recv_depth + 16);
    if (!cq) return cq.error();
    rdma::QpInit init;
    init.type = p.type;
    init.send_cq = *cq;
    init.recv_cq = *cq;
    init.cap = ibv_qp_cap{p.send_depth, p.recv_depth, p.max_sge, p.max_sge, p.max_inline};
    init.srq = p.srq;
    auto qp = e.create_qp(pd, init);
    if (!qp) return qp.error();
    if (Status s = rdma::modify_to_init(e, *qp, p.type, p.access, 0x11111111); !s) return s.error();
    return LocalQp{w, *qp, *cq, pd, (*qp)->qpn(), psn};
  });
}

Status Connector::connect(const LocalQp& qp, const RemoteQp& peer, const QpParams& p, Nanos arp_wait) {
  const rdma::IpAddress ip = rdma::ip_from_gid(peer.gid);
  if (!dp_.resolve(ip, arp_wait))
    return make_error(EHOSTUNREACH, no_answer_from(ip) + " (is the peer on this port's link?)");
  return dp_.call(qp.worker, [&](rdma::Engine& e) -> Status {
    if (p.type == IBV_QPT_RC)
      if (Status s = qp.qp->set_selective_repeat(p.selective_repeat); !s) return s;
    rdma::PeerPath path;
    path.mtu = p.mtu;
    path.dest_qpn = peer.qpn;
    path.rq_psn = peer.psn;
    path.dgid = peer.gid;
    path.traffic_class = p.traffic_class;
    path.max_dest_rd_atomic = p.max_rd_atomic;
    path.min_rnr_timer = p.min_rnr_timer;
    return rdma::modify_to_rts(e, qp.qp, p.type, path, rdma::SendSide{qp.psn, p.timeout, p.retry_cnt, p.rnr_retry, p.max_rd_atomic});
  });
}

Status Connector::ready_datagram(const LocalQp& qp) {
  return dp_.call(qp.worker, [&](rdma::Engine& e) -> Status {
    return rdma::modify_to_rts(e, qp.qp, IBV_QPT_UD, rdma::PeerPath{}, rdma::SendSide{qp.psn});
  });
}

Status Connector::destroy(const LocalQp& qp) {
  return dp_.call(qp.worker, [&](rdma::Engine& e) -> Status {
    if (Status s = e.destroy_qp(qp.qp); !s) return s;
    return e.destroy_cq(qp.cq);
  });
}

Result<rdma::SharedReceiveQueue*> Connector::create_srq(unsigned worker, std::uint32_t depth, std::uint32_t max_sge) {
  const rdma::PdHandle pd = pd_;
  return dp_.call(worker, [&](rdma::Engine& e) {
    ibv_srq_attr attr{};
    attr.max_wr = depth;
    attr.max_sge = max_sge;
    return e.create_srq(pd, attr);
  });
}

Status Connector::destroy_srq(unsigned worker, rdma::SharedReceiveQueue* srq) {
  return dp_.call(worker, [&](rdma::Engine& e) { return e.destroy_srq(srq); });
}

Result<const rdma::MemoryRegion*> Connector::register_memory(void* addr, std::size_t len, int access) {
  return dp_.memory().register_region(pd_, addr, len, access);
}

}  // namespace roce::client
