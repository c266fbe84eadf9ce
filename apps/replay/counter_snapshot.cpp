#include "apps/replay/counter_snapshot.hpp"

namespace roce::replay {

CounterSnapshot snapshot(const Engine& e, const Completions& wc) {
  CounterSnapshot s;
  const Counters c = e.total_counters();
  for (std::size_t i = 0; i < kCounterCount; ++i)
    s["counter." + std::string(counter_name(static_cast<Counter>(i)))] = c.values()[i];
  for (std::size_t i = 0; i < static_cast<std::size_t>(EngineDrop::Count); ++i)
    s["drop." + to_string(static_cast<EngineDrop>(i))] = e.drops(static_cast<EngineDrop>(i));
  for (std::size_t i = 1; i < static_cast<std::size_t>(proto::ParseError::Count); ++i)
    s["parse." + proto::to_string(static_cast<proto::ParseError>(i))] = e.parse_drops(static_cast<proto::ParseError>(i));
  s["wc.ok"] = wc.ok;
  s["wc.error"] = wc.error;
  return s;
}

bool is_counter_name(const std::string& name) {
  static const CounterSnapshot names = [] {
    MrTable mrs(1);
    EngineConfig cfg;
    cfg.max_qps = 1;
    const Engine e(cfg, mrs);
    return snapshot(e, {});
  }();
  return names.count(name) > 0;
}

}  // namespace roce::replay
