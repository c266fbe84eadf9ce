// One definition of the names and layout of every exported counter, written to a Sink so the
// JSON report and the rte_telemetry commands cannot drift apart. A Sink has:
//   open(name) / close()      a nested object
//   u64(name, v), i64(name, v), str(name, v)
//   u64_array(name, values)
// Telemetry (DPDK 22.11) has no reals or booleans, so both outputs use integers: rates in
// bit/s, alpha in millionths, flags as 0/1; and it takes only [A-Za-z0-9_/] in names, so names
// are written that way (key()).
#pragma once

#include <cmath>
#include <span>
#include <string>

#include "dataplane/stats.hpp"

namespace roce::dp::schema {

// A name as telemetry accepts it: '-' (as in the parser's reason names) becomes '_'.
inline std::string key(std::string name) {
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

inline std::uint64_t rounded(double v) { return v <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(v)); }

template <typename Sink>
void counters(Sink& s, const rdma::Counters& c) {
  for (std::size_t k = 0; k < rdma::kCounterCount; ++k) s.u64(rdma::counter_name(static_cast<rdma::Counter>(k)), c.values()[k]);
}

template <typename Sink>
void qp(Sink& s, const QpStats& q) {
  s.u64("qpn", q.qpn);
  s.u64("worker", q.worker);
  s.str("type", qp_type_name(q.type));
  s.str("state", to_string(q.state));
  s.u64("dest_qpn", q.dest_qpn);
  s.u64("pmtu", q.pmtu);
  s.open("counters");
  counters(s, q.counters);
  s.close();
  s.open("dcqcn");
  s.u64("enabled", q.dcqcn ? 1 : 0);
  s.u64("active", q.cc_active ? 1 : 0);
  s.u64("rc_bps", rounded(q.rc_bps));
  s.u64("rt_bps", rounded(q.rt_bps));
  s.u64("alpha_ppm", rounded(q.alpha * 1e6));
  s.u64("cnp_sent", q.counters.get(rdma::Counter::CnpSent));
  s.u64("cnp_received", q.counters.get(rdma::Counter::CnpReceived));
  s.u64("cnp_ignored", q.counters.get(rdma::Counter::CnpIgnored));
  s.u64("ecn_ce_received", q.counters.get(rdma::Counter::EcnCeReceived));
  s.open("reaction_point");
  s.u64("cnp_received", q.rp.cnp_received);
  s.u64("cnp_coalesced", q.rp.cnp_coalesced);
  s.u64("rate_decreases", q.rp.rate_decreases);
  s.u64("increases_fast_recovery", q.rp.increases_fast_recovery);
  s.u64("increases_additive", q.rp.increases_additive);
  s.u64("increases_hyper", q.rp.increases_hyper);
  s.u64("increase_timer_events", q.rp.increase_timer_events);
  s.u64("byte_counter_events", q.rp.byte_counter_events);
  s.u64("alpha_updates", q.rp.alpha_updates);
  s.u64("limiter_released", q.rp.limiter_released);
  s.close();
  s.open("notification_point");
  s.u64("ce_packets", q.np.ce_packets);
  s.u64("cnp_sent", q.np.cnp_sent);
  s.u64("cnp_deferred", q.np.cnp_deferred);
  s.u64("ce_absorbed", q.np.ce_absorbed);
  s.u64("ce_suppressed", q.np.ce_suppressed);
  s.close();
  s.close();
}

template <typename Sink>
void engine(Sink& s, const EngineStats& e) {
  s.u64("received", e.received);
  s.u64("qps", e.qps);
  s.open("drops");
  for (std::size_t i = 0; i < kEngineDropCount; ++i) s.u64(to_string(static_cast<rdma::EngineDrop>(i)), e.drops[i]);
  s.close();
  s.open("parse_drops");
  // Index 0 is ParseError::None: not a drop.
  for (std::size_t i = 1; i < kParseErrorCount; ++i) s.u64(key(proto::to_string(static_cast<proto::ParseError>(i))), e.parse_drops[i]);
  s.close();
  s.open("counters");
  counters(s, e.counters);
  s.close();
  s.open("dcqcn");
  s.u64("cnp_sent", e.cc.cnp_sent);
  s.u64("cnp_received", e.cc.cnp_received);
  s.u64("cnp_ignored_cc_disabled", e.cc.cnp_ignored_cc_disabled);
  s.u64("rate_decreases", e.cc.rate_decreases);
  s.u64("increases_fast_recovery", e.cc.increases_fast_recovery);
  s.u64("increases_additive", e.cc.increases_additive);
  s.u64("increases_hyper", e.cc.increases_hyper);
  s.close();
}

template <typename Sink>
void worker_stats(Sink& s, const WorkerStats& w) {
  s.u64("rx_packets", w.rx_packets);
  s.u64("rx_bytes", w.rx_bytes);
  s.u64("tx_packets", w.tx_packets);
  s.u64("tx_bytes", w.tx_bytes);
  s.u64("tx_dropped", w.tx_dropped);
  s.u64("rx_multi_segment", w.rx_multi_segment);
  s.u64("stalls", w.stalls);
  s.u64("arp_replies", w.arp_replies);
  s.u64("arp_requests_sent", w.arp_requests_sent);
  s.u64("ndp_advertisements", w.ndp_advertisements);
  s.u64("ndp_solicitations_sent", w.ndp_solicitations_sent);
  s.u64("ndp_invalid", w.ndp_invalid);
  s.u64("mbuf_alloc_failures", w.mbuf_alloc_failures);
  s.u64("iterations", w.iterations);
  s.u64("rx_handed_off", w.rx_handed_off);
  s.u64("rx_handoff_dropped", w.rx_handoff_dropped);
  s.u64("rx_from_inbox", w.rx_from_inbox);
  s.u64("rx_overrun_frames", w.rx_overrun_frames);
  s.u64("rx_overrun_ce_marks", w.rx_overrun_ce_marks);
  s.u64("rx_backlog_bursts", w.rx_backlog_bursts);
  s.u64("rx_backlog_ce_marks", w.rx_backlog_ce_marks);
  s.u64("rx_backlog_max_frames", w.rx_backlog_max_frames);
  s.u64("rx_bursts_grouped", w.rx_bursts_grouped);
}

template <typename Sink>
void worker(Sink& s, const WorkerSnapshot& w) {
  s.u64("worker", w.worker);
  s.i64("lcore", w.lcore);
  s.u64("sequence", w.sequence);
  s.u64("published_at_ns", static_cast<std::uint64_t>(w.taken_at));
  worker_stats(s, w.stats);
}

template <typename Sink>
void io(Sink& s, const IoSnapshot& io) {
  s.i64("lcore", io.lcore);
  s.u64("sequence", io.sequence);
  s.u64("published_at_ns", static_cast<std::uint64_t>(io.taken_at));
  s.u64("rx_packets", io.stats.rx_packets);
  s.u64("tx_packets", io.stats.tx_packets);
  s.u64("steered", io.stats.steered);
  s.u64("not_roce", io.stats.not_roce);
  s.u64("unknown_worker", io.stats.unknown_worker);
  s.u64("worker_ring_full", io.stats.worker_ring_full);
  s.u64("tx_dropped", io.stats.tx_dropped);
  s.u64("rx_overrun_frames", io.stats.rx_overrun_frames);
  s.u64("rx_overrun_ce_marks", io.stats.rx_overrun_ce_marks);
  s.u64("rx_backlog_bursts", io.stats.rx_backlog_bursts);
  s.u64("rx_backlog_ce_marks", io.stats.rx_backlog_ce_marks);
  s.u64("rx_backlog_max_frames", io.stats.rx_backlog_max_frames);
}

template <typename Sink>
void port_stats(Sink& s, const PortStats& p) {
  s.u64("ipackets", p.ipackets);
  s.u64("opackets", p.opackets);
  s.u64("ibytes", p.ibytes);
  s.u64("obytes", p.obytes);
  s.u64("imissed", p.imissed);
  s.u64("ierrors", p.ierrors);
  s.u64("oerrors", p.oerrors);
  s.u64("rx_nombuf", p.rx_nombuf);
}

}  // namespace roce::dp::schema
