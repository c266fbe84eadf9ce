// Bytes over time in a bounded number of buckets: the bucket width starts at 1 us and doubles
// (merging neighbours) whenever the capture outgrows kMaxBuckets, so a flow of any duration
// costs the same memory and the goodput of any interval can be read back.
#pragma once

#include <cstdint>
#include <vector>

namespace roce::inspect {

class RateTimeline {
 public:
  static constexpr std::size_t kMaxBuckets = 2048;

  // `t_ns` counts from the start of the capture; earlier times land in the first bucket.
  void add(std::int64_t t_ns, std::uint64_t bytes);

  std::int64_t bucket_ns() const { return width_; }
  // Bytes in [from, to), proportionally for buckets the interval covers in part.
  double bytes_between(std::int64_t from_ns, std::int64_t to_ns) const;
  std::uint64_t total() const { return total_; }

 private:
  std::int64_t width_ = 1000;
  std::vector<std::uint64_t> buckets_;
  std::uint64_t total_ = 0;
};

// `count` intervals of a 1-2-5 width (in ns) that cover [0, duration_ns].
std::int64_t nice_interval_ns(std::int64_t duration_ns, int count);

}  // namespace roce::inspect
