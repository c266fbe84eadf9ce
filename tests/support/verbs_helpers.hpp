// Short-hands for tests: create and connect QPs the way ibv_rc_pingpong does, post work
// requests, and poll completions with readable failure messages.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <string>
#include <vector>

#include "lib/rdma/engine.hpp"
#include "lib/rdma/qp_transitions.hpp"

namespace roce::test {

struct QpOptions {
  ibv_qp_type type = IBV_QPT_RC;
  std::uint32_t depth = 256;
  std::uint32_t sge = 4;
  std::uint32_t inline_bytes = 64;
  ibv_mtu mtu = IBV_MTU_1024;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t min_rnr_timer = 12;
  std::uint8_t max_rd_atomic = 4;
  std::uint32_t sq_psn = 0x100;
  std::uint32_t rq_psn = 0x200;  // the peer's sq_psn is used for our rq_psn
  std::uint32_t qkey = 0x11111111;
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
};

struct Endpoint {
  rdma::Engine* engine = nullptr;
  rdma::PdHandle pd = 0;
  rdma::CompletionQueue* cq = nullptr;
  rdma::QueuePair* qp = nullptr;
};

inline Endpoint make_endpoint(rdma::Engine& e, const QpOptions& o, rdma::PdHandle pd = 0) {
  Endpoint ep;
  ep.engine = &e;
  ep.pd = pd ? pd : e.alloc_pd();
  auto cq = e.create_cq(4 * o.depth + 16);
  EXPECT_TRUE(cq.ok()) << cq.error().message;
  ep.cq = *cq;
  rdma::QpInit init;
  init.type = o.type;
  init.send_cq = ep.cq;
  init.recv_cq = ep.cq;
  init.cap = ibv_qp_cap{o.depth, o.depth, o.sge, o.sge, o.inline_bytes};
  auto qp = e.create_qp(ep.pd, init);
  EXPECT_TRUE(qp.ok()) << qp.error().message;
  ep.qp = *qp;
  return ep;
}

inline ibv_gid gid_of(const rdma::Engine& e) { return rdma::gid_from_ip(e.config().path.local.ip); }

// RESET -> INIT -> RTR -> RTS with the attributes ibv_rc_pingpong uses.
inline void bring_up(Endpoint& me, const Endpoint& peer, const QpOptions& o, std::uint32_t my_psn,
                     std::uint32_t peer_psn) {
  rdma::PeerPath path;
  path.mtu = o.mtu;
  path.dest_qpn = peer.qp->qpn();
  path.rq_psn = peer_psn;
  path.dgid = gid_of(*peer.engine);
  path.hop_limit = 1;
  path.max_dest_rd_atomic = o.max_rd_atomic;
  path.min_rnr_timer = o.min_rnr_timer;
  for (const rdma::QpTransition& t :
       {rdma::init_transition(o.type, o.access, o.qkey), rdma::rtr_transition(o.type, path),
        rdma::rts_transition(o.type, rdma::SendSide{my_psn, o.timeout, o.retry_cnt, o.rnr_retry, o.max_rd_atomic})}) {
    const auto s = me.engine->modify_qp(me.qp, t.attr, t.mask);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
}

inline void connect_pair(Endpoint& a, Endpoint& b, const QpOptions& o) {
  bring_up(a, b, o, o.sq_psn, o.rq_psn);
  bring_up(b, a, o, o.rq_psn, o.sq_psn);
}

inline const rdma::MemoryRegion* reg(rdma::Engine& e, rdma::PdHandle pd, std::vector<std::byte>& buf, int access) {
  auto mr = e.memory().register_region(pd, buf.data(), buf.size(), access);
  EXPECT_TRUE(mr.ok()) << mr.error().message;
  return mr.ok() ? *mr : nullptr;
}

// What a WRITE test copies: `bytes` of seeded random bytes registered at `from`, and as many
// zeroes at `to`, registered for remote writes (the fixture most transport tests declare).
struct WriteBuffers {
  std::vector<std::byte> src, dst;
  const rdma::MemoryRegion* smr = nullptr;
  const rdma::MemoryRegion* dmr = nullptr;

  void make(Endpoint& from, Endpoint& to, std::size_t bytes, std::uint64_t seed) {
    src.resize(bytes);
    dst.assign(bytes, std::byte{0});
    std::uint64_t x = seed;
    for (auto& c : src) c = static_cast<std::byte>((x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 56);
    smr = reg(*from.engine, from.pd, src, IBV_ACCESS_LOCAL_WRITE);
    dmr = reg(*to.engine, to.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
};

inline ibv_sge sge(const std::byte* p, std::uint32_t len, const rdma::MemoryRegion* mr) {
  return ibv_sge{reinterpret_cast<std::uint64_t>(p), len, mr ? mr->lkey() : 0};
}

inline int post(Endpoint& ep, ibv_wr_opcode op, std::uint64_t wr_id, ibv_sge* sg, int nsge, std::uint64_t remote = 0,
                std::uint32_t rkey = 0, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = sg;
  wr.num_sge = nsge;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ep.engine->post_send(ep.qp, &wr, &bad);
}

inline int post_recv(Endpoint& ep, std::uint64_t wr_id, ibv_sge* sg, int nsge) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sg;
  wr.num_sge = nsge;
  ibv_recv_wr* bad = nullptr;
  return ep.engine->post_recv(ep.qp, &wr, &bad);
}

inline std::vector<ibv_wc> drain(Endpoint& ep) {
  std::vector<ibv_wc> out;
  ibv_wc wc[16];
  for (;;) {
    const int n = ep.engine->poll_cq(ep.cq, 16, wc);
    if (n <= 0) break;
    out.insert(out.end(), wc, wc + n);
  }
  return out;
}

inline std::string describe(const ibv_wc& wc) {
  return "wr_id=" + std::to_string(wc.wr_id) + " status=" + ibv_wc_status_str(wc.status) +
         " opcode=" + std::to_string(wc.opcode) + " byte_len=" + std::to_string(wc.byte_len);
}

}  // namespace roce::test
