// DCQCN reaction point (the sender side) for one QP: current rate Rc, target rate Rt, alpha,
// the timer and byte-counter stages, and up to three timers. Time comes from the caller.
//
// Ordering rules (spec 4.6, documented in docs/dcqcn.md):
// * A CNP at time t is handled after every timer with deadline < t and before those with
//   deadline == t; on_cnp() fires the earlier ones itself. Deliver packets before timers of the
//   same timestamp.
// * Timers with the same deadline fire in RpTimer order: alpha, then the rate-decrease check,
//   then the increase timer. In the paper profile alpha and increase commute. In mlx, alpha
//   first means the decrease check at a shared deadline cuts with the freshly decayed alpha
//   (spec C2: Rc = 51026 Mb/s); HPCC's ns-3 gets the same order from its 1 ns offset. A decrease
//   check that cuts restarts the increase timer, so an increase due at the same instant is
//   dropped: congestion wins.
// * on_bytes_sent() fires every timer with deadline <= now before counting the bytes.
#pragma once

#include <cstdint>
#include <string>

#include "lib/cc/counters.hpp"
#include "lib/cc/increase.hpp"
#include "lib/cc/params.hpp"
#include "lib/time.hpp"

namespace roce::cc {

enum class RpTimer : std::uint8_t { Alpha, RateDecrease, Increase };

// What one step of the reaction point did; the tracer prints one line per changing step.
enum class RpAction : std::uint8_t {
  None,               // nothing was due
  Cnp,                // a CNP was applied (paper: cut; mlx/hpcc: flags set, limiter allocated)
  AlphaUpdate,
  RateDecrease,       // mlx/hpcc periodic check that cut the rate
  DecreaseCheckIdle,  // mlx/hpcc periodic check with no CNP since the last one: no change
  IncreaseTimer,
  IncreaseBytes,
};

struct RpState {
  double rc_bps = 0;
  double rt_bps = 0;
  double alpha = 0;             // paper and hpcc
  std::uint32_t alpha_fx = 0;   // mlx, units of 1/1024
  std::uint32_t timer_stage = 0;  // T
  std::uint32_t byte_stage = 0;   // BC
  std::uint64_t bytes_acc = 0;
  Nanos alpha_deadline = kNever;
  Nanos decrease_deadline = kNever;  // mlx/hpcc periodic decrease check
  Nanos increase_deadline = kNever;
  bool cc_active = false;           // a CNP was seen and the timers run
  bool cnp_since_alpha = false;     // mlx/hpcc
  bool cnp_since_decrease = false;  // mlx/hpcc
};

class ReactionPoint {
 public:
  // The parameters must pass check(); they are copied.
  explicit ReactionPoint(const RpParams& params);

  void on_cnp(Nanos now);
  void on_bytes_sent(Nanos now, std::uint64_t wire_bytes);
  // Fires every timer whose deadline is <= now, in deadline order; returns how many fired.
  int advance(Nanos now);
  Nanos next_deadline() const;
  // The QP went idle or away: cancel the timers, keep the rates. The next CNP starts afresh.
  void stop();

  // Single steps, for tracers and tests that observe every state change.
  RpAction fire_next_timer(Nanos now);  // the earliest timer with deadline <= now, if any
  void add_sent_bytes(std::uint64_t wire_bytes);  // count only; no increase yet
  RpAction fire_byte_counter();                   // one byte-counter increase if one is due

  double rc_bps() const { return s_.rc_bps; }
  double rt_bps() const { return s_.rt_bps; }
  double alpha() const;  // as a real in [0, 1] for every profile
  bool cc_active() const { return s_.cc_active; }
  const RpState& state() const { return s_; }
  const RpCounters& counters() const { return counters_; }
  const RpParams& params() const { return params_; }
  QpRateSnapshot snapshot(std::uint32_t qpn) const;

 private:
  RpAction fire(RpTimer t);
  void count_increase(IncreaseKind k);
  void increase(IncreaseSource source);

  void cnp_paper(Nanos now);
  void alpha_paper();

  // rp_mlx.cpp
  void cnp_mlx(Nanos now);
  void alpha_mlx();
  RpAction decrease_mlx();
  void increase_mlx(IncreaseSource source);
  void release_limiter();

  // rp_hpcc.cpp
  void cnp_hpcc(Nanos now);
  void alpha_hpcc();
  RpAction decrease_hpcc();

  RpParams params_;
  std::uint64_t byte_threshold_ = 0;  // 0: no byte counter
  RpState s_;
  RpCounters counters_;
};

std::string to_string(RpTimer t);
std::string to_string(RpAction a);

}  // namespace roce::cc
