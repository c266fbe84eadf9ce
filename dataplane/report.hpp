// Everything one dataplane counts, gathered from the published snapshots and the port, and
// its JSON report (what an app prints on exit). The telemetry commands show the same objects.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/util/json_writer.hpp"
#include "dataplane/port.hpp"
#include "dataplane/stats.hpp"
#include "dataplane/stats_schema.hpp"
#include "lib/rdma/address.hpp"

namespace roce::dp {

struct DataplaneSnapshot {
  std::string name;
  std::string mode;
  PortInfo port;
  rdma::LocalAddress local;
  std::optional<PortStats> port_stats;  // nullopt when the port cannot be queried
  std::optional<IoSnapshot> io;         // pipeline mode only
  std::vector<WorkerSnapshot> workers;

  EngineStats engine_total() const;
  const QpStats* find_qp(std::uint32_t qpn) const;
};

namespace schema {

template <typename Sink>
void dataplane_info(Sink& s, const DataplaneSnapshot& d) {
  s.str("name", d.name);
  s.str("mode", d.mode);
  s.str("ip", to_string(d.local.ip));
  s.str("mac", proto::mac_to_string(d.local.mac));
  s.u64("worker_count", d.workers.size());
  s.str("port_name", d.port.name);
}

template <typename Sink>
void port(Sink& s, const DataplaneSnapshot& d) {
  s.u64("id", d.port.id);
  s.str("name", d.port.name);
  s.str("driver", d.port.driver);
  s.str("mac", proto::mac_to_string(d.port.mac));
  s.u64("mtu", d.port.mtu);
  s.u64("queues", d.port.queues);
  s.u64("tx_ipv4_checksum_offload", d.port.tx_ipv4_checksum ? 1 : 0);
  s.u64("rss_udp", d.port.rss_udp ? 1 : 0);
  if (d.port_stats) {
    s.open("stats");
    port_stats(s, *d.port_stats);
    s.close();
  }
}

}  // namespace schema

// Writes a Sink's calls as JSON objects.
class JsonSink {
 public:
  explicit JsonSink(JsonWriter& w) : w_(w) {}
  void open(std::string_view name) { w_.key(name).begin_object(); }
  void close() { w_.end_object(); }
  void u64(std::string_view name, std::uint64_t v) { w_.field(name, v); }
  void i64(std::string_view name, std::int64_t v) { w_.field(name, v); }
  void str(std::string_view name, std::string_view v) { w_.field(name, v); }
  void u64_array(std::string_view name, std::span<const std::uint64_t> v) {
    w_.key(name).begin_array();
    for (std::uint64_t x : v) w_.value(x);
    w_.end_array();
  }

 private:
  JsonWriter& w_;
};

// {name, mode, ip, mac, worker_count, port_name, port: {..., stats}, io?, workers: {"0": ...},
//  engine: totals, engines: {"0": ...}, qps: {"<qpn>": ...}}
void write_json(JsonWriter& w, const DataplaneSnapshot& d);
std::string report_json(const DataplaneSnapshot& d);

}  // namespace roce::dp
