// The appliance's status line and its JSON report (also the control socket's status and
// counters). Every engine drop and parse drop is written from the engine's own name tables
// (dataplane/stats_schema.hpp, as the telemetry commands write them), so a counter added to
// the engine shows up here without a change.
#include <cstdio>

#include "apps/appliance/appliance.hpp"
#include "dataplane/report.hpp"
#include "lib/util/json_writer.hpp"

namespace roce::client {

std::string Appliance::status_line(double seconds) {
  std::uint64_t rx = 0, tx = 0, qps = 0;
  rdma::Counters c;
  for (unsigned w = 0; w < dp_.worker_count(); ++w) {
    dp_.call(w, [&](rdma::Engine& e) {
      rx += dp_.worker(w).stats().rx_bytes;
      tx += dp_.worker(w).stats().tx_bytes;
      c.add(e.total_counters());
      e.for_each_qp([&](const rdma::QueuePair&) { ++qps; });
      return 0;
    });
  }
  const double in = static_cast<double>(rx - last_rx_bytes_) * 8 / 1e9 / seconds;
  const double out = static_cast<double>(tx - last_tx_bytes_) * 8 / 1e9 / seconds;
  last_rx_bytes_ = rx;
  last_tx_bytes_ = tx;
  char line[256];
  std::snprintf(line, sizeof line, "QPs %llu | in %.3f Gb/s | out %.3f Gb/s | retransmits %llu | NAKs sent %llu | CNPs in %llu out %llu",
                static_cast<unsigned long long>(qps), in, out,
                static_cast<unsigned long long>(c.get(rdma::Counter::RetransmittedPkts)),
                static_cast<unsigned long long>(c.get(rdma::Counter::NaksSent)),
                static_cast<unsigned long long>(c.get(rdma::Counter::CnpReceived)),
                static_cast<unsigned long long>(c.get(rdma::Counter::CnpSent)));
  return line;
}

std::string Appliance::report_json() {
  JsonWriter w;
  dp::JsonSink sink(w);
  const double up = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  w.begin_object().field("ok", true).field("uptime_s", up);
  w.key("port").begin_object().field("name", dp_.port().name).field("driver", dp_.port().driver)
      .field("mac", proto::mac_to_string(dp_.local().mac)).field("ip", to_string(dp_.local().ip)).end_object();
  dp::EngineStats total;
  w.key("workers").begin_array();
  for (unsigned wk = 0; wk < dp_.worker_count(); ++wk) {
    dp_.call(wk, [&](rdma::Engine& e) {
      dp::WorkerSnapshot snap;
      dp::collect(e, wk, snap);
      total.add(snap.engine);
      w.begin_object().field("worker", wk);
      dp::schema::worker_stats(sink, dp_.worker(wk).stats());
      // drops, parse_drops, counters and dcqcn sums, named as the engine names them.
      dp::schema::engine(sink, snap.engine);
      w.key("limit_hits").begin_object();
      for (std::size_t l = 0; l < static_cast<std::size_t>(rdma::EngineLimit::Count); ++l)
        w.field(to_string(static_cast<rdma::EngineLimit>(l)), e.limit_hits(static_cast<rdma::EngineLimit>(l)));
      w.end_object().end_object();
      return 0;
    });
  }
  w.end_array();
  if (const dp::IoStats* io = dp_.io_stats()) {
    dp::IoSnapshot snap;
    snap.stats = *io;
    sink.open("io");
    dp::schema::io(sink, snap);
    sink.close();
  }
  // Every drop of every worker, summed: the first place to look when something is lost.
  sink.open("drops");
  for (std::size_t i = 0; i < dp::kEngineDropCount; ++i) sink.u64(to_string(static_cast<rdma::EngineDrop>(i)), total.drops[i]);
  sink.close();
  sink.open("parse_drops");
  for (std::size_t i = 1; i < dp::kParseErrorCount; ++i)
    sink.u64(dp::schema::key(proto::to_string(static_cast<proto::ParseError>(i))), total.parse_drops[i]);
  sink.close();
  std::uint64_t mr_bytes = 0;
  {
    std::lock_guard lock(mutex_);
    mr_bytes = mr_bytes_in_use_;
  }
  w.key("limits").begin_object()
      .field("max_qps", o_.max_qps)
      .field("max_mrs", o_.max_mrs)
      .field("max_qp_wr", o_.max_qp_wr)
      .field("max_rd_atomic", static_cast<std::uint32_t>(o_.max_rd_atomic))
      .field("max_sessions", o_.max_sessions)
      .field("handshake_timeout_ms", static_cast<std::uint64_t>(o_.handshake_timeout_ms))
      .field("mr_quota_bytes", o_.mr_quota)
      .field("mr_bytes_in_use", mr_bytes)
      .field("mrs_in_use", static_cast<std::uint64_t>(dp_.memory().size()))
      .field("mr_registrations_refused", dp_.memory().refused_full())
      .end_object();
  w.key("transport").begin_object();
  for (std::size_t k = 0; k < rdma::kCounterCount; ++k) w.field(rdma::counter_name(static_cast<rdma::Counter>(k)), total.counters.values()[k]);
  w.end_object();
  if (cm_listeners_) {
    const CmListeners::Totals t = cm_listeners_->totals();
    w.key("rdma_cm").begin_object()
        .field("connections", t.connections)
        .field("completed", t.completed)
        .field("failed", t.failed)
        .field("rping_rounds", t.rping_rounds)
        .field("messages_sent", t.messages_sent)
        .field("messages_received", t.messages_received)
        .field("datagrams", t.datagrams)
        .field("rdma_server_exchanges", t.rdma_server_exchanges);
    w.key("cm").begin_object();
    for (const auto& [k, v] : cm_listeners_->cm_counters()) w.field(k, v);
    w.end_object().end_object();
  }
  if (!o_.control_socket.empty()) {
    const ControlStats cs = control_.stats();
    w.key("control").begin_object()
        .field("clients_served", cs.clients_served)
        .field("commands", cs.commands)
        .field("refused_other_users", cs.refused_peers)
        .field("refused_full", cs.refused_full)
        .field("timed_out_idle", cs.timed_out_idle)
        .field("timed_out_line", cs.timed_out_line)
        .field("lines_too_long", cs.lines_too_long)
        .end_object();
  }
  std::lock_guard lock(mutex_);
  w.field("sessions_running", static_cast<std::uint64_t>(sessions_.size()));
  w.field("sessions_finished", finished_.total());
  w.field("sessions_failed", failed_sessions_);
  w.field("sessions_refused", refused_sessions_);
  w.field("handshakes_dropped", handshakes_dropped_);
  w.field("connections_waiting", static_cast<std::uint64_t>(waiting_ ? waiting_->waiting() : 0));
  // The last kKeptReports of each; *_not_listed says how many older ones were let go.
  w.key("sessions").begin_array();
  for (const SessionReport& r : finished_.items())
    w.begin_object()
        .field("peer", r.peer)
        .field("tool", r.tool)
        .field("version", r.remote_version)
        .field("qps", r.qps)
        .field("selective_repeat", r.selective_repeat)
        .field("received_messages", r.received_messages)
        .field("received_bytes", r.received_bytes)
        .field("writes_sent", r.writes_sent)
        .field("shared_srq", r.shared_srq)
        .field("srq_limit_events", r.srq_limit_events)
        .end_object();
  w.end_array();
  w.field("sessions_not_listed", finished_.dropped());
  w.key("errors").begin_array();
  for (const std::string& e : session_errors_.items()) w.value(e);
  w.end_array();
  w.field("errors_total", session_errors_.total());
  w.field("errors_not_listed", session_errors_.dropped());
  w.end_object();
  return w.str();
}

}  // namespace roce::client
