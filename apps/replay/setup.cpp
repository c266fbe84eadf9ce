#include "apps/replay/setup.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "apps/replay/text_values.hpp"
#include "lib/rdma/qp_bring_up.hpp"
#include "protocol/mtu.hpp"

namespace roce::replay {

namespace {

std::string qp_label(const QpSpec& q) { return "[qp " + q.name + "] (QPN " + format_hex(q.qpn) + ")"; }

}  // namespace

rdma::EngineConfig engine_config(const Scenario& s) {
  rdma::EngineConfig cfg;
  cfg.path.local = s.local;
  std::vector<std::pair<rdma::IpAddress, proto::MacAddr>> peers;
  for (const QpSpec& q : s.qps) peers.emplace_back(q.peer_ip, q.peer_mac);
  cfg.path.resolve_mac = [peers](const rdma::IpAddress& ip) -> std::optional<proto::MacAddr> {
    for (const auto& [pip, mac] : peers)
      if (pip == ip) return mac;
    return std::nullopt;
  };
  cfg.tuning.congestion.enabled = s.dcqcn;
  cfg.tuning.congestion.np = s.np;
  std::uint32_t lo = 0x11, hi = 0x11;
  if (!s.qps.empty()) {
    const auto [mn, mx] = std::minmax_element(s.qps.begin(), s.qps.end(),
                                              [](const QpSpec& a, const QpSpec& b) { return a.qpn < b.qpn; });
    lo = mn->qpn;
    hi = mx->qpn;
  }
  cfg.qpns = rdma::QpnShards{lo, 1};
  cfg.shard = 0;
  cfg.max_qps = hi - lo + 1;
  return cfg;
}

Result<std::unique_ptr<ReplaySetup>> ReplaySetup::create(rdma::Engine& e, const Scenario& s) {
  std::unique_ptr<ReplaySetup> r(new ReplaySetup(e, s));
  if (Status st = r->build(); !st) return st.error();
  return r;
}

ReplaySetup::~ReplaySetup() {
  for (const Region& r : regions_)
    if (r.mr) (void)engine_.memory().deregister(r.mr->key);
}

Status ReplaySetup::build() {
  pd_ = engine_.alloc_pd();
  std::uint32_t depth = 64;
  for (const RecvSpec& r : s_.recvs) depth += r.count;
  depth += static_cast<std::uint32_t>(s_.wrs.size());
  auto cq = engine_.create_cq(depth);
  if (!cq) return cq.error();
  cq_ = *cq;
  if (Status st = create_qps(); !st) return st;
  if (Status st = register_regions(); !st) return st;
  for (std::size_t i = 0; i < s_.recvs.size(); ++i)
    actions_.push_back(Action{Action::Kind::PostRecv, s_.recvs[i].at, i});
  for (std::size_t i = 0; i < s_.wrs.size(); ++i) actions_.push_back(Action{Action::Kind::PostSend, s_.wrs[i].at, i});
  std::stable_sort(actions_.begin(), actions_.end(), [](const Action& a, const Action& b) { return a.at < b.at; });
  return {};
}

Status ReplaySetup::create_qps() {
  std::vector<std::size_t> order(s_.qps.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s_.qps[a].qpn < s_.qps[b].qpn; });
  qps_.assign(s_.qps.size(), nullptr);
  std::vector<rdma::QueuePair*> fillers;
  Status result;
  for (std::size_t i : order) {
    const QpSpec& q = s_.qps[i];
    std::uint32_t recvs = 1;
    for (const RecvSpec& r : s_.recvs)
      if (r.qp == q.name) recvs += r.count;
    std::uint32_t sends = 16;
    for (const WrSpec& w : s_.wrs)
      if (w.qp == q.name) ++sends;
    // Until the engine's next QPN is this one, take QPNs with throw-away QPs.
    for (;;) {
      rdma::QpInit init;
      init.type = q.type;
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.cap = ibv_qp_cap{sends, recvs, 1, 1, 0};
      auto qp = engine_.create_qp(pd_, init);
      if (!qp) {
        result = make_error(qp.error().code, qp_label(q) + ": " + qp.error().message);
        break;
      }
      if ((*qp)->qpn() == q.qpn) {
        qps_[i] = *qp;
        break;
      }
      if ((*qp)->qpn() > q.qpn) {
        result = make_error(EINVAL, qp_label(q) + ": the engine handed out QPN " + format_hex((*qp)->qpn()) + " instead");
        break;
      }
      fillers.push_back(*qp);
    }
    if (!result) break;
  }
  for (rdma::QueuePair* f : fillers) (void)engine_.destroy_qp(f);
  if (!result) return result;
  for (std::size_t i = 0; i < s_.qps.size(); ++i)
    if (Status st = bring_up(qps_[i], s_.qps[i]); !st) return make_error(st.error().code, qp_label(s_.qps[i]) + ": " + st.error().message);
  return {};
}

Status ReplaySetup::bring_up(rdma::QueuePair* qp, const QpSpec& q) {
  if (Status s = rdma::modify_to_init(engine_, qp, q.type, q.access, q.qkey); !s) return s;
  rdma::PeerPath path;
  if (q.type != IBV_QPT_UD) path.mtu = static_cast<ibv_mtu>(*proto::mtu_from_bytes(q.mtu));
  path.dest_qpn = q.peer_qpn;
  path.rq_psn = q.rq_psn;
  path.dgid = rdma::gid_from_ip(q.peer_ip);
  path.traffic_class = q.traffic_class;
  path.max_dest_rd_atomic = q.max_dest_rd_atomic;
  path.min_rnr_timer = q.min_rnr_timer;
  const rdma::SendSide send{q.sq_psn, q.timeout, q.retry_cnt, q.rnr_retry, q.max_rd_atomic};
  return q.rts ? rdma::modify_to_rts(engine_, qp, q.type, path, send) : rdma::modify_to_rtr(engine_, qp, q.type, path);
}

Status ReplaySetup::register_regions() {
  regions_.reserve(s_.mrs.size() + s_.recvs.size());
  keys_.set_local(s_.local.ip);
  for (const MrSpec& m : s_.mrs) {
    Region& r = regions_.emplace_back();
    r.memory.resize(m.size);
    for (std::uint64_t i = 0; i < m.size; ++i) r.memory[i] = static_cast<std::byte>(fill_byte_at(m.fill, m.fill_byte, i));
    for (const auto& [off, data] : m.bytes) std::copy(data.begin(), data.end(), r.memory.begin() + static_cast<std::ptrdiff_t>(off));
    auto mr = engine_.memory().register_region(pd_, r.memory.data(), r.memory.size(), m.access);
    if (!mr) return make_error(mr.error().code, "[mr " + m.name + "]: " + mr.error().message);
    r.mr = *mr;
    if (m.rkey) keys_.add(KeyMapping{*m.rkey, m.va, r.mr->rkey(), r.mr->iova});
  }
  for (const RecvSpec& rs : s_.recvs) {
    recv_region_.push_back(regions_.size());
    Region& r = regions_.emplace_back();
    r.memory.resize(std::max<std::uint64_t>(std::uint64_t{rs.count} * rs.size, 1));
    auto mr = engine_.memory().register_region(pd_, r.memory.data(), r.memory.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr) return make_error(mr.error().code, "[recv] for " + rs.qp + ": " + mr.error().message);
    r.mr = *mr;
  }
  return {};
}

Status ReplaySetup::apply(const Action& a) {
  return a.kind == Action::Kind::PostRecv ? post_recv(s_.recvs[a.index], a.index) : post_send(s_.wrs[a.index]);
}

Status ReplaySetup::post_recv(const RecvSpec& rs, std::size_t index) {
  const auto qi = static_cast<std::size_t>(s_.find_qp(rs.qp) - s_.qps.data());
  const Region& r = regions_[recv_region_[index]];
  for (std::uint32_t k = 0; k < rs.count; ++k) {
    ibv_sge g{reinterpret_cast<std::uint64_t>(r.memory.data()) + std::uint64_t{k} * rs.size, rs.size, r.mr->lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = (std::uint64_t{index} << 32) | k;
    wr.sg_list = &g;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (const int rc = engine_.post_recv(qps_[qi], &wr, &bad); rc != 0)
      return make_error(rc, "[recv] for " + rs.qp + ": post_recv failed with " + std::strerror(rc));
  }
  return {};
}

Status ReplaySetup::post_send(const WrSpec& w) {
  const auto qi = static_cast<std::size_t>(s_.find_qp(w.qp) - s_.qps.data());
  ibv_sge g{};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(&w - s_.wrs.data());
  wr.opcode = w.opcode;
  wr.send_flags = w.signaled ? IBV_SEND_SIGNALED : 0;
  if (w.length) {
    const auto mi = static_cast<std::size_t>(s_.find_mr(w.mr) - s_.mrs.data());
    const Region& r = regions_[mi];
    g = ibv_sge{reinterpret_cast<std::uint64_t>(r.memory.data()) + w.offset, w.length, r.mr->lkey()};
    wr.sg_list = &g;
    wr.num_sge = 1;
  }
  if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    wr.wr.atomic.remote_addr = w.remote_va;
    wr.wr.atomic.rkey = w.rkey;
    wr.wr.atomic.compare_add = w.compare_add;
    wr.wr.atomic.swap = w.swap;
  } else {
    wr.wr.rdma.remote_addr = w.remote_va;
    wr.wr.rdma.rkey = w.rkey;
  }
  wr.imm_data = htonl(w.imm);  // verbs carries the immediate in network order
  ibv_send_wr* bad = nullptr;
  if (const int rc = engine_.post_send(qps_[qi], &wr, &bad); rc != 0)
    return make_error(rc, "[wr " + w.name + "]: post_send failed with " + std::strerror(rc));
  return {};
}

void ReplaySetup::poll_completions() {
  ibv_wc wc[32];
  int n;
  while ((n = engine_.poll_cq(cq_, 32, wc)) > 0)
    for (int i = 0; i < n; ++i) ++(wc[i].status == IBV_WC_SUCCESS ? wc_.ok : wc_.error);
}

std::string to_string(Action::Kind k) {
  switch (k) {
    case Action::Kind::PostRecv: return "post-recv";
    case Action::Kind::PostSend: return "post-send";
  }
  return "unknown";
}

}  // namespace roce::replay
