#include "dataplane/telemetry.hpp"

#include <rte_eal.h>
#include <rte_telemetry.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <mutex>
#include <string_view>
#include <vector>

#include "dataplane/dataplane.hpp"

namespace roce::dp {
namespace {

std::mutex g_mutex;  // guards g_dataplanes; held for a whole command so no dataplane dies mid-read
std::vector<Dataplane*> g_dataplanes;
std::once_flag g_registered;

// Builds nested rte_tel_data dictionaries from the schema's Sink calls. A container that cannot
// be added (DPDK's entry limits) is dropped with everything under it.
class TelemetrySink {
 public:
  explicit TelemetrySink(rte_tel_data* root) { stack_.push_back(root); }
  void open(std::string_view name) {
    rte_tel_data* c = top() ? rte_tel_data_alloc() : nullptr;
    if (c) {
      rte_tel_data_start_dict(c);
      if (rte_tel_data_add_dict_container(top(), std::string(name).c_str(), c, 0) != 0) {
        rte_tel_data_free(c);
        c = nullptr;
      }
    }
    stack_.push_back(c);
  }
  void close() { stack_.pop_back(); }
  void u64(std::string_view name, std::uint64_t v) {
    if (top()) rte_tel_data_add_dict_u64(top(), std::string(name).c_str(), v);
  }
  void i64(std::string_view name, std::int64_t v) {
    if (top()) rte_tel_data_add_dict_int(top(), std::string(name).c_str(), static_cast<int>(std::clamp<std::int64_t>(v, INT_MIN, INT_MAX)));
  }
  void str(std::string_view name, std::string_view v) {
    if (top()) rte_tel_data_add_dict_string(top(), std::string(name).c_str(), std::string(v).c_str());
  }
  void u64_array(std::string_view name, std::span<const std::uint64_t> v) {
    rte_tel_data* a = top() ? rte_tel_data_alloc() : nullptr;
    if (!a) return;
    fill_array(a, v);
    if (rte_tel_data_add_dict_container(top(), std::string(name).c_str(), a, 0) != 0) rte_tel_data_free(a);
  }
  static void fill_array(rte_tel_data* a, std::span<const std::uint64_t> v) {
    rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
    for (std::size_t i = 0; i < v.size() && i < RTE_TEL_MAX_ARRAY_ENTRIES; ++i) rte_tel_data_add_array_u64(a, v[i]);
  }

 private:
  rte_tel_data* top() const { return stack_.back(); }
  std::vector<rte_tel_data*> stack_;
};

std::vector<std::string_view> split(const char* params) {
  std::vector<std::string_view> out;
  if (params == nullptr) return out;
  std::string_view s(params);
  while (!s.empty()) {
    const auto comma = s.find(',');
    out.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  const int base = s.starts_with("0x") ? 16 : 10;
  if (base == 16) s.remove_prefix(2);
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Dataplane* find(std::string_view name) {
  for (Dataplane* d : g_dataplanes)
    if (d->name() == name) return d;
  return nullptr;
}

// The dataplanes a command covers: one named by params[0], or all. nullopt: unknown name.
std::optional<std::vector<Dataplane*>> select(const std::vector<std::string_view>& params) {
  if (params.empty() || params[0].empty()) return g_dataplanes;
  Dataplane* d = find(params[0]);
  if (!d) return std::nullopt;
  return std::vector<Dataplane*>{d};
}

// Runs `body(sink, snapshot)` for each selected dataplane: keyed by name when covering all,
// straight into the reply when one was named.
template <typename Body>
int per_dataplane(const char* params, rte_tel_data* d, Body&& body) {
  std::lock_guard lock(g_mutex);
  const auto args = split(params);
  const auto dps = select(args);
  if (!dps) return -EINVAL;
  rte_tel_data_start_dict(d);
  TelemetrySink s(d);
  const bool named = !args.empty() && !args[0].empty();
  for (Dataplane* dp : *dps) {
    const DataplaneSnapshot snap = dp->snapshot();
    if (!named) s.open(snap.name);
    body(s, snap);
    if (!named) s.close();
  }
  return 0;
}

int cmd_dataplanes(const char*, const char*, rte_tel_data* d) {
  std::lock_guard lock(g_mutex);
  rte_tel_data_start_dict(d);
  TelemetrySink s(d);
  for (Dataplane* dp : g_dataplanes) {
    const DataplaneSnapshot snap = dp->snapshot();
    s.open(snap.name);
    schema::dataplane_info(s, snap);
    s.close();
  }
  return 0;
}

int cmd_ports(const char*, const char* params, rte_tel_data* d) {
  return per_dataplane(params, d, [](TelemetrySink& s, const DataplaneSnapshot& snap) { schema::port(s, snap); });
}

int cmd_workers(const char*, const char* params, rte_tel_data* d) {
  return per_dataplane(params, d, [](TelemetrySink& s, const DataplaneSnapshot& snap) {
    if (snap.io) {
      s.open("io");
      schema::io(s, *snap.io);
      s.close();
    }
    for (const WorkerSnapshot& w : snap.workers) {
      s.open(std::to_string(w.worker));
      schema::worker(s, w);
      s.close();
    }
  });
}

int cmd_engine(const char*, const char* params, rte_tel_data* d) {
  const auto args = split(params);
  if (args.size() < 2) {
    return per_dataplane(params, d, [](TelemetrySink& s, const DataplaneSnapshot& snap) { schema::engine(s, snap.engine_total()); });
  }
  std::lock_guard lock(g_mutex);
  Dataplane* dp = find(args[0]);
  const auto w = number(args[1]);
  if (!dp || !w) return -EINVAL;
  const DataplaneSnapshot snap = dp->snapshot();
  if (*w >= snap.workers.size()) return -EINVAL;
  rte_tel_data_start_dict(d);
  TelemetrySink s(d);
  schema::engine(s, snap.workers[*w].engine);
  return 0;
}

std::vector<std::uint64_t> qpns_of(const DataplaneSnapshot& snap) {
  std::vector<std::uint64_t> q;
  for (const WorkerSnapshot& w : snap.workers)
    for (const QpStats& s : w.qps) q.push_back(s.qpn);
  std::sort(q.begin(), q.end());
  return q;
}

int cmd_qps(const char*, const char* params, rte_tel_data* d) {
  const auto args = split(params);
  if (!args.empty() && !args[0].empty()) {
    std::lock_guard lock(g_mutex);
    Dataplane* dp = find(args[0]);
    if (!dp) return -EINVAL;
    TelemetrySink::fill_array(d, qpns_of(dp->snapshot()));
    return 0;
  }
  std::lock_guard lock(g_mutex);
  rte_tel_data_start_dict(d);
  TelemetrySink s(d);
  for (Dataplane* dp : g_dataplanes) {
    const DataplaneSnapshot snap = dp->snapshot();
    s.u64_array(snap.name, qpns_of(snap));
  }
  return 0;
}

int cmd_qp(const char*, const char* params, rte_tel_data* d) {
  const auto args = split(params);
  if (args.empty() || args.size() > 2) return -EINVAL;
  const auto qpn = number(args.back());
  if (!qpn) return -EINVAL;
  std::lock_guard lock(g_mutex);
  std::vector<Dataplane*> dps = g_dataplanes;
  if (args.size() == 2) {
    Dataplane* dp = find(args[0]);
    if (!dp) return -EINVAL;
    dps = {dp};
  }
  // Without a dataplane name the first one that has the QPN answers (QPNs repeat across
  // dataplanes of one process; name it to pick another).
  for (Dataplane* dp : dps) {
    const DataplaneSnapshot snap = dp->snapshot();
    if (const QpStats* q = snap.find_qp(static_cast<std::uint32_t>(*qpn))) {
      rte_tel_data_start_dict(d);
      TelemetrySink s(d);
      s.str("dataplane", snap.name);
      schema::qp(s, *q);
      return 0;
    }
  }
  return -ENOENT;
}

void register_commands() {
  rte_telemetry_register_cmd("/rocev2/dataplanes", cmd_dataplanes, "RoCEv2 dataplanes of this process. No parameters.");
  rte_telemetry_register_cmd("/rocev2/ports", cmd_ports, "Port set-up and rte_eth_stats. Parameter: dataplane name (optional).");
  rte_telemetry_register_cmd("/rocev2/workers", cmd_workers, "Per-lcore worker and IO counters. Parameter: dataplane name (optional).");
  rte_telemetry_register_cmd("/rocev2/engine", cmd_engine,
                             "Engine drops and transport/DCQCN sums. Parameters: [dataplane[,worker]].");
  rte_telemetry_register_cmd("/rocev2/qps", cmd_qps, "QP numbers. Parameter: dataplane name (optional).");
  rte_telemetry_register_cmd("/rocev2/qp", cmd_qp, "One QP's counters and DCQCN state. Parameters: [dataplane,]qpn.");
}

}  // namespace

void telemetry_attach(Dataplane* dp) {
  std::call_once(g_registered, register_commands);
  std::lock_guard lock(g_mutex);
  g_dataplanes.push_back(dp);
}

void telemetry_detach(Dataplane* dp) {
  std::lock_guard lock(g_mutex);
  std::erase(g_dataplanes, dp);
}

std::string telemetry_socket_path() {
  const char* dir = rte_eal_get_runtime_dir();
  return dir && *dir ? std::string(dir) + "/dpdk_telemetry.v2" : std::string();
}

}  // namespace roce::dp
