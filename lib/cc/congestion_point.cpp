#include "lib/cc/congestion_point.hpp"

#include <algorithm>
#include <cmath>

namespace roce::cc {

double mark_probability(const RedParams& red, std::uint64_t q) {
  if (q <= red.kmin_bytes) return 0.0;
  if (q > red.kmax_bytes) return 1.0;
  return red.pmax * static_cast<double>(q - red.kmin_bytes) / static_cast<double>(red.kmax_bytes - red.kmin_bytes);
}

std::optional<std::string> check(const CpParams& p) {
  if (p.red.kmax_bytes <= p.red.kmin_bytes) return "Kmax must be above Kmin";
  if (!(p.red.pmax >= 0 && p.red.pmax <= 1)) return "Pmax must be in [0, 1]";
  if (p.capacity_packets == 0) return "the queue needs at least one packet slot";
  if (!(p.line_rate_bps > 0)) return "line rate must be positive";
  return std::nullopt;
}

CongestionPointCore::CongestionPointCore(const CpParams& p)
    : params_(p), ps_per_byte_(8e12 / p.line_rate_bps), rng_(p.seed) {}

EnqueueResult CongestionPointCore::admit(std::uint32_t wire_bytes, bool slot_free) {
  if (occupancy_ + wire_bytes > params_.capacity_bytes) {
    ++counters_.dropped_buffer_full;
    return EnqueueResult::DroppedBufferFull;
  }
  if (!slot_free) {
    ++counters_.dropped_no_slot;
    return EnqueueResult::DroppedNoSlot;
  }
  occupancy_ += wire_bytes;
  counters_.max_occupancy_bytes = std::max(counters_.max_occupancy_bytes, occupancy_);
  ++counters_.enqueued;
  return EnqueueResult::Queued;
}

std::int64_t CongestionPointCore::start_ps(Nanos enq_ns) const { return std::max(busy_until_ps_, enq_ns * 1000); }

CongestionPointCore::Decision CongestionPointCore::depart(Nanos enq_ns, std::uint32_t wire_bytes, proto::Ecn ecn) {
  Decision d{ecn, false, 0, start_ps(enq_ns), 0};
  occupancy_ -= wire_bytes;
  d.queue_bytes_after = occupancy_;
  ++counters_.dequeued;
  if (ecn == proto::Ecn::Ce) ++counters_.arrived_ce;
  if (params_.ecn_marking) {
    const double p = mark_probability(params_.red, occupancy_);
    if (p > 0 && ecn_capable(ecn) && rng_.uniform() < p) {
      d.ecn = proto::Ecn::Ce;
      d.marked = true;
      ++counters_.marked_ce;
    } else if (p > 0 && ecn == proto::Ecn::NotEct) {
      ++counters_.not_ect_above_kmin;
    }
  }
  d.end_ps = d.start_ps + std::llround(wire_bytes * ps_per_byte_);
  busy_until_ps_ = d.end_ps;
  return d;
}

std::string to_string(EnqueueResult r) {
  switch (r) {
    case EnqueueResult::Queued: return "queued";
    case EnqueueResult::DroppedBufferFull: return "dropped_buffer_full";
    case EnqueueResult::DroppedNoSlot: return "dropped_no_slot";
  }
  return "unknown";
}

}  // namespace roce::cc
