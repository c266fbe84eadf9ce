// Congestion-control counters as plain structs the dataplane can export: per reaction point,
// per notification point, and the per-port sum with the CNPs a port had to ignore.
#pragma once

#include <cstdint>
#include <string>

namespace roce::cc {

struct RpCounters {
  std::uint64_t cnp_received = 0;
  std::uint64_t cnp_coalesced = 0;  // mlx/hpcc: a CNP in a period that already had one (no extra cut)
  std::uint64_t rate_decreases = 0;
  std::uint64_t increases_fast_recovery = 0;
  std::uint64_t increases_additive = 0;
  std::uint64_t increases_hyper = 0;
  std::uint64_t increase_timer_events = 0;
  std::uint64_t byte_counter_events = 0;
  std::uint64_t alpha_updates = 0;
  std::uint64_t limiter_released = 0;  // mlx: Rc reached the max rate and the limiter was freed
};

struct NpCounters {
  std::uint64_t ce_packets = 0;      // CE-marked data packets seen
  std::uint64_t cnp_sent = 0;        // all CNPs the NP asked for
  std::uint64_t cnp_deferred = 0;    // of those, sent at the end of a pacing window
  std::uint64_t ce_absorbed = 0;     // CE packets covered by a CNP already sent or pending
  std::uint64_t ce_suppressed = 0;   // suppress mode: CE packets that got no CNP at all
};

// Why an incoming CNP did or did not reach a reaction point.
enum class CnpDisposition : std::uint8_t { Apply, IgnoredUnknownQp, IgnoredCcDisabled };

constexpr CnpDisposition classify_cnp(bool qp_known, bool cc_enabled) {
  if (!qp_known) return CnpDisposition::IgnoredUnknownQp;
  return cc_enabled ? CnpDisposition::Apply : CnpDisposition::IgnoredCcDisabled;
}

// Per port: the sums a dataplane exports.
struct CcCounters {
  std::uint64_t cnp_sent = 0;
  std::uint64_t cnp_received = 0;
  std::uint64_t cnp_ignored_unknown_qp = 0;
  std::uint64_t cnp_ignored_cc_disabled = 0;
  std::uint64_t rate_decreases = 0;
  std::uint64_t increases_fast_recovery = 0;
  std::uint64_t increases_additive = 0;
  std::uint64_t increases_hyper = 0;

  void count(CnpDisposition d) {
    switch (d) {
      case CnpDisposition::Apply: break;
      case CnpDisposition::IgnoredUnknownQp: ++cnp_ignored_unknown_qp; break;
      case CnpDisposition::IgnoredCcDisabled: ++cnp_ignored_cc_disabled; break;
    }
  }
  void add(const RpCounters& rp) {
    cnp_received += rp.cnp_received;
    rate_decreases += rp.rate_decreases;
    increases_fast_recovery += rp.increases_fast_recovery;
    increases_additive += rp.increases_additive;
    increases_hyper += rp.increases_hyper;
  }
  void add(const NpCounters& np) { cnp_sent += np.cnp_sent; }
};

// One QP's rate state for export and traces.
struct QpRateSnapshot {
  std::uint32_t qpn = 0;
  double rc_bps = 0;
  double rt_bps = 0;
  double alpha = 0;
  bool cc_active = false;
};

std::string to_string(CnpDisposition d);

}  // namespace roce::cc
