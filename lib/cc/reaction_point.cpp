// Event dispatch and timer ordering of the reaction point, and the paper profile (spec 4.1-4.5).
// The mlx and hpcc profiles live in rp_mlx.cpp and rp_hpcc.cpp.
#include "lib/cc/reaction_point.hpp"

#include <algorithm>
#include <limits>

namespace roce::cc {

namespace {

std::uint64_t byte_threshold(const RpParams& p) {
  switch (p.profile) {
    case Profile::Paper: return p.paper.byte_counter;
    case Profile::Mlx: return std::uint64_t{p.mlx.rpg_byte_reset} * p.mlx.byte_reset_unit;
    case Profile::Hpcc: return 0;  // HPCC's model has no byte counter
  }
  return 0;
}

}  // namespace

ReactionPoint::ReactionPoint(const RpParams& params) : params_(params), byte_threshold_(byte_threshold(params)) {
  // No slow start: a QP starts at line rate.
  s_.rc_bps = s_.rt_bps = params_.line_rate_bps;
  s_.alpha = params_.profile == Profile::Paper ? params_.paper.alpha0 : 1.0;
  s_.alpha_fx = params_.mlx.initial_alpha_value;
}

void ReactionPoint::on_cnp(Nanos now) {
  // Timers strictly before the CNP first; a timer due at `now` comes after it.
  if (now != std::numeric_limits<Nanos>::min()) advance(now - 1);
  ++counters_.cnp_received;
  switch (params_.profile) {
    case Profile::Paper: cnp_paper(now); break;
    case Profile::Mlx: cnp_mlx(now); break;
    case Profile::Hpcc: cnp_hpcc(now); break;
  }
}

void ReactionPoint::on_bytes_sent(Nanos now, std::uint64_t wire_bytes) {
  advance(now);
  add_sent_bytes(wire_bytes);
  while (fire_byte_counter() != RpAction::None) {
  }
}

int ReactionPoint::advance(Nanos now) {
  int fired = 0;
  while (fire_next_timer(now) != RpAction::None) ++fired;
  return fired;
}

Nanos ReactionPoint::next_deadline() const {
  return std::min({s_.alpha_deadline, s_.decrease_deadline, s_.increase_deadline});
}

void ReactionPoint::stop() {
  s_.cc_active = false;
  s_.alpha_deadline = s_.decrease_deadline = s_.increase_deadline = kNever;
  s_.cnp_since_alpha = s_.cnp_since_decrease = false;
  s_.bytes_acc = 0;
}

RpAction ReactionPoint::fire_next_timer(Nanos now) {
  // Ties resolve in RpTimer order: the first minimum wins.
  RpTimer due = RpTimer::Alpha;
  Nanos at = s_.alpha_deadline;
  if (s_.decrease_deadline < at) {
    due = RpTimer::RateDecrease;
    at = s_.decrease_deadline;
  }
  if (s_.increase_deadline < at) {
    due = RpTimer::Increase;
    at = s_.increase_deadline;
  }
  if (at == kNever || at > now) return RpAction::None;
  return fire(due);
}

RpAction ReactionPoint::fire(RpTimer t) {
  // Periodic timers re-arm from their own deadline, so a late caller catches up in order.
  switch (t) {
    case RpTimer::Alpha: {
      const Nanos at = s_.alpha_deadline;
      ++counters_.alpha_updates;
      switch (params_.profile) {
        case Profile::Paper:
          alpha_paper();
          s_.alpha_deadline = after(at, params_.paper.alpha_interval);
          break;
        case Profile::Mlx:
          alpha_mlx();
          s_.alpha_deadline = after(at, params_.mlx.dce_tcp_rtt);
          break;
        case Profile::Hpcc:
          alpha_hpcc();
          s_.alpha_deadline = after(at, params_.hpcc.alpha_resume_interval);
          break;
      }
      return RpAction::AlphaUpdate;
    }
    case RpTimer::RateDecrease:
      return params_.profile == Profile::Mlx ? decrease_mlx() : decrease_hpcc();
    case RpTimer::Increase: {
      const Nanos at = s_.increase_deadline;
      const Nanos period = params_.profile == Profile::Paper  ? params_.paper.increase_interval
                           : params_.profile == Profile::Mlx ? params_.mlx.rpg_time_reset
                                                               : params_.hpcc.rp_timer;
      s_.increase_deadline = after(at, period);
      ++counters_.increase_timer_events;
      ++s_.timer_stage;
      increase(IncreaseSource::Timer);
      return RpAction::IncreaseTimer;
    }
  }
  return RpAction::None;
}

void ReactionPoint::add_sent_bytes(std::uint64_t wire_bytes) {
  if (s_.cc_active && byte_threshold_ != 0) s_.bytes_acc += wire_bytes;
}

RpAction ReactionPoint::fire_byte_counter() {
  if (!s_.cc_active || byte_threshold_ == 0 || s_.bytes_acc < byte_threshold_) return RpAction::None;
  s_.bytes_acc -= byte_threshold_;
  ++counters_.byte_counter_events;
  ++s_.byte_stage;
  increase(IncreaseSource::ByteCounter);
  return RpAction::IncreaseBytes;
}

void ReactionPoint::count_increase(IncreaseKind k) {
  switch (k) {
    case IncreaseKind::FastRecovery: ++counters_.increases_fast_recovery; break;
    case IncreaseKind::Additive: ++counters_.increases_additive; break;
    case IncreaseKind::Hyper: ++counters_.increases_hyper; break;
  }
}

void ReactionPoint::increase(IncreaseSource source) {
  if (params_.profile == Profile::Mlx) {
    increase_mlx(source);
    return;
  }
  const bool paper = params_.profile == Profile::Paper;
  const IncreaseRule rule = paper ? params_.paper.increase_rule : IncreaseRule::Hpcc;
  const std::uint32_t f = paper ? params_.paper.fast_recovery_steps : params_.hpcc.fast_recovery_times;
  const IncreaseDecision d = decide_increase(rule, s_.timer_stage, s_.byte_stage, source, f);
  count_increase(d.kind);
  const Rates r = apply_increase({s_.rc_bps, s_.rt_bps}, d, paper ? params_.paper.rai_bps : params_.hpcc.rai_bps,
                                 paper ? params_.paper.rhai_bps : params_.hpcc.rhai_bps, params_.line_rate_bps);
  s_.rc_bps = r.rc;
  s_.rt_bps = r.rt;
}

// Spec 4.1: Rt <- Rc, cut with the alpha from before this CNP (unless the flag asks for the
// ns-3 order), update alpha, reset the stages and (re)arm both timers.
void ReactionPoint::cnp_paper(Nanos now) {
  const PaperParams& p = params_.paper;
  const double g = p.g;
  if (p.alpha_update_before_cut) s_.alpha = (1 - g) * s_.alpha + g;
  s_.rt_bps = s_.rc_bps;
  s_.rc_bps = std::max(params_.min_rate_bps, s_.rc_bps * (1 - s_.alpha / 2));
  if (!p.alpha_update_before_cut) s_.alpha = (1 - g) * s_.alpha + g;
  ++counters_.rate_decreases;
  s_.timer_stage = s_.byte_stage = 0;
  s_.bytes_acc = 0;
  s_.increase_deadline = after(now, p.increase_interval);
  s_.alpha_deadline = after(now, p.alpha_interval);
  s_.cc_active = true;
}

void ReactionPoint::alpha_paper() { s_.alpha = (1 - params_.paper.g) * s_.alpha; }

double ReactionPoint::alpha() const {
  return params_.profile == Profile::Mlx ? s_.alpha_fx / 1024.0 : s_.alpha;
}

QpRateSnapshot ReactionPoint::snapshot(std::uint32_t qpn) const {
  return {qpn, s_.rc_bps, s_.rt_bps, alpha(), s_.cc_active};
}

std::string to_string(RpTimer t) {
  switch (t) {
    case RpTimer::Alpha: return "alpha";
    case RpTimer::RateDecrease: return "rate_decrease";
    case RpTimer::Increase: return "increase";
  }
  return "unknown";
}

std::string to_string(RpAction a) {
  switch (a) {
    case RpAction::None: return "none";
    case RpAction::Cnp: return "cnp";
    case RpAction::AlphaUpdate: return "alpha";
    case RpAction::RateDecrease: return "rate_dec";
    case RpAction::DecreaseCheckIdle: return "dec_check_idle";
    case RpAction::IncreaseTimer: return "inc_timer";
    case RpAction::IncreaseBytes: return "bytes";
  }
  return "unknown";
}

}  // namespace roce::cc
