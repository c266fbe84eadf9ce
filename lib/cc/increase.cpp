#include "lib/cc/increase.hpp"

#include <algorithm>

namespace roce::cc {

IncreaseDecision decide_increase(IncreaseRule rule, std::uint32_t t, std::uint32_t bc, IncreaseSource source,
                                 std::uint32_t f) {
  switch (rule) {
    case IncreaseRule::Paper: {
      // max <= F gives exactly F fast-recovery steps from the timer alone ("five stages").
      const std::uint32_t lo = std::min(t, bc);
      if (std::max(t, bc) <= f) return {IncreaseKind::FastRecovery, 0};
      if (lo > f) return {IncreaseKind::Hyper, lo - f};
      return {IncreaseKind::Additive, 0};
    }
    case IncreaseRule::IsekaiMlx:
    case IncreaseRule::Hpcc: {
      const std::uint32_t t0 = source == IncreaseSource::Timer && t > 0 ? t - 1 : t;
      const std::uint32_t bc0 = source == IncreaseSource::ByteCounter && bc > 0 ? bc - 1 : bc;
      if (rule == IncreaseRule::IsekaiMlx) {
        if (std::min(t0, bc0) > f) return {IncreaseKind::Hyper, 1};
        if (std::max(t0, bc0) >= f) return {IncreaseKind::Additive, 0};
        return {IncreaseKind::FastRecovery, 0};
      }
      const std::uint32_t stage = std::max(t0, bc0);
      if (stage < f) return {IncreaseKind::FastRecovery, 0};
      if (stage == f) return {IncreaseKind::Additive, 0};
      return {IncreaseKind::Hyper, 1};
    }
  }
  return {IncreaseKind::FastRecovery, 0};
}

Rates apply_increase(Rates r, IncreaseDecision d, double rai_bps, double rhai_bps, double line_rate_bps) {
  switch (d.kind) {
    case IncreaseKind::FastRecovery: break;
    case IncreaseKind::Additive: r.rt = std::min(r.rt + rai_bps, line_rate_bps); break;
    case IncreaseKind::Hyper: r.rt = std::min(r.rt + d.hyper_steps * rhai_bps, line_rate_bps); break;
  }
  r.rc = std::min((r.rt + r.rc) / 2, line_rate_bps);
  return r;
}

RatesMbps apply_increase_mbps(RatesMbps r, IncreaseDecision d, std::uint64_t ai_mbps, std::uint64_t hai_mbps,
                              std::uint64_t max_mbps) {
  switch (d.kind) {
    case IncreaseKind::FastRecovery: break;
    case IncreaseKind::Additive: r.rt += ai_mbps; break;
    case IncreaseKind::Hyper: r.rt += hai_mbps * d.hyper_steps; break;
  }
  r.rt = std::min(r.rt, max_mbps);
  r.rc = std::min((r.rc + r.rt) / 2, max_mbps);
  return r;
}

std::string to_string(IncreaseKind k) {
  switch (k) {
    case IncreaseKind::FastRecovery: return "fast_recovery";
    case IncreaseKind::Additive: return "additive";
    case IncreaseKind::Hyper: return "hyper";
  }
  return "unknown";
}

std::string to_string(IncreaseSource s) {
  switch (s) {
    case IncreaseSource::Timer: return "timer";
    case IncreaseSource::ByteCounter: return "byte_counter";
  }
  return "unknown";
}

}  // namespace roce::cc
