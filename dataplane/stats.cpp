#include "dataplane/stats.hpp"

#include <rte_ethdev.h>
#include <rte_lcore.h>

namespace roce::dp {

void EngineStats::add(const EngineStats& o) {
  received += o.received;
  qps += o.qps;
  for (std::size_t i = 0; i < drops.size(); ++i) drops[i] += o.drops[i];
  for (std::size_t i = 0; i < parse_drops.size(); ++i) parse_drops[i] += o.parse_drops[i];
  counters.add(o.counters);
  cc.cnp_sent += o.cc.cnp_sent;
  cc.cnp_received += o.cc.cnp_received;
  cc.cnp_ignored_unknown_qp += o.cc.cnp_ignored_unknown_qp;
  cc.cnp_ignored_cc_disabled += o.cc.cnp_ignored_cc_disabled;
  cc.rate_decreases += o.cc.rate_decreases;
  cc.increases_fast_recovery += o.cc.increases_fast_recovery;
  cc.increases_additive += o.cc.increases_additive;
  cc.increases_hyper += o.cc.increases_hyper;
}

std::optional<PortStats> read_port_stats(std::uint16_t port) {
  rte_eth_stats s{};
  if (rte_eth_stats_get(port, &s) != 0) return std::nullopt;
  return PortStats{s.ipackets, s.opackets, s.ibytes, s.obytes, s.imissed, s.ierrors, s.oerrors, s.rx_nombuf};
}

int current_lcore() {
  const unsigned l = rte_lcore_id();
  return l == LCORE_ID_ANY ? -1 : static_cast<int>(l);
}

void collect(const rdma::QueuePair& qp, unsigned worker, QpStats& out) {
  out.qpn = qp.qpn();
  out.worker = worker;
  out.type = qp.type();
  out.state = qp.state();
  out.dest_qpn = qp.config().dest_qpn;
  out.pmtu = qp.config().pmtu;
  out.counters = qp.counters();
  const rdma::QpCongestion* cc = qp.congestion();
  out.dcqcn = cc != nullptr;
  if (cc) {
    const cc::ReactionPoint& rp = cc->reaction_point();
    out.cc_active = rp.cc_active();
    out.rc_bps = rp.rc_bps();
    out.rt_bps = rp.rt_bps();
    out.alpha = rp.alpha();
    out.rp = rp.counters();
    out.np = cc->notification_point().counters();
  } else {
    out.cc_active = false;
    out.rc_bps = out.rt_bps = out.alpha = 0;
    out.rp = {};
    out.np = {};
  }
}

void collect(const rdma::Engine& engine, unsigned worker, WorkerSnapshot& out) {
  EngineStats& e = out.engine;
  e = EngineStats{};
  e.received = engine.received();
  for (std::size_t i = 0; i < kEngineDropCount; ++i) e.drops[i] = engine.drops(static_cast<rdma::EngineDrop>(i));
  for (std::size_t i = 0; i < kParseErrorCount; ++i) e.parse_drops[i] = engine.parse_drops(static_cast<proto::ParseError>(i));
  e.counters = engine.total_counters();
  out.qps.clear();  // keeps the capacity: no allocation once grown
  engine.for_each_qp([&](const rdma::QueuePair& qp) {
    out.qps.emplace_back();
    collect(qp, worker, out.qps.back());
    const QpStats& q = out.qps.back();
    e.cc.add(q.rp);
    e.cc.add(q.np);
    if (!q.dcqcn) e.cc.cnp_ignored_cc_disabled += q.counters.get(rdma::Counter::CnpIgnored);
  });
  e.qps = static_cast<std::uint32_t>(out.qps.size());
}

std::string qp_type_name(ibv_qp_type t) {
  switch (t) {
    case IBV_QPT_RC: return "RC";
    case IBV_QPT_UC: return "UC";
    case IBV_QPT_UD: return "UD";
    default: return "type-" + std::to_string(static_cast<int>(t));
  }
}

}  // namespace roce::dp
