#include "apps/inspect/rate_timeline.hpp"

#include <algorithm>

namespace roce::inspect {

void RateTimeline::add(std::int64_t t_ns, std::uint64_t bytes) {
  total_ += bytes;
  std::int64_t i = std::max<std::int64_t>(t_ns, 0) / width_;
  while (i >= static_cast<std::int64_t>(kMaxBuckets)) {
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      const std::uint64_t v = buckets_[k];
      buckets_[k] = 0;
      buckets_[k / 2] += v;
    }
    buckets_.resize((buckets_.size() + 1) / 2);
    width_ *= 2;
    i = std::max<std::int64_t>(t_ns, 0) / width_;
  }
  if (static_cast<std::size_t>(i) >= buckets_.size()) buckets_.resize(static_cast<std::size_t>(i) + 1);
  buckets_[static_cast<std::size_t>(i)] += bytes;
}

double RateTimeline::bytes_between(std::int64_t from_ns, std::int64_t to_ns) const {
  double sum = 0;
  for (std::size_t k = 0; k < buckets_.size(); ++k) {
    const std::int64_t lo = static_cast<std::int64_t>(k) * width_, hi = lo + width_;
    const std::int64_t a = std::max(lo, from_ns), b = std::min(hi, to_ns);
    if (b > a) sum += static_cast<double>(buckets_[k]) * static_cast<double>(b - a) / static_cast<double>(width_);
  }
  return sum;
}

std::int64_t nice_interval_ns(std::int64_t duration_ns, int count) {
  const std::int64_t want = std::max<std::int64_t>(duration_ns / std::max(count, 1), 1);
  std::int64_t p = 1;
  while (true) {
    for (const std::int64_t m : {1, 2, 5})
      if (m * p >= want) return m * p;
    p *= 10;
  }
}

}  // namespace roce::inspect
