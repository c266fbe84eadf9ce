// Reaction point, profile `mlx`: the NVIDIA firmware behaviour as spec 4.7 and the Isekai model
// describe it. Rates are whole Mb/s and alpha is alpha_fx/1024, with the firmware's integer
// rounding. Not verified against hardware.
#include <algorithm>
#include <cmath>

#include "lib/cc/reaction_point.hpp"

namespace roce::cc {

namespace {

std::uint64_t to_mbps(double bps) { return static_cast<std::uint64_t>(std::llround(bps / 1e6)); }
double to_bps(std::uint64_t mbps) { return static_cast<double>(mbps) * 1e6; }

std::uint64_t max_rate_mbps(const RpParams& p) {
  return p.mlx.rpg_max_rate_mbps != 0 ? p.mlx.rpg_max_rate_mbps : to_mbps(p.line_rate_bps);
}

}  // namespace

void ReactionPoint::cnp_mlx(Nanos now) {
  const MlxParams& p = params_.mlx;
  if (s_.cc_active) {
    // Several CNPs inside one monitor period make a single cut.
    if (s_.cnp_since_decrease) ++counters_.cnp_coalesced;
    s_.cnp_since_alpha = s_.cnp_since_decrease = true;
    return;
  }
  // First CNP (or first after the limiter was released): allocate the limiter.
  const std::uint64_t port = to_mbps(params_.line_rate_bps);
  const std::uint64_t first = p.rate_to_set_on_first_cnp_mbps != 0
                                  ? std::min<std::uint64_t>(p.rate_to_set_on_first_cnp_mbps, port)
                                  : port;
  s_.rc_bps = s_.rt_bps = to_bps(first);
  s_.alpha_fx = p.initial_alpha_value;
  s_.cnp_since_alpha = false;  // alpha starts at its initial value; this CNP is already in it
  s_.cnp_since_decrease = p.cut_on_first_cnp;
  s_.timer_stage = s_.byte_stage = 0;
  s_.bytes_acc = 0;
  s_.alpha_deadline = after(now, p.dce_tcp_rtt);
  s_.decrease_deadline = after(now, p.rate_reduce_monitor_period);
  s_.increase_deadline = after(now, p.rpg_time_reset);
  s_.cc_active = true;
}

// With a CNP in the period: alpha <- G*alpha/1024 + (1024 - G), capped at 1023; else G*alpha/1024.
void ReactionPoint::alpha_mlx() {
  const std::uint32_t g = params_.mlx.dce_tcp_g;
  std::uint32_t a = g * s_.alpha_fx / 1024;
  if (s_.cnp_since_alpha) a = std::min<std::uint32_t>(a + (1024 - g), 1023);
  s_.alpha_fx = a;
  s_.cnp_since_alpha = false;
}

RpAction ReactionPoint::decrease_mlx() {
  const MlxParams& p = params_.mlx;
  const Nanos at = s_.decrease_deadline;
  s_.decrease_deadline = after(at, p.rate_reduce_monitor_period);
  if (!s_.cnp_since_decrease) return RpAction::DecreaseCheckIdle;
  // Rt follows Rc only if the rate went up since the last cut (timer increases count only with
  // clamp_tgt_rate_ati), or always with clamp_tgt_rate.
  const bool clamp = p.clamp_tgt_rate || s_.byte_stage > 0 || (p.clamp_tgt_rate_ati && s_.timer_stage > 0);
  std::uint64_t rc = to_mbps(s_.rc_bps);
  if (clamp) s_.rt_bps = to_bps(rc);
  const std::uint64_t cut = std::min((rc * s_.alpha_fx) >> p.rpg_gd, rc * (100 - p.rpg_min_dec_fac) / 100);
  rc = std::max<std::uint64_t>(rc - cut, p.rpg_min_rate_mbps);
  s_.rc_bps = to_bps(rc);
  ++counters_.rate_decreases;
  s_.cnp_since_decrease = false;
  s_.timer_stage = s_.byte_stage = 0;
  s_.bytes_acc = 0;
  s_.increase_deadline = after(at, p.rpg_time_reset);
  return RpAction::RateDecrease;
}

void ReactionPoint::increase_mlx(IncreaseSource source) {
  const MlxParams& p = params_.mlx;
  const IncreaseDecision d =
      decide_increase(IncreaseRule::IsekaiMlx, s_.timer_stage, s_.byte_stage, source, p.rpg_threshold);
  count_increase(d.kind);
  const std::uint64_t max = max_rate_mbps(params_);
  const RatesMbps r =
      apply_increase_mbps({to_mbps(s_.rc_bps), to_mbps(s_.rt_bps)}, d, p.rpg_ai_rate_mbps, p.rpg_hai_rate_mbps, max);
  s_.rc_bps = to_bps(r.rc);
  s_.rt_bps = to_bps(r.rt);
  // Halving the gap in whole Mb/s never closes the last 1 Mb/s, so "reached" means within it.
  if (p.release_at_max_rate && r.rc + 1 >= max) release_limiter();
}

// Rc reached the max rate: the firmware frees the limiter; the next CNP is a first CNP again.
void ReactionPoint::release_limiter() {
  ++counters_.limiter_released;
  stop();
}

}  // namespace roce::cc
