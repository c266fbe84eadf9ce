// Drives one reaction point through a dcqcn-trace event stream and prints a CSV line
// `t_us,event,rc_gbps,rt_gbps,alpha` after every state change.
//
// Before an event at time t every timer with deadline <= t fires, in deadline order, each with
// its own line at its deadline; a CNP at t goes before timers due exactly at t (spec 4.6). Timers
// sharing a deadline print in the reaction point's fixed order: alpha, rate_dec, inc_timer.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "apps/dcqcn_trace/trace_events.hpp"
#include "lib/cc/reaction_point.hpp"

namespace roce::trace {

class TraceRunner {
 public:
  TraceRunner(const cc::RpParams& params, std::ostream& out) : rp_(params), out_(out) {}

  // nullopt when applied, else why the event is refused (time going back, event after end).
  std::optional<std::string> apply(const TraceEvent& e);
  bool ended() const { return ended_; }

 private:
  void fire_timers(Nanos up_to);
  void print(Nanos t, cc::RpAction a);

  cc::ReactionPoint rp_;
  std::ostream& out_;
  std::int64_t last_us_ = 0;
  bool ended_ = false;
};

// `ns` as microseconds in decimal, exact: 4001 -> "4.001", 55000 -> "55".
std::string format_us(Nanos ns);
// The shortest decimal that reads back as the same double (up to 17 significant digits).
std::string format_double(double v);

}  // namespace roce::trace
