// Reaction point, profile `hpcc`: the DCQCN model of HPCC's ns-3 (spec 4.8). Alpha and the
// decrease check run free from the first CNP; the increase timer restarts at every cut; there is
// no byte counter, and the stage is the timer stage T.
#include <algorithm>

#include "lib/cc/reaction_point.hpp"

namespace roce::cc {

void ReactionPoint::cnp_hpcc(Nanos now) {
  const HpccParams& p = params_.hpcc;
  if (s_.cc_active) {
    if (s_.cnp_since_decrease) ++counters_.cnp_coalesced;
    s_.cnp_since_alpha = s_.cnp_since_decrease = true;
    return;
  }
  s_.cnp_since_decrease = true;
  // First CNP: alpha = 1 with this CNP already in it; the decrease flag stays set so the first
  // check (1 ns after the alpha update) cuts.
  s_.alpha = 1.0;
  s_.cnp_since_alpha = false;
  s_.rc_bps = s_.rt_bps = p.rate_on_first_cnp * s_.rc_bps;
  s_.timer_stage = s_.byte_stage = 0;
  s_.alpha_deadline = after(now, p.alpha_resume_interval);
  const Nanos first_check = after(now, p.rate_decrease_interval);
  s_.decrease_deadline = first_check == kNever ? kNever : first_check + p.first_check_offset;
  s_.increase_deadline = kNever;
  s_.cc_active = true;
}

void ReactionPoint::alpha_hpcc() {
  const double g = params_.hpcc.g;
  s_.alpha = (1 - g) * s_.alpha + (s_.cnp_since_alpha ? g : 0.0);
  s_.cnp_since_alpha = false;
}

RpAction ReactionPoint::decrease_hpcc() {
  const HpccParams& p = params_.hpcc;
  const Nanos at = s_.decrease_deadline;
  s_.decrease_deadline = after(at, p.rate_decrease_interval);
  if (!s_.cnp_since_decrease) return RpAction::DecreaseCheckIdle;
  if (p.clamp_target_rate || s_.timer_stage != 0) s_.rt_bps = s_.rc_bps;
  s_.rc_bps = std::max(params_.min_rate_bps, s_.rc_bps * (1 - s_.alpha / 2));
  ++counters_.rate_decreases;
  s_.cnp_since_decrease = false;
  s_.timer_stage = 0;
  s_.increase_deadline = after(at, p.rp_timer);
  return RpAction::RateDecrease;
}

}  // namespace roce::cc
