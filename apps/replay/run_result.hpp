// What one replay run produced, whichever path (engine or DPDK dataplane) carried it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/replay/counter_snapshot.hpp"
#include "apps/replay/frames.hpp"

namespace roce::replay {

struct RunResult {
  std::vector<Frame> sent;     // what the engine transmitted, timestamped
  CounterSnapshot counters;
  Nanos start = 0;             // time origin of the run (ns since the epoch)
  std::uint64_t frames_in = 0;
  std::uint64_t keys_mapped = 0;    // requests whose R_Key was translated (key_map.hpp)
  std::uint64_t keys_unmapped = 0;  // requests whose R_Key the scenario does not declare
};

// The time origin: the scenario's start, else the first input frame, else 0.
Nanos start_time(const std::optional<Nanos>& scenario_start, const std::vector<Frame>& input);

}  // namespace roce::replay
