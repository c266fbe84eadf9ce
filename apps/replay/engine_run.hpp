// The default replay path: the scenario in a plain Engine, the capture's frames fed in at
// their capture times on the injected clock, timers run at their deadlines between frames,
// and everything transmitted collected with the time it left.
#pragma once

#include "apps/replay/run_result.hpp"
#include "apps/replay/scenario.hpp"

namespace roce::replay {

Result<RunResult> run_on_engine(const Scenario& s, const std::vector<Frame>& input);

}  // namespace roce::replay
