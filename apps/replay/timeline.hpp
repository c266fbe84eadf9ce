// The order a replay runs things in, on the capture's clock, whichever path carries the
// engine: receives and work requests due at a time, then every timer due up to a frame at its
// own deadline, then the frame; after the last frame, timers for `tail` more.
#pragma once

#include <algorithm>
#include <vector>

#include "apps/replay/frames.hpp"
#include "apps/replay/setup.hpp"

namespace roce::replay {

// Host provides:
//   Nanos next_deadline() const;           the engine's earliest timer
//   Status apply(const Action& a);          post a receive or work request
//   Status step(Nanos now);                 run timers due at `now` and send what is owed
//   Status deliver(std::size_t k, Nanos now);  receive input frame k at `now`, then as step()
template <typename Host>
Status run_timeline(const std::vector<Frame>& input, Nanos start, const std::vector<Action>& actions, Nanos tail,
                    Host& host) {
  Nanos now = 0;
  auto timers_until = [&](Nanos t) -> Status {
    while (host.next_deadline() <= t) {
      now = std::max(now, host.next_deadline());
      if (Status st = host.step(now); !st) return st;
    }
    return {};
  };
  auto act = [&](const Action& a) -> Status {
    if (Status st = timers_until(a.at); !st) return st;
    now = std::max(now, a.at);
    if (Status st = host.apply(a); !st) return st;
    return host.step(now);
  };
  std::size_t next = 0;
  for (std::size_t k = 0; k < input.size(); ++k) {
    // A capture's clock may step back a little; the engine's never does.
    const Nanos t = std::max(now, input[k].ts - start);
    for (; next < actions.size() && actions[next].at <= t; ++next)
      if (Status st = act(actions[next]); !st) return st;
    if (Status st = timers_until(t); !st) return st;
    now = t;
    if (Status st = host.deliver(k, now); !st) return st;
  }
  for (; next < actions.size(); ++next)
    if (Status st = act(actions[next]); !st) return st;
  return timers_until(now + tail);
}

}  // namespace roce::replay
