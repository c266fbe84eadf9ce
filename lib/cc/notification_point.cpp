#include "lib/cc/notification_point.hpp"

namespace roce::cc {

bool NotificationPoint::send(Nanos now) {
  last_cnp_ = now;
  sent_any_ = true;
  pending_ = false;
  deadline_ = kNever;
  ++counters_.cnp_sent;
  return true;
}

bool NotificationPoint::on_ce_packet(Nanos now) {
  ++counters_.ce_packets;
  switch (params_.mode) {
    case NpMode::PerAck: return send(now);
    case NpMode::Paper:
      // A packet arriving when its window has closed is served at once, together with any
      // pending mark, even if the caller has not run advance() yet.
      if (window_open(now)) return send(now);
      ++counters_.ce_absorbed;
      pending_ = true;
      deadline_ = last_cnp_ + params_.interval;
      return false;
    case NpMode::Suppress:
      if (window_open(now)) return send(now);
      ++counters_.ce_suppressed;
      return false;
    case NpMode::Sample:
      if (pending_) {
        ++counters_.ce_absorbed;
        return false;
      }
      pending_ = true;
      deadline_ = params_.interval > 0 ? (now / params_.interval + 1) * params_.interval : now;
      return false;
  }
  return false;
}

bool NotificationPoint::advance(Nanos now) {
  if (!pending_ || deadline_ > now) return false;
  ++counters_.cnp_deferred;
  return send(now);
}

std::optional<std::string> check(const NpParams& p) {
  if (p.interval <= 0 && p.mode != NpMode::PerAck) return "CNP interval N must be positive";
  return std::nullopt;
}

std::string to_string(NpMode m) {
  switch (m) {
    case NpMode::Paper: return "paper";
    case NpMode::Suppress: return "suppress";
    case NpMode::Sample: return "sample";
    case NpMode::PerAck: return "per_ack";
  }
  return "unknown";
}

std::optional<NpMode> np_mode_from_string(std::string_view s) {
  for (NpMode m : {NpMode::Paper, NpMode::Suppress, NpMode::Sample, NpMode::PerAck})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

}  // namespace roce::cc
