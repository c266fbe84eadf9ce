#include "client/cm_service.hpp"

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "lib/rdma/qp_bring_up.hpp"

namespace roce::client {

namespace {

// What a peer on the link failed to answer, by its family.
std::string no_answer_from(const rdma::IpAddress& ip) {
  return (ip.version == proto::IpVersion::V4 ? "no ARP answer from " : "no neighbour advertisement from ") + to_string(ip);
}

}  // namespace


namespace {

// EUI-64 from the MAC, as rxe makes its node GUID.
std::uint64_t guid_from_mac(const proto::MacAddr& m) {
  proto::Be64 g;
  g.bytes = {static_cast<std::uint8_t>(m[0] ^ 2), m[1], m[2], 0xFF, 0xFE, m[3], m[4], m[5]};
  return g.get();
}

cm::Gid gid_of(const proto::IpAddress& a) {
  if (a.version == proto::IpVersion::V4) return proto::gid_from_ipv4(a.v4);
  cm::Gid g{};
  std::memcpy(g.data(), a.v6.data(), 16);
  return g;
}

}  // namespace

CmService::CmService(dp::Dataplane& dp, DriverSet& drivers, CmServiceConfig cfg) : dp_(dp), drivers_(drivers), cfg_(std::move(cfg)) {
  if (cfg_.agent.cm.local_ca_guid == 0) cfg_.agent.cm.local_ca_guid = guid_from_mac(dp.local().mac);
  // Each CM its own Local Communication IDs, as Linux draws a random operand per boot: a program
  // run again within a peer's TIMEWAIT (2 s) would otherwise send the IDs of its last run, which
  // the peer answers with REJ "stale connection".
  if (cfg_.agent.cm.id_seed == cm::CmConfig{}.id_seed) cfg_.agent.cm.id_seed = std::random_device{}();
  agent_ = dp_.call(0, [&](rdma::Engine& e) { return std::make_unique<cm::CmAgent>(cfg_.agent, e); });
  cm::CmAgent* agent = agent_.get();
  driver_id_ = drivers_.add(0, [agent](rdma::Engine&, Nanos now) { agent->poll(now); });
}

CmService::~CmService() { stop(); }

void CmService::stop() {
  if (stopped_) return;
  disconnect_all(cfg_.stop_wait);
  drivers_.remove(0, driver_id_);
  // QP1 goes with the agent's loop: later MADs are unknown-QP drops, not a filling ring. The
  // agent itself stays, for its counters.
  on_agent([](cm::CmAgent& a) {
    a.detach();
    return 0;
  });
  stopped_ = true;
}

cm::CmQpLimits CmService::qp_limits() const {
  cm::CmQpLimits l;
  const std::uint16_t mtu = dp_.port().mtu;
  l.max_mtu = mtu >= 4096 ? IBV_MTU_4096 : mtu >= 2048 ? IBV_MTU_2048 : mtu >= 1024 ? IBV_MTU_1024 : mtu >= 512 ? IBV_MTU_512 : IBV_MTU_256;
  l.max_rd_atomic = dp_.worker(0).config().engine.max_rd_atomic;
  l.selective_repeat = cfg_.selective_repeat;
  return l;
}

CmService::Channel CmService::open_channel() {
  std::lock_guard lock(route_mutex_);
  return next_channel_++;
}

void CmService::close_channel(Channel ch) {
  std::vector<cm::CmId> refuse;
  {
    std::lock_guard lock(route_mutex_);
    closed_.insert(ch);
    for (const cm::RdmaCmEvent& e : pending_[ch])
      if (e.type == cm::RdmaCmEventType::ConnectRequest) refuse.push_back(e.id);
    pending_.erase(ch);
  }
  for (cm::CmId id : refuse) (void)reject(id);
}

Result<cm::ListenerId> CmService::listen(proto::RdmaPortSpace ps, std::uint16_t port, std::size_t accept_queue, Channel ch) {
  // Routed before the agent listens, so no request of the new listener reaches the wrong channel.
  std::lock_guard lock(route_mutex_);
  auto l = on_agent([&](cm::CmAgent& a) { return a.listen(ps, port, accept_queue); });
  if (l) listener_channel_[*l] = ch;
  return l;
}

void CmService::establish_elsewhere() {
  // COMM_EST for passive IDs whose QP lives on another worker than the agent's: the agent
  // names them, their worker tells whether the QP has received a packet.
  if (dp_.worker_count() < 2) return;
  std::vector<std::pair<cm::CmId, std::uint32_t>> elsewhere;
  on_agent([&](cm::CmAgent& a) {
    a.establish_by_traffic(dp_.now(), &elsewhere);
    return 0;
  });
  for (const auto& [id, qpn] : elsewhere) {
    const auto owner = dp_.worker(0).config().shards.owner(qpn);
    if (!owner || *owner >= dp_.worker_count()) continue;
    const bool received = dp_.call(*owner, [q = qpn](rdma::Engine& e) {
      const rdma::QueuePair* p = e.find_qp(q);
      return p != nullptr && p->counters().get(rdma::Counter::RcvdPkts) > 0;
    });
    if (received) {
      const cm::CmId cid = id;
      on_agent([&](cm::CmAgent& a) { return a.established_by_traffic(cid, dp_.now()); });
    }
  }
}

std::vector<cm::RdmaCmEvent> CmService::wait_events(Nanos wait, const std::atomic<bool>* stop, Channel ch) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
  for (;;) {
    establish_elsewhere();
    std::vector<cm::RdmaCmEvent> mine;
    std::vector<cm::CmId> refuse;
    {
      std::lock_guard lock(route_mutex_);
      for (cm::RdmaCmEvent& e : on_agent([](cm::CmAgent& a) { return a.take_events(); })) {
        const auto l = listener_channel_.find(e.listener);
        const Channel to = l == listener_channel_.end() ? 0 : l->second;
        if (closed_.count(to)) {
          if (e.type == cm::RdmaCmEventType::ConnectRequest) refuse.push_back(e.id);
          continue;
        }
        pending_[to].push_back(std::move(e));
      }
      mine.swap(pending_[ch]);
    }
    for (cm::CmId id : refuse) (void)reject(id);
    if (!mine.empty() || std::chrono::steady_clock::now() >= until || (stop && stop->load())) return mine;
    std::this_thread::sleep_for(std::chrono::nanoseconds(cfg_.poll_interval));
  }
}

Status CmService::accept(cm::CmId id, const cm::AcceptParams& p) {
  return on_agent([&](cm::CmAgent& a) { return a.accept(id, p, dp_.now()); });
}

Status CmService::accept_ud(cm::CmId id, std::uint32_t qpn, std::uint32_t qkey, std::span<const std::uint8_t> private_data) {
  return on_agent([&](cm::CmAgent& a) { return a.accept_ud(id, qpn, qkey, private_data, dp_.now()); });
}

Status CmService::reject(cm::CmId id, std::span<const std::uint8_t> private_data) {
  return on_agent([&](cm::CmAgent& a) { return a.reject(id, private_data, dp_.now()); });
}

Result<cm::CmId> CmService::connect(cm::RdmaConnectParams& p, Nanos arp_wait) {
  const rdma::IpAddress dst = p.dst;
  if (!dp_.resolve(dst, arp_wait))
    return make_error(EHOSTUNREACH, no_answer_from(dst) + " (is the peer on this port's link?)");
  if (p.ib.path.local_gid == cm::Gid{}) p.ib.path.local_gid = gid_of(p.src);
  if (p.ib.path.remote_gid == cm::Gid{}) p.ib.path.remote_gid = gid_of(p.dst);
  const cm::RdmaConnectParams& c = p;
  return on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm& r, cm::CommunicationManager&, cm::CmOutput& out) { return r.connect(c, dp_.now(), out); });
  });
}

Result<cm::CmId> CmService::resolve_ud(const cm::RdmaUdResolveParams& p, Nanos arp_wait) {
  const rdma::IpAddress dst = p.dst;
  if (!dp_.resolve(dst, arp_wait))
    return make_error(EHOSTUNREACH, no_answer_from(dst) + " (is the peer on this port's link?)");
  return on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm& r, cm::CommunicationManager&, cm::CmOutput& out) { return r.resolve_ud(p, dp_.now(), out); });
  });
}

Status CmService::ready_to_use(cm::CmId id) {
  return on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm&, cm::CommunicationManager& c, cm::CmOutput& out) { return c.ready_to_use(id, dp_.now(), out); });
  });
}

Status CmService::notify_established(cm::CmId id) {
  return on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm&, cm::CommunicationManager& c, cm::CmOutput& out) {
      return c.notify_established(id, dp_.now(), out);
    });
  });
}

Status CmService::disconnect(cm::CmId id) {
  return on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm&, cm::CommunicationManager& c, cm::CmOutput& out) { return c.disconnect(id, dp_.now(), out); });
  });
}

void CmService::destroy(cm::CmId id) {
  on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm&, cm::CommunicationManager& c, cm::CmOutput& out) {
      c.destroy(id, dp_.now(), out);
      return 0;
    });
  });
}

void CmService::disconnect_all(Nanos wait) {
  on_agent([&](cm::CmAgent& a) {
    return a.run(dp_.now(), [&](cm::RdmaCm&, cm::CommunicationManager& c, cm::CmOutput& out) {
      c.disconnect_all(dp_.now(), out);
      return 0;
    });
  });
  // The DREQs are retransmitted by the agent's timers; wait for their DREPs (or the retries).
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
  while (std::chrono::steady_clock::now() < until) {
    const bool waiting = on_agent([](cm::CmAgent& a) { return a.cm().count_in(cm::CmState::DreqSent) > 0; });
    if (!waiting) break;
    std::this_thread::sleep_for(std::chrono::nanoseconds(cfg_.poll_interval));
  }
}

void CmService::disconnect_ids(const std::vector<cm::CmId>& ids, Nanos wait) {
  for (cm::CmId id : ids) (void)disconnect(id);  // IDs not established refuse it: nothing to end
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
  while (std::chrono::steady_clock::now() < until) {
    const bool waiting = on_agent([&](cm::CmAgent& a) {
      for (cm::CmId id : ids)
        if (a.cm().state_of(id) == cm::CmState::DreqSent) return true;
      return false;
    });
    if (!waiting) break;
    std::this_thread::sleep_for(std::chrono::nanoseconds(cfg_.poll_interval));
  }
}

Status CmService::connect_qp(const LocalQp& qp, ibv_qp_type type, const cm::CmQpAttrs& a, Nanos arp_wait) {
  const rdma::IpAddress ip = rdma::ip_from_gid(a.rtr.dgid);
  if (type != IBV_QPT_UD && !dp_.resolve(ip, arp_wait))
    return make_error(EHOSTUNREACH, no_answer_from(ip));
  return dp_.call(qp.worker, [&](rdma::Engine& e) -> Status {
    // Agreed in the REQ/REP (lib/cm/ece.hpp); 0 unless both ends are rocev2-dp and asked for it.
    if (type == IBV_QPT_RC) {
      if (Status s = qp.qp->set_selective_repeat(a.selective_repeat); !s) return s;
    }
    return rdma::modify_to_rts(e, qp.qp, type, a.rtr, a.rts);
  });
}

Status CmService::ready_ud_qp(const LocalQp& qp, std::uint32_t qkey) {
  return dp_.call(qp.worker, [&](rdma::Engine& e) {
    return rdma::bring_up(e, qp.qp, IBV_QPT_UD, 0, qkey, rdma::PeerPath{}, rdma::SendSide{qp.psn});
  });
}

std::map<std::string, std::uint64_t> CmService::counters() {
  return on_agent([](cm::CmAgent& a) {
    std::map<std::string, std::uint64_t> c;
    a.for_each_counter([&](const std::string& k, std::uint64_t v) { c[k] = v; });
    return c;
  });
}

std::size_t CmService::live_ids() {
  return on_agent([](cm::CmAgent& a) { return a.cm().id_count(); });
}

}  // namespace roce::client
