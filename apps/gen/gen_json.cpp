#include "apps/gen/gen_json.hpp"

#include "lib/util/json_writer.hpp"

namespace roce::client {

namespace {

std::string test_name(const GenOptions& g) {
  if (g.pingpong) return "pingpong";
  if (g.ud_pingpong) return "ud_pingpong";
  return to_string(g.spec.verb) + "_" + to_string(g.spec.measure);
}

void write_settings(JsonWriter& w, const GenOptions& g) {
  const PerftestFlags& p = g.perftest;
  const bool perftest = !g.pingpong && !g.ud_pingpong;
  w.key("settings").begin_object();
  w.field("verb", to_string(g.spec.verb)).field("measure", to_string(g.spec.measure));
  w.field("size", g.spec.size).field("all_sizes", perftest && p.all);
  w.field("iters", g.spec.iters).field("duration_s", static_cast<double>(g.spec.duration) / 1e9);
  if (perftest) {
    w.field("margin_s", p.margin_s).field("run_infinitely", p.run_infinitely).field("qps", p.qps);
    w.field("tx_depth", p.tx_depth).field("rx_depth", p.rx_depth).field("cq_mod", p.cq_mod);
    w.field("post_list", p.post_list).field("inline_size", p.inline_size).field("out_reads", p.out_reads);
    w.field("bidirectional", p.bidirectional).field("events", p.events).field("cpu_util", p.cpu_util);
    w.field("mr_per_qp", p.mr_per_qp).field("no_peak", p.no_peak).field("gid_index", p.gid_index);
    w.key("traffic_class");
    if (p.traffic_class) w.value(std::uint32_t{*p.traffic_class});
    else w.null();
    w.field("output", to_string(p.output)).field("report_gbits", p.gbits);
  }
  w.field("mtu", static_cast<std::uint32_t>(128u << g.qp.mtu)).field("qp_timeout", std::uint32_t{g.qp.timeout});
  w.field("rate_limit_gbps", g.spec.rate_limit_gbps).field("verify", g.verify);
  w.field("role", g.listen ? "server" : "client").field("oob_port", std::uint32_t{g.oob_port});
  w.field("dev", g.dev).field("ip", to_string(g.ip)).field("workers", g.workers);
  w.field("dcqcn", g.dcqcn).field("dcqcn_profile", cc::to_string(g.dcqcn_profile)).field("line_rate_gbps", g.line_rate_gbps);
  w.end_object();
  w.key("notes").begin_array();
  for (const auto& n : p.notes) w.value(n);
  w.end_array();
}

void write_records(JsonWriter& w, const std::vector<PerftestDest>& qps) {
  w.begin_array();
  for (const PerftestDest& d : qps)
    w.begin_object()
        .field("qpn", d.qpn)
        .field("psn", d.psn)
        .field("rkey", d.rkey)
        .field("vaddr", d.vaddr)
        .field("out_reads", std::uint32_t{d.out_reads})
        .field("gid", gid_to_string(d.gid))
        .end_object();
  w.end_array();
}

}  // namespace

std::string gen_result_json(const GenOptions& g, const GenJsonRun& r) {
  const bool gbits = g.perftest.gbits;
  JsonWriter w;
  w.begin_object().field("test", test_name(g));
  write_settings(w, g);
  w.key("peer").begin_object().field("address", g.server).field("port", std::uint32_t{g.oob_port});
  if (r.connection) {
    w.field("perftest_version", r.connection->remote_version)
        .field("mtu", static_cast<std::uint32_t>(128u << r.connection->mtu));
    w.key("qps");
    write_records(w, r.connection->peers);
  }
  w.end_object();
  if (r.connection) {
    w.key("local").begin_object().field("ip", to_string(g.ip)).key("qps");
    write_records(w, r.connection->mine);
    w.end_object();
  }
  w.key("results").begin_array();
  for (const BwFigures& f : r.bw)
    w.begin_object()
        .field("bytes", f.size)
        .field("iterations", f.iterations)
        .field("bw_peak", perftest_bw_units(f.bw_peak_bps, gbits))
        .field("bw_average", perftest_bw_units(f.bw_avg_bps, gbits))
        .field("bw_unit", gbits ? "Gb/sec" : "MB/sec")
        .field("msg_rate_mpps", f.msg_rate_mpps)
        .end_object();
  for (const LatFigures& f : r.lat)
    w.begin_object()
        .field("bytes", f.size)
        .field("iterations", f.iterations)
        .field("t_min_us", f.t_min_us)
        .field("t_max_us", f.t_max_us)
        .field("t_typical_us", f.t_typical_us)
        .field("t_avg_us", f.t_avg_us)
        .field("t_stdev_us", f.t_stdev_us)
        .field("p99_us", f.p99_us)
        .field("p999_us", f.p999_us)
        .end_object();
  for (const LatDurationFigures& f : r.lat_duration)
    w.begin_object()
        .field("bytes", f.size)
        .field("iterations", f.iterations)
        .field("t_avg_us", f.t_avg_us)
        .field("tps", f.tps)
        .end_object();
  w.end_array();
  if (r.cpu_util_percent) w.field("cpu_util_percent", *r.cpu_util_percent);
  if (r.stopped) w.field("stopped_by_signal", true);
  const RunCounters& c = r.counters;
  w.field("errors", c.errors)
      .field("first_error", c.first_error)
      .field("retransmits", c.retransmits)
      .field("naks", c.naks)
      .field("timeouts", c.timeouts)
      .field("cnps_received", c.cnps_received)
      .field("cnps_sent", c.cnps_sent)
      .field("packets_sent", c.packets_sent)
      .field("selective_repeat", r.selective_repeat)
      .field("sacks_received", c.sacks_received)
      .field("selective_resends", c.selective_resends)
      .field("early_retransmits", c.early_retransmits)
      .field("tail_probes", c.tail_probes)
      .field("oldest_probes", c.oldest_probes)
      .field("probed_holes", c.probed_holes);
  if (r.receive_queue)
    w.key("receive_queue")
        .begin_object()
        .field("rx_overrun_frames", r.receive_queue->overrun_frames)
        .field("rx_overrun_ce_marks", r.receive_queue->overrun_ce_marks)
        .field("rx_backlog_bursts", r.receive_queue->backlog_bursts)
        .field("rx_backlog_ce_marks", r.receive_queue->backlog_ce_marks)
        .field("rx_backlog_max_frames", r.receive_queue->backlog_max_frames)
        .end_object();
  if (!r.verify.empty()) w.field("verify", r.verify);
  w.end_object();
  return w.str();
}

std::string gen_error_json(const std::string& message, int exit_status) {
  JsonWriter w;
  w.begin_object().field("error", message).field("exit_status", exit_status).end_object();
  return w.str();
}

}  // namespace roce::client
