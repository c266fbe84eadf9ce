#include "lib/cm/cm_agent.hpp"

#include <cstring>

namespace roce::cm {

namespace {

Gid gid_of(const rdma::IpAddress& ip) {
  if (ip.version == proto::IpVersion::V4) return proto::gid_from_ipv4(ip.v4);
  Gid g{};
  std::memcpy(g.data(), ip.v6.data(), 16);
  return g;
}

rdma::IpAddress ip_of(const Gid& g) {
  if (const auto v4 = proto::ipv4_of(g)) return rdma::IpAddress::ipv4(*v4);
  proto::Ipv6Addr a{};
  std::memcpy(a.data(), g.data(), 16);
  return rdma::IpAddress::ipv6(a);
}

}  // namespace

CmAgent::CmAgent(const CmAgentConfig& cfg, rdma::Engine& engine) : cfg_(cfg), engine_(engine), cm_(cfg.cm), rdma_(cm_) {
  engine_.gsi().attach(true);
}

CmAgent::~CmAgent() { detach(); }

void CmAgent::detach() {
  if (!attached_) return;
  engine_.gsi().attach(false);
  attached_ = false;
}

void CmAgent::poll(Nanos now) {
  rdma::GsiReceived r;
  CmOutput out;
  while (engine_.gsi().pop(r)) {
    const Gid from = gid_of(r.from);
    if (macs_.size() >= cfg_.max_learned_macs && !macs_.contains(from)) macs_.clear();
    macs_[from] = r.from_mac;
    count(CmAgentCounter::MadsIn);
    cm_.on_mad(proto::ByteSpan(r.mad), MadPeer{from, r.src_qp, r.pkey}, now, out);
    dispatch(out, now);
  }
  if (cm_.next_deadline() <= now) {
    cm_.on_timer(now, out);
    dispatch(out, now);
  }
  if (!cm_.awaiting_rtu().empty()) establish_by_traffic(now, nullptr);
}

void CmAgent::establish_by_traffic(Nanos now, std::vector<std::pair<CmId, std::uint32_t>>* elsewhere) {
  // notify_established changes the set being walked: the IDs are gathered first (into a
  // vector kept between calls: the agent runs every loop iteration while an RTU is awaited).
  established_scratch_.clear();
  for (CmId id : cm_.awaiting_rtu()) {
    const auto qpn = cm_.local_qpn_of(id);
    if (!qpn) continue;
    const rdma::QueuePair* q = engine_.find_qp(*qpn);
    if (!q) {
      if (elsewhere) elsewhere->emplace_back(id, *qpn);
    } else if (q->counters().get(rdma::Counter::RcvdPkts) > 0) {
      established_scratch_.push_back(id);
    }
  }
  for (CmId id : established_scratch_) (void)established_by_traffic(id, now);
}

Status CmAgent::established_by_traffic(CmId id, Nanos now) {
  CmOutput out;
  Status s = cm_.notify_established(id, now, out);
  if (s) count(CmAgentCounter::EstablishedByTraffic);
  dispatch(out, now);
  return s;
}

void CmAgent::dispatch(CmOutput& out, Nanos now) {
  // rdma_cm's reaction to an event may itself send MADs (a REJ of a request no listener takes).
  while (!out.mads.empty() || !out.events.empty()) {
    for (const OutMad& m : out.mads) send(m);
    out.mads.clear();
    std::vector<CmEvent> cm_events;
    cm_events.swap(out.events);
    for (const CmEvent& e : cm_events) {
      std::vector<RdmaCmEvent> produced;
      rdma_.on_cm_event(e, now, out, produced);
      for (auto& ev : produced) {
        if (ev.type == RdmaCmEventType::ConnectRequest) {
          auto b = backlogs_.find(ev.listener);
          if (b != backlogs_.end() && b->second.waiting >= b->second.capacity) {
            count(CmAgentCounter::AcceptQueueFull);
            (void)rdma_.reject(ev.id, now, out);
            continue;
          }
          if (b != backlogs_.end()) ++b->second.waiting;
          undecided_[ev.id] = ev.listener;
        } else if (undecided_.contains(ev.id)) {
          decided(ev.id);  // the request ended before the consumer decided (peer or CM gave up)
        }
        if (events_.size() >= cfg_.max_events) {
          count(CmAgentCounter::EventsDropped);
          continue;
        }
        events_.push_back(std::move(ev));
      }
    }
  }
}

void CmAgent::send(const OutMad& m) {
  rdma::GsiSend s;
  s.mad = m.mad;
  s.to = ip_of(m.to.gid);
  s.dest_qp = m.to.qpn;
  s.pkey = m.to.pkey;
  if (const auto it = macs_.find(m.to.gid); it != macs_.end()) {
    s.to_mac = it->second;
  } else {
    const auto& resolve = engine_.config().path.resolve_mac;
    const auto mac = resolve ? resolve(s.to) : std::nullopt;
    if (!mac) return count(CmAgentCounter::NoRoute);
    s.to_mac = *mac;
  }
  if (!engine_.gsi().push(s)) return count(CmAgentCounter::QueueFull);
  count(CmAgentCounter::MadsOut);
}

Result<ListenerId> CmAgent::listen(proto::RdmaPortSpace ps, std::uint16_t port, std::size_t accept_queue) {
  if (accept_queue == 0) return make_error(EINVAL, "the accept queue must hold at least one request");
  auto id = rdma_.listen(ps, port);
  if (id) backlogs_[*id] = Backlog{accept_queue, 0};
  return id;
}

void CmAgent::decided(CmId id) {
  const auto u = undecided_.find(id);
  if (u == undecided_.end()) return;
  if (auto b = backlogs_.find(u->second); b != backlogs_.end() && b->second.waiting) --b->second.waiting;
  undecided_.erase(u);
}

Status CmAgent::accept(CmId id, const AcceptParams& p, Nanos now) {
  decided(id);
  return run(now, [&](RdmaCm& r, CommunicationManager&, CmOutput& out) { return r.accept(id, p, now, out); });
}

Status CmAgent::accept_ud(CmId id, std::uint32_t qpn, std::uint32_t qkey, std::span<const std::uint8_t> private_data, Nanos now) {
  decided(id);
  return run(now, [&](RdmaCm& r, CommunicationManager&, CmOutput& out) { return r.accept_ud(id, qpn, now, out, qkey, private_data); });
}

Status CmAgent::reject(CmId id, std::span<const std::uint8_t> private_data, Nanos now) {
  decided(id);
  return run(now, [&](RdmaCm& r, CommunicationManager&, CmOutput& out) { return r.reject(id, now, out, private_data); });
}

std::vector<RdmaCmEvent> CmAgent::take_events() {
  std::vector<RdmaCmEvent> e;
  e.swap(events_);
  return e;
}

void CmAgent::for_each_counter(const std::function<void(const std::string&, std::uint64_t)>& f) const {
  for (std::size_t i = 0; i < counters_.size(); ++i) f("cm_agent_" + to_string(static_cast<CmAgentCounter>(i)), counters_[i]);
  for (std::size_t i = 0; i < static_cast<std::size_t>(rdma::GsiCounter::Count); ++i) {
    const auto c = static_cast<rdma::GsiCounter>(i);
    f(to_string(c), engine_.gsi().counter(c));
  }
  cm_.counters().for_each(f);
}

std::string to_string(CmAgentCounter c) {
  switch (c) {
    case CmAgentCounter::MadsIn: return "mads_in";
    case CmAgentCounter::EstablishedByTraffic: return "established_by_traffic";
    case CmAgentCounter::MadsOut: return "mads_out";
    case CmAgentCounter::NoRoute: return "no_route";
    case CmAgentCounter::QueueFull: return "queue_full";
    case CmAgentCounter::EventsDropped: return "events_dropped";
    case CmAgentCounter::AcceptQueueFull: return "accept_queue_full";
    case CmAgentCounter::Count: break;
  }
  return "unknown";
}

}  // namespace roce::cm
