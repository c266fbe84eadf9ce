#include "apps/replay/counter_snapshot.hpp"

namespace roce::replay {

CounterSnapshot snapshot(const rdma::Engine& e, const Completions& wc) {
  CounterSnapshot s;
  const rdma::Counters c = e.total_counters();
  for (std::size_t i = 0; i < rdma::kCounterCount; ++i)
    s["counter." + std::string(rdma::counter_name(static_cast<rdma::Counter>(i)))] = c.values()[i];
  for (std::size_t i = 0; i < static_cast<std::size_t>(rdma::EngineDrop::Count); ++i)
    s["drop." + to_string(static_cast<rdma::EngineDrop>(i))] = e.drops(static_cast<rdma::EngineDrop>(i));
  for (std::size_t i = 1; i < static_cast<std::size_t>(proto::ParseError::Count); ++i)
    s["parse." + proto::to_string(static_cast<proto::ParseError>(i))] = e.parse_drops(static_cast<proto::ParseError>(i));
  s["wc.ok"] = wc.ok;
  s["wc.error"] = wc.error;
  return s;
}

bool is_counter_name(const std::string& name) {
  static const CounterSnapshot names = [] {
    rdma::MrTable mrs(1);
    rdma::EngineConfig cfg;
    cfg.max_qps = 1;
    const rdma::Engine e(cfg, mrs);
    return snapshot(e, {});
  }();
  return names.count(name) > 0;
}

}  // namespace roce::replay
