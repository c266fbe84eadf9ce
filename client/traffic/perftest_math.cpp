#include "client/traffic/perftest_math.hpp"

#include <algorithm>
#include <cmath>

namespace roce::client {

namespace {

__extension__ using Wide = __int128;

constexpr double kNsPerUs = 1000.0;   // perftest's cycles_to_units: cycles per microsecond
constexpr int kLatencyTail = 2;       // LAT_MEASURE_TAIL: the largest samples left out

struct Point {
  std::int64_t x;  // operation index (posts) or index + 1 (completions)
  Nanos y;
};

// a->b turns at or above b->c: slope(a, b) <= slope(b, c), so b is not on the upper hull.
bool not_upper(const Point& a, const Point& b, const Point& c) {
  return Wide{b.y - a.y} * (c.x - b.x) <= Wide{c.y - b.y} * (b.x - a.x);
}

// slope(p, q) < slope(r, q), for p and r left of q.
bool lower_slope(const Point& p, const Point& r, const Point& q) {
  return Wide{q.y - p.y} * (q.x - r.x) < Wide{q.y - r.y} * (q.x - p.x);
}

}  // namespace

Nanos perftest_peak_interval(std::span<const Nanos> posted, std::span<const Nanos> completed, std::uint32_t cq_mod,
                             std::uint32_t post_list) {
  const std::int64_t n = static_cast<std::int64_t>(std::min(posted.size(), completed.size()));
  if (n == 0) return 0;
  cq_mod = std::max<std::uint32_t>(cq_mod, 1);
  post_list = std::max<std::uint32_t>(post_list, 1);
  // The upper hull of the post points (i, posted[i]) for the i that start a post list, grown as
  // the completions j are visited in order (only i <= j counts). The slope from a post point to
  // the completion point (j + 1, completed[j]) is the time per operation of i..j; the smallest
  // slope is at the tangent from that point to the hull, found by binary search (the slopes
  // along a concave chain seen from a point to its right fall, then rise).
  std::vector<Point> hull;
  hull.reserve(static_cast<std::size_t>(n / post_list + 1));
  std::int64_t next_post = 0;
  Wide best_num = -1, best_den = 1;
  auto visit = [&](std::int64_t j) {
    for (; next_post <= j; next_post += post_list) {
      const Point p{next_post, posted[static_cast<std::size_t>(next_post)]};
      while (hull.size() >= 2 && not_upper(hull[hull.size() - 2], hull.back(), p)) hull.pop_back();
      hull.push_back(p);
    }
    const Point q{j + 1, completed[static_cast<std::size_t>(j)]};
    std::size_t lo = 0, hi = hull.size() - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (lower_slope(hull[mid + 1], hull[mid], q)) lo = mid + 1;
      else hi = mid;
    }
    const Wide num = Wide{q.y - hull[lo].y}, den = q.x - hull[lo].x;
    if (best_num < 0 || num * best_den < best_num * den) {
      best_num = num;
      best_den = den;
    }
  };
  for (std::int64_t j = cq_mod - 1; j < n; j += cq_mod) visit(j);
  if (n % cq_mod != 0) visit(n - 1);
  // perftest divides cycles by the operation count in integers; the floor of the smallest
  // quotient is the smallest of the floors. A zero (a completion stamped with its post's time)
  // would be an infinite rate: one tick is the least time an operation can take here.
  return std::max<Nanos>(static_cast<Nanos>(best_num / best_den), 1);
}

BwFigures perftest_bw(const BwInput& in) {
  BwFigures f;
  f.size = in.size;
  f.iterations = in.ops;
  f.elapsed = in.last > in.first ? in.last - in.first : 0;
  if (f.elapsed > 0) {
    const double secs = static_cast<double>(f.elapsed) / 1e9;
    f.bw_avg_bps = static_cast<double>(in.size) * static_cast<double>(in.ops) / secs;
    f.msg_rate_mpps = static_cast<double>(in.ops) / secs / 1e6;
  }
  if (in.times && !in.times->posted.empty()) {
    const Nanos per_op = perftest_peak_interval(in.times->posted, in.times->completed, in.cq_mod, in.post_list);
    if (per_op > 0) f.bw_peak_bps = static_cast<double>(in.size) * 1e9 / static_cast<double>(per_op);
  }
  return f;
}

LatFigures perftest_latency(std::uint32_t size, std::uint64_t iters, std::vector<Nanos> deltas, int rtt_factor) {
  LatFigures f;
  f.size = size;
  f.iterations = iters;
  if (deltas.empty()) return f;
  std::sort(deltas.begin(), deltas.end());
  // perftest runs at least 5 iterations (4 intervals); fewer here keep at least one sample.
  const std::size_t tail = std::min<std::size_t>(kLatencyTail, deltas.size() - 1);
  const std::size_t count = std::max<std::size_t>(deltas.size() - tail, 1);
  const double quotient = kNsPerUs * rtt_factor;
  auto us = [&](std::size_t i) { return static_cast<double>(deltas[std::min(i, deltas.size() - 1)]) / quotient; };
  const Nanos median = (count - 1) % 2 ? (deltas[count / 2] + deltas[count / 2 - 1]) / 2 : deltas[count / 2];
  double sum = 0;
  for (std::size_t i = 0; i < count; ++i) sum += us(i);
  const double average = sum / static_cast<double>(count);
  double squares = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const int diff = static_cast<int>(average - us(i));
    squares += diff * diff;
  }
  f.t_min_us = us(0);
  f.t_max_us = us(count);
  f.t_typical_us = static_cast<double>(median) / quotient;
  f.t_avg_us = average;
  f.t_stdev_us = std::sqrt(squares / static_cast<double>(count));
  f.p99_us = us(static_cast<std::size_t>(std::ceil(static_cast<double>(count) * 0.99)));
  f.p999_us = us(static_cast<std::size_t>(std::ceil(static_cast<double>(count) * 0.999)));
  return f;
}

LatDurationFigures perftest_latency_duration(std::uint32_t size, std::uint64_t iters, Nanos elapsed, int rtt_factor) {
  LatDurationFigures f;
  f.size = size;
  f.iterations = iters;
  if (iters == 0 || elapsed <= 0) return f;
  const double us = static_cast<double>(elapsed) / kNsPerUs;
  f.t_avg_us = us / rtt_factor / static_cast<double>(iters);
  f.tps = static_cast<double>(iters) / (us / 1e6);
  return f;
}

}  // namespace roce::client
