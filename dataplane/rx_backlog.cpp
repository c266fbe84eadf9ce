#include "dataplane/rx_backlog.hpp"

#include <rte_ethdev.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "dataplane/overrun.hpp"

namespace roce::dp {

std::optional<const char*> check(const BacklogConfig& c) {
  if (c.kmax_frames < c.kmin_frames) return "the backlog's Kmax must not be below its Kmin";
  if (!(c.pmax > 0 && c.pmax <= 1)) return "the backlog's Pmax must be in (0, 1]";
  return std::nullopt;
}

Result<BacklogConfig> parse_backlog_marks(const std::string& s) {
  BacklogConfig c;
  if (s == "off") return c;
  c.mark = true;
  if (s == "on") return c;
  unsigned kmin = 0, kmax = 0;
  double pmax = 0;
  int used = 0;
  if (std::sscanf(s.c_str(), "%u,%u,%lf%n", &kmin, &kmax, &pmax, &used) != 3 || static_cast<std::size_t>(used) != s.size())
    return make_error(EINVAL, "--backlog-marks takes off, on or KMIN,KMAX,PMAX (frames, frames, 0..1), not '" + s + "'");
  c.kmin_frames = kmin;
  c.kmax_frames = kmax;
  c.pmax = pmax;
  if (const auto why = check(c)) return make_error(EINVAL, std::string("--backlog-marks: ") + *why);
  return c;
}

std::uint32_t BacklogMarker::step_at(std::uint32_t depth) const {
  if (depth <= c_.kmin_frames) return 0;
  if (depth > c_.kmax_frames) return kOne;
  const double p = c_.pmax * static_cast<double>(depth - c_.kmin_frames) /
                   static_cast<double>(std::max(c_.kmax_frames - c_.kmin_frames, 1u));
  return static_cast<std::uint32_t>(p * kOne);
}

std::uint32_t BacklogMarker::on_burst(unsigned n, unsigned want, std::optional<std::uint32_t> left) {
  const bool full = want != 0 && n == want;
  std::uint32_t depth = 0;
  if (left) {
    depth = n + (full ? *left : 0);
  } else {
    depth = run_ > UINT32_MAX - n ? UINT32_MAX : run_ + n;  // a receiver at its limit for hours
    run_ = full ? depth : 0;
  }
  step_ = step_at(depth);
  counters_.max_depth = std::max<std::uint64_t>(counters_.max_depth, depth);
  if (step_ != 0) ++counters_.bursts_above_kmin;
  return depth;
}

void BacklogMarking::on_burst(rte_mbuf* const* rx, unsigned n, unsigned want) {
  if (!enabled_) return;
  const bool full = want != 0 && n == want;
  std::optional<std::uint32_t> left;
  if (count_) left = full ? count_() : std::optional<std::uint32_t>(0);
  if (count_ && !left) return;  // the count failed this time: no depth, no marks
  marker_.on_burst(n, want, left);
  if (!marker_.marking()) return;
  for (unsigned i = 0; i < n; ++i)
    if (const auto at = markable(rx[i]); at && marker_.take_mark()) set_ce(rx[i], *at);
}

RxQueueCount rx_queue_count_of(std::uint16_t port, std::uint16_t queue) {
  if (rte_eth_rx_queue_count(port, queue) < 0) return {};
  return [port, queue]() -> std::optional<std::uint32_t> {
    const int n = rte_eth_rx_queue_count(port, queue);
    return n < 0 ? std::nullopt : std::optional<std::uint32_t>(static_cast<std::uint32_t>(n));
  };
}

}  // namespace roce::dp
