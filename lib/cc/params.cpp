#include "lib/cc/params.hpp"

#include <cmath>

namespace roce::cc {

RpParams paper_params(double line_rate_bps) {
  RpParams p;
  p.profile = Profile::Paper;
  p.line_rate_bps = line_rate_bps;
  return p;
}

RpParams mlx_params(double line_rate_bps) {
  RpParams p;
  p.profile = Profile::Mlx;
  p.line_rate_bps = line_rate_bps;
  p.min_rate_bps = 1e6 * p.mlx.rpg_min_rate_mbps;
  return p;
}

// run.py --cc dcqcn: RATE_AI = 5 * bw/25 Mb/s, RATE_HAI = 50 * bw/25 Mb/s, MIN_RATE 1000 Mb/s.
RpParams hpcc_params(double line_rate_bps) {
  RpParams p;
  p.profile = Profile::Hpcc;
  p.line_rate_bps = line_rate_bps;
  p.min_rate_bps = 1e9;
  const double bw_gbps = line_rate_bps / 1e9;
  p.hpcc.rai_bps = 5e6 * bw_gbps / 25;
  p.hpcc.rhai_bps = 50e6 * bw_gbps / 25;
  return p;
}

RpParams params_for(Profile profile, double line_rate_bps) {
  switch (profile) {
    case Profile::Mlx: return mlx_params(line_rate_bps);
    case Profile::Hpcc: return hpcc_params(line_rate_bps);
    case Profile::Paper: break;
  }
  return paper_params(line_rate_bps);
}

namespace {

bool positive_period(Nanos t) { return t > 0; }

std::optional<std::string> check_paper(const PaperParams& p) {
  if (!(p.g > 0 && p.g <= 1)) return "g must be in (0, 1]";
  if (!positive_period(p.alpha_interval)) return "alpha interval K must be positive";
  if (!positive_period(p.increase_interval)) return "increase timer T must be positive (kNever disables it)";
  if (!(p.rai_bps >= 0 && p.rhai_bps >= 0)) return "R_AI and R_HAI must not be negative";
  if (!(p.alpha0 >= 0 && p.alpha0 <= 1)) return "alpha0 must be in [0, 1]";
  return std::nullopt;
}

std::optional<std::string> check_mlx(const MlxParams& p, double line_rate_bps) {
  if (p.dce_tcp_g > 1024) return "dce_tcp_g must be at most 1024";
  if (!positive_period(p.dce_tcp_rtt)) return "dce_tcp_rtt must be positive";
  if (!positive_period(p.rate_reduce_monitor_period)) return "rate_reduce_monitor_period must be positive";
  if (!positive_period(p.rpg_time_reset)) return "rpg_time_reset must be positive";
  if (p.rpg_threshold < 1 || p.rpg_threshold > 31) return "rpg_threshold must be in 1..31";
  if (p.rpg_gd > 31) return "rpg_gd must be at most 31";
  if (p.rpg_min_dec_fac > 100) return "rpg_min_dec_fac is a percentage (0..100)";
  if (p.initial_alpha_value > 1023) return "initial_alpha_value must be at most 1023";
  const double port_mbps = line_rate_bps / 1e6;
  if (port_mbps != std::floor(port_mbps)) return "mlx profile needs a line rate in whole Mb/s";
  if (p.rpg_max_rate_mbps > port_mbps) return "rpg_max_rate above the port speed";
  if (p.rpg_min_rate_mbps > port_mbps) return "rpg_min_rate above the port speed";
  return std::nullopt;
}

std::optional<std::string> check_hpcc(const HpccParams& p) {
  if (!(p.g > 0 && p.g <= 1)) return "g (EwmaGain) must be in (0, 1]";
  if (!positive_period(p.alpha_resume_interval)) return "alpha resume interval must be positive";
  if (!positive_period(p.rate_decrease_interval)) return "rate decrease interval must be positive";
  if (!positive_period(p.rp_timer)) return "rp timer must be positive";
  if (!(p.rai_bps >= 0 && p.rhai_bps >= 0)) return "rate AI and HAI must not be negative";
  if (!(p.rate_on_first_cnp > 0 && p.rate_on_first_cnp <= 1)) return "rate on first CNP must be in (0, 1]";
  if (p.first_check_offset < 0) return "first check offset must not be negative";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check(const RpParams& p) {
  if (!(p.line_rate_bps > 0 && std::isfinite(p.line_rate_bps))) return "line rate must be positive";
  if (!(p.min_rate_bps >= 0 && p.min_rate_bps <= p.line_rate_bps)) return "min rate must be in [0, line rate]";
  switch (p.profile) {
    case Profile::Paper: return check_paper(p.paper);
    case Profile::Mlx: return check_mlx(p.mlx, p.line_rate_bps);
    case Profile::Hpcc: return check_hpcc(p.hpcc);
  }
  return "unknown profile";
}

std::string to_string(Profile p) {
  switch (p) {
    case Profile::Paper: return "paper";
    case Profile::Mlx: return "mlx";
    case Profile::Hpcc: return "hpcc";
  }
  return "unknown";
}

std::string to_string(IncreaseRule r) {
  switch (r) {
    case IncreaseRule::Paper: return "paper";
    case IncreaseRule::IsekaiMlx: return "isekai_mlx";
    case IncreaseRule::Hpcc: return "hpcc";
  }
  return "unknown";
}

std::optional<Profile> profile_from_string(std::string_view s) {
  for (Profile p : {Profile::Paper, Profile::Mlx, Profile::Hpcc})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::optional<IncreaseRule> increase_rule_from_string(std::string_view s) {
  for (IncreaseRule r : {IncreaseRule::Paper, IncreaseRule::IsekaiMlx, IncreaseRule::Hpcc})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

}  // namespace roce::cc
