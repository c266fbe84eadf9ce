// Reaction-point parameters for the three DCQCN profiles of ../shared/spec/dcqcn.md:
// `paper` (SIGCOMM'15 as the authors' later material gives it, section 2.1), `mlx` (NVIDIA
// firmware fixed point, sections 2.2 and 4.7) and `hpcc` (the HPCC ns-3 model, sections 2.3 and
// 4.8). Every constant is a field; the profile functions return the documented defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/time.hpp"

namespace roce::cc {

enum class Profile : std::uint8_t { Paper, Mlx, Hpcc };

// Where fast recovery ends and hyper increase starts (spec 4.5).
enum class IncreaseRule : std::uint8_t {
  Paper,      // counters after the increment; F steps of FR; HAI adds (min(T,BC) - F) * R_HAI
  IsekaiMlx,  // counters before the increment; HAI if min > F, AI if max >= F; HAI adds one R_HAI
  Hpcc,       // stage = max(T,BC) before the increment: < F FR, == F AI, > F HAI (one R_HAI)
};

struct PaperParams {
  double g = 1.0 / 256;
  Nanos alpha_interval = from_us(55);     // K: no CNP for K => alpha decays
  Nanos increase_interval = from_us(55);  // T; kNever disables the increase timer
  std::uint64_t byte_counter = 10'000'000;  // B in bytes; 0 disables the byte counter
  std::uint32_t fast_recovery_steps = 5;    // F
  double rai_bps = 40e6;
  double rhai_bps = 200e6;  // not in the paper text; the authors' simulator config (spec 2.1)
  double alpha0 = 1.0;
  bool alpha_update_before_cut = false;  // Yibo Zhu's ns-3 order; the paper cuts with the old alpha
  IncreaseRule increase_rule = IncreaseRule::Paper;
};

// Names follow mlxconfig / debugfs. Rates are integer Mb/s and alpha is in 1/1024 units, as
// the firmware keeps them.
struct MlxParams {
  std::uint32_t dce_tcp_g = 1019;  // weight of the old alpha (Isekai reading, spec 2.2 caveat)
  Nanos dce_tcp_rtt = from_us(1);  // alpha update period
  Nanos rate_reduce_monitor_period = from_us(4);
  bool clamp_tgt_rate = false;
  bool clamp_tgt_rate_ati = true;
  Nanos rpg_time_reset = from_us(300);
  std::uint32_t rpg_byte_reset = 32767;
  std::uint32_t byte_reset_unit = 64;  // bytes per rpg_byte_reset unit (Isekai); 0 disables
  std::uint32_t rpg_threshold = 1;     // F
  std::uint32_t rpg_ai_rate_mbps = 5;
  std::uint32_t rpg_hai_rate_mbps = 50;
  std::uint32_t rpg_gd = 11;          // cut = Rc * alpha_fx >> rpg_gd
  std::uint32_t rpg_min_dec_fac = 50;  // percent: a cut never exceeds (100 - this) % of Rc
  std::uint32_t rpg_min_rate_mbps = 1;
  std::uint32_t rate_to_set_on_first_cnp_mbps = 0;  // 0 = port speed
  std::uint32_t initial_alpha_value = 1023;
  std::uint32_t rpg_max_rate_mbps = 0;  // 0 = port speed; reaching it releases the limiter
  bool cut_on_first_cnp = true;  // the first CNP also counts for the next decrease check (spec C2)
  bool release_at_max_rate = true;  // Rc within 1 Mb/s of the max rate frees the limiter
};

// Defaults are HPCC's `run.py --cc dcqcn` at 100 Gb/s (hpcc_params() scales AI/HAI by line rate).
struct HpccParams {
  double g = 1.0 / 256;
  Nanos alpha_resume_interval = from_us(1);
  Nanos rate_decrease_interval = from_us(4);
  Nanos rp_timer = from_us(300);
  std::uint32_t fast_recovery_times = 1;
  double rai_bps = 20e6;
  double rhai_bps = 200e6;
  double rate_on_first_cnp = 1.0;  // fraction of the current rate set on the first CNP
  bool clamp_target_rate = false;
  Nanos first_check_offset = 1;  // ns; puts the first decrease check after the alpha update
};

struct RpParams {
  Profile profile = Profile::Paper;
  double line_rate_bps = 100e9;  // C: start rate and cap on Rt and Rc
  double min_rate_bps = 1e6;     // R_min for paper and hpcc (the spec's paper tests use 0);
                                 // mlx uses mlx.rpg_min_rate_mbps
  PaperParams paper{};
  MlxParams mlx{};
  HpccParams hpcc{};
};

RpParams paper_params(double line_rate_bps);
RpParams mlx_params(double line_rate_bps);
RpParams hpcc_params(double line_rate_bps);
// The profile's defaults at this line rate.
RpParams params_for(Profile p, double line_rate_bps);

// nullopt when the parameters are usable, else what is wrong with them.
std::optional<std::string> check(const RpParams& p);

std::string to_string(Profile p);
std::string to_string(IncreaseRule r);
std::optional<Profile> profile_from_string(std::string_view s);
std::optional<IncreaseRule> increase_rule_from_string(std::string_view s);

}  // namespace roce::cc
