#include "lib/cc/pacer.hpp"

#include <algorithm>
#include <cmath>

namespace roce::cc {

namespace {

std::int64_t whole_rate(double bps) {
  if (!(bps > 0)) return 0;
  return std::llround(std::min(bps, 1e15));
}

std::int64_t packet_nanobits(std::uint32_t wire_bytes, std::int64_t per_byte) {
  return std::int64_t{std::min(wire_bytes, Pacer::kMaxPacketBytes)} * per_byte;
}

}  // namespace

Pacer::Pacer(double rate_bps, std::uint32_t burst_bytes, Nanos now)
    : rate_(whole_rate(rate_bps)), burst_(std::clamp(burst_bytes, 1u, kMaxBurstBytes)), last_(now) {
  cap_ = std::int64_t{burst_} * kNanobitsPerByte + rate_;
  credit_ = std::int64_t{burst_} * kNanobitsPerByte;
}

std::int64_t Pacer::credit_at(Nanos now) const {
  if (now <= last_ || rate_ == 0 || credit_ >= cap_) return credit_;
  const std::int64_t room = cap_ - credit_;
  const Nanos dt = now - last_;
  // Compare before multiplying: dt * rate_ may not fit when the QP was idle for long.
  if (dt >= (room + rate_ - 1) / rate_) return cap_;
  return credit_ + dt * rate_;
}

std::int64_t Pacer::need(std::uint32_t wire_bytes) const {
  return packet_nanobits(std::min(wire_bytes, burst_), kNanobitsPerByte);
}

void Pacer::set_rate(Nanos now, double rate_bps) {
  credit_ = credit_at(now);
  last_ = std::max(last_, now);
  rate_ = whole_rate(rate_bps);
  cap_ = std::int64_t{burst_} * kNanobitsPerByte + rate_;
  credit_ = std::min(credit_, cap_);
}

bool Pacer::may_send(Nanos now, std::uint32_t wire_bytes) const { return credit_at(now) >= need(wire_bytes); }

Nanos Pacer::earliest_departure(std::uint32_t wire_bytes) const {
  const std::int64_t missing = need(wire_bytes) - credit_;
  if (missing <= 0) return last_;
  if (rate_ == 0) return kNever;
  return last_ + (missing + rate_ - 1) / rate_;
}

void Pacer::on_sent(Nanos now, std::uint32_t wire_bytes) {
  credit_ = credit_at(now) - packet_nanobits(wire_bytes, kNanobitsPerByte);
  last_ = std::max(last_, now);
}

}  // namespace roce::cc
