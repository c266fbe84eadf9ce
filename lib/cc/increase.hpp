// The rate-increase step of the reaction point as pure functions: which phase a timer or
// byte-counter event puts the QP in (fast recovery, additive, hyper), and what that phase does
// to (Rc, Rt). Spec 4.5; the rule variants differ only in their stage boundaries.
#pragma once

#include <cstdint>
#include <string>

#include "lib/cc/params.hpp"

namespace roce::cc {

enum class IncreaseKind : std::uint8_t { FastRecovery, Additive, Hyper };
enum class IncreaseSource : std::uint8_t { Timer, ByteCounter };

struct IncreaseDecision {
  IncreaseKind kind = IncreaseKind::FastRecovery;
  std::uint32_t hyper_steps = 0;  // multiplier of R_HAI, 0 unless kind == Hyper
};

// `timer_stage` and `byte_stage` are the counters T and BC *after* the increment that the
// event `source` caused; the rules that look at the counts before it undo that increment.
IncreaseDecision decide_increase(IncreaseRule rule, std::uint32_t timer_stage, std::uint32_t byte_stage,
                                 IncreaseSource source, std::uint32_t fast_recovery_steps);

struct Rates {
  double rc = 0;  // current rate, bit/s
  double rt = 0;  // target rate, bit/s
};

// Real-valued step (paper and hpcc profiles): AI/HAI raise Rt, capped at the line rate; every
// phase then moves Rc half way to Rt.
Rates apply_increase(Rates r, IncreaseDecision d, double rai_bps, double rhai_bps, double line_rate_bps);

struct RatesMbps {
  std::uint64_t rc = 0;
  std::uint64_t rt = 0;
};

// The firmware's integer step (mlx profile): Rc = (Rc + Rt) / 2 rounded down.
RatesMbps apply_increase_mbps(RatesMbps r, IncreaseDecision d, std::uint64_t ai_mbps, std::uint64_t hai_mbps,
                              std::uint64_t max_mbps);

std::string to_string(IncreaseKind k);
std::string to_string(IncreaseSource s);

}  // namespace roce::cc
