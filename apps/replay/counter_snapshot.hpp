// The engine's counters after a replay, under the names a scenario's [expect] section uses:
// counter.<rxe name> (summed over every QP), drop.<engine drop>, parse.<parse error>, and
// wc.ok / wc.error for the completions the replay polled.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "lib/rdma/engine.hpp"

namespace roce::replay {

using CounterSnapshot = std::map<std::string, std::uint64_t>;

struct Completions {
  std::uint64_t ok = 0;
  std::uint64_t error = 0;
};

CounterSnapshot snapshot(const rdma::Engine& e, const Completions& wc);
bool is_counter_name(const std::string& name);

}  // namespace roce::replay
