#include "apps/dcqcn_trace/params_from_options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace roce::trace {

void add_param_options(cxxopts::Options& options) {
  options.add_options("DCQCN parameters")
      ("profile", "paper, mlx or hpcc", cxxopts::value<std::string>()->default_value("paper"))
      ("line-rate-gbps", "line rate C in Gb/s: start rate and cap", cxxopts::value<std::string>()->default_value("100"))
      ("g", "alpha gain, e.g. 1/256 or 0.0039 (mlx: sets dce_tcp_g = 1024*(1-g); hpcc: EwmaGain)",
       cxxopts::value<std::string>())
      ("k-us", "alpha timer period K in us, or inf (mlx: dce_tcp_rtt; hpcc: AlphaResumInterval)",
       cxxopts::value<std::string>())
      ("t-us", "rate-increase timer period T in us, or inf to disable (mlx: rpg_time_reset; hpcc: RPTimer)",
       cxxopts::value<std::string>())
      ("b-bytes", "byte counter B in bytes, or off (mlx: rpg_byte_reset in bytes; hpcc has none)",
       cxxopts::value<std::string>())
      ("f", "fast-recovery steps F (mlx: rpg_threshold; hpcc: FastRecoveryTimes)", cxxopts::value<std::string>())
      ("rai-mbps", "additive-increase step R_AI in Mb/s", cxxopts::value<std::string>())
      ("rhai-mbps", "hyper-increase step R_HAI in Mb/s", cxxopts::value<std::string>())
      ("rmin-mbps", "minimum rate in Mb/s (the spec's tests use 0)", cxxopts::value<std::string>())
      ("increase-rule", "paper profile only: paper, isekai_mlx or hpcc", cxxopts::value<std::string>())
      ("alpha-before-cut", "paper profile only: update alpha before the cut (Yibo Zhu's ns-3 order)");
}

namespace {

struct Reader {
  const cxxopts::ParseResult& args;
  std::string& err;

  bool has(const char* name) const { return args.count(name) != 0; }
  std::string text(const char* name) const { return args[name].as<std::string>(); }

  bool fail(const char* name, const std::string& why) {
    err = std::string("--") + name + ": " + why;
    return false;
  }

  // A decimal number, or a fraction a/b.
  bool number(const char* name, double& out) {
    const std::string s = text(name);
    const char* p = s.c_str();
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(p, &end);
    if (end != p && *end == '/') {
      const char* q = end + 1;
      const double d = std::strtod(q, &end);
      if (end == q || d == 0) return fail(name, "bad fraction '" + s + "'");
      v /= d;
    }
    if (end == p || *end != '\0' || errno != 0 || !std::isfinite(v)) return fail(name, "'" + s + "' is not a number");
    out = v;
    return true;
  }

  bool non_negative(const char* name, double& out) {
    if (!number(name, out)) return false;
    return out >= 0 || fail(name, "must not be negative");
  }

  // A period in microseconds, or inf/off for never.
  bool period(const char* name, Nanos& out) {
    const std::string s = text(name);
    if (s == "inf" || s == "off") {
      out = kNever;
      return true;
    }
    double us = 0;
    if (!number(name, us)) return false;
    if (!(us > 0 && us < 1e12)) return fail(name, "must be a positive number of microseconds, or inf");
    out = std::llround(us * 1000);
    return out > 0 || fail(name, "shorter than 1 ns");
  }

  bool whole(const char* name, std::uint32_t& out) {
    double v = 0;
    if (!non_negative(name, v)) return false;
    if (v != std::floor(v) || v > 4e9) return fail(name, "must be a whole number");
    out = static_cast<std::uint32_t>(v);
    return true;
  }

  bool refuse(const char* name, cc::Profile p) {
    if (!has(name)) return true;
    return fail(name, "does not apply to --profile " + cc::to_string(p));
  }
};

bool apply_paper(Reader& r, cc::RpParams& p) {
  cc::PaperParams& q = p.paper;
  double v = 0;
  if (r.has("g") && !r.number("g", q.g)) return false;
  if (r.has("k-us") && !r.period("k-us", q.alpha_interval)) return false;
  if (r.has("t-us") && !r.period("t-us", q.increase_interval)) return false;
  if (r.has("b-bytes")) {
    if (r.text("b-bytes") == "off") {
      q.byte_counter = 0;
    } else {
      if (!r.non_negative("b-bytes", v)) return false;
      if (v != std::floor(v) || v < 1) return r.fail("b-bytes", "must be a whole number of bytes, or off");
      q.byte_counter = static_cast<std::uint64_t>(v);
    }
  }
  if (r.has("f") && !r.whole("f", q.fast_recovery_steps)) return false;
  if (r.has("rai-mbps")) {
    if (!r.non_negative("rai-mbps", v)) return false;
    q.rai_bps = v * 1e6;
  }
  if (r.has("rhai-mbps")) {
    if (!r.non_negative("rhai-mbps", v)) return false;
    q.rhai_bps = v * 1e6;
  }
  if (r.has("increase-rule")) {
    const auto rule = cc::increase_rule_from_string(r.text("increase-rule"));
    if (!rule) return r.fail("increase-rule", "expected paper, isekai_mlx or hpcc");
    q.increase_rule = *rule;
  }
  q.alpha_update_before_cut = r.has("alpha-before-cut");
  return true;
}

bool apply_mlx(Reader& r, cc::RpParams& p) {
  cc::MlxParams& q = p.mlx;
  if (!r.refuse("increase-rule", p.profile) || !r.refuse("alpha-before-cut", p.profile)) return false;
  if (r.has("g")) {
    double g = 0;
    if (!r.number("g", g)) return false;
    const double fx = 1024 * (1 - g);
    if (!(g > 0 && g <= 1) || std::fabs(fx - std::round(fx)) > 1e-9)
      return r.fail("g", "mlx needs g = n/1024 with n in 1..1024 (dce_tcp_g = 1024 - n)");
    q.dce_tcp_g = static_cast<std::uint32_t>(std::lround(fx));
  }
  if (r.has("k-us") && !r.period("k-us", q.dce_tcp_rtt)) return false;
  if (r.has("t-us") && !r.period("t-us", q.rpg_time_reset)) return false;
  if (r.has("b-bytes")) {
    q.byte_reset_unit = 1;
    if (r.text("b-bytes") == "off") q.byte_reset_unit = 0;
    else if (!r.whole("b-bytes", q.rpg_byte_reset)) return false;
  }
  if (r.has("f") && !r.whole("f", q.rpg_threshold)) return false;
  if (r.has("rai-mbps") && !r.whole("rai-mbps", q.rpg_ai_rate_mbps)) return false;
  if (r.has("rhai-mbps") && !r.whole("rhai-mbps", q.rpg_hai_rate_mbps)) return false;
  if (r.has("rmin-mbps") && !r.whole("rmin-mbps", q.rpg_min_rate_mbps)) return false;
  return true;
}

bool apply_hpcc(Reader& r, cc::RpParams& p) {
  cc::HpccParams& q = p.hpcc;
  double v = 0;
  if (!r.refuse("increase-rule", p.profile) || !r.refuse("alpha-before-cut", p.profile)) return false;
  if (!r.refuse("b-bytes", p.profile)) return false;
  if (r.has("g") && !r.number("g", q.g)) return false;
  if (r.has("k-us") && !r.period("k-us", q.alpha_resume_interval)) return false;
  if (r.has("t-us") && !r.period("t-us", q.rp_timer)) return false;
  if (r.has("f") && !r.whole("f", q.fast_recovery_times)) return false;
  if (r.has("rai-mbps")) {
    if (!r.non_negative("rai-mbps", v)) return false;
    q.rai_bps = v * 1e6;
  }
  if (r.has("rhai-mbps")) {
    if (!r.non_negative("rhai-mbps", v)) return false;
    q.rhai_bps = v * 1e6;
  }
  return true;
}

}  // namespace

std::optional<cc::RpParams> params_from_options(const cxxopts::ParseResult& args, std::string& err) {
  Reader r{args, err};
  const auto profile = cc::profile_from_string(r.text("profile"));
  if (!profile) {
    r.fail("profile", "expected paper, mlx or hpcc");
    return std::nullopt;
  }
  double gbps = 0;
  if (!r.number("line-rate-gbps", gbps)) return std::nullopt;
  if (!(gbps > 0)) {
    r.fail("line-rate-gbps", "must be positive");
    return std::nullopt;
  }
  cc::RpParams p = cc::params_for(*profile, gbps * 1e9);
  double rmin = 0;
  if (*profile != cc::Profile::Mlx && r.has("rmin-mbps")) {
    if (!r.non_negative("rmin-mbps", rmin)) return std::nullopt;
    p.min_rate_bps = rmin * 1e6;
  }
  bool ok = false;
  switch (*profile) {
    case cc::Profile::Paper: ok = apply_paper(r, p); break;
    case cc::Profile::Mlx: ok = apply_mlx(r, p); break;
    case cc::Profile::Hpcc: ok = apply_hpcc(r, p); break;
  }
  if (!ok) return std::nullopt;
  if (const auto problem = cc::check(p)) {
    err = *problem;
    return std::nullopt;
  }
  return p;
}

}  // namespace roce::trace
