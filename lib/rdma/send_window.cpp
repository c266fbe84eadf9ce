#include "lib/rdma/send_window.hpp"

#include <algorithm>
#include <limits>

namespace roce::rdma {

namespace {
// A sample at this fraction of the best delivery rate or more carried the path's rate: the
// smallest round trip among them is what the rate needs in flight.
constexpr double kKneeRate = 0.9;
// A grown cap must leave at least this of the rate (WindowTuning::bdp_cap_free_rate if higher):
// it still resends far more than 4 per lost packet, and at 0.1 % loss saving five resends per
// loss is half a percent of the packets, not worth the tenth of the rate that the 0.9 bound lets
// a trial cost (one thread: a grown cap of 17-24 packets judged free at 0.9 left 0.86 of lossless
// against 0.96 without it; docs/loss.md, part 1, "Session 11"). Judged by goodput, every cap
// must: the bound is then the goodput itself (docs/loss.md, part 1, "Session 13").
constexpr double kGrownFreeRate = 0.95;
}  // namespace

// Inline: after every ACK's progress and RTT sample (docs/perf-changes.md section 65).
[[gnu::always_inline]] inline void SendWindow::clamp() {
  cap_clip_ = std::min(cap_clip_, static_total());
  clamp_below(effective_cap());
}

[[gnu::always_inline]] inline void SendWindow::clamp_below(double cap) {
  // At least one packet in flight on the whole path: a share below one packet is for many QPs
  // through one small queue, never for a QP alone, which would be paced at srtt / share (a
  // software path's srtt after a starved poller is milliseconds; 16 times that per packet stalls it).
  const double lo = std::max(t_.min_packets * sharers_, 1.0);
  cwnd_ = std::clamp(cwnd_, lo, std::max(cap, lo));
}

// One packet's growth: slow start below ssthresh (shared between the QPs of the path), then
// increase_per_rtt spread over a window's packets.
[[gnu::always_inline]] inline void SendWindow::grow_one() {
  cwnd_ += cwnd_ < ssthresh_ ? 1.0 / sharers_ : t_.increase_per_rtt / std::max(cwnd_, 1.0);
}

void SendWindow::start(const WindowTuning& t, double static_cap, bool ecn_feedback, bool selective) {
  t_ = t;
  selective_ = selective;
  // Congestion only: selective repeat QPs always (a random loss costs them one resend at any
  // window); go-back-N QPs unless the full window (random-loss cuts too) is on.
  congestion_only_ = selective || !t.enabled;
  t_.enabled = t.enabled || (selective ? t.selective_repeat : t.go_back_n_congestion);
  ecn_feedback_ = ecn_feedback;
  static_cap_ = std::max(static_cap, 1.0);
  set_sharers(sharers_);
  cwnd_ = ssthresh_ = cap_clip_ = sample_total_ = static_total();
  per_ns_ = 0;
  sample_growth_ = 1;
  bdp_engaged_ = false;
  bdp_until_ = 0;
  delivered_ = delivered_at_loss_ = loss_interval_ = 0;
  free_cap_ = FreeCap::Unknown;
  uncapped_count_ = uncapped_next_ = 0;
  trial_n_ = std::clamp<std::uint32_t>(t_.bdp_cap_trial_samples, 1, kTrialSamples);
  trial_samples_ = trial_skip_ = trial_backoff_ = trials_free_ = trials_costly_ = trials_unjudged_ = 0;
  growth_ = 1;
  shrunk_from_ = shrunk_ceiling_ = 0;
  shrink_skip_ = shrink_backoff_ = shrinks_ = shrinks_costly_ = free_streak_ = 0;
  goodput_.start(t_.bdp_cap_trial_packets);
  last_ratio_ = bdp_measured_ = 0;
  bdp_on_ = t_.enabled && t_.bdp_cap && !selective;
  min_rtt_ = knee_rtt_ = last_rtt_ = 0;
  recent_count_ = 0;
  max_rate_bps_ = 0;
  next_cut_at_ = next_delay_cut_at_ = congested_until_ = 0;
  congested_ = false;
  lost_ = false;
  queue_high_ = false;
  if (congestion_only_ && t_.enabled) {
    // Engaged from the start, from an initial window in slow start: the first round trips are
    // then measured on a path the QPs have not filled yet, so that a queue shows later as one.
    lost_ = true;
    cwnd_ = std::min(static_total(), t_.initial_packets);
  }
}

bool SendWindow::losses_frequent() const {
  if (t_.bdp_cap_loss_interval <= 0) return bdp_engaged_;
  if (loss_interval_ <= 0) return false;  // no loss yet (asked at every ACK and send turn)
  // The interval still open counts as if it closed now, once it is the longer (TFRC): a clean
  // stretch releases the cap, a lucky one among frequent losses (a few times the average) does not.
  const double open = delivered_ - delivered_at_loss_;
  const double avg = open > loss_interval_ ? loss_interval_ + (open - loss_interval_) / 4 : loss_interval_;
  return loss_interval_ > 0 && avg < t_.bdp_cap_loss_interval;
}

bool SendWindow::bdp_engaged() const {
  if (!bdp_on_) return false;
  return losses_frequent() || free_cap_ == FreeCap::Trial || free_cap_ == FreeCap::Free;
}

void SendWindow::on_loss_free_cap() {
  if (!t_.bdp_cap_when_free || losses_frequent()) return;
  if (free_cap_ == FreeCap::Costly && trial_skip_ > 0) {
    --trial_skip_;
    return;
  }
  if (free_cap_ == FreeCap::Unknown || free_cap_ == FreeCap::Costly) {
    free_cap_ = FreeCap::Trial;
    trial_samples_ = 0;
    goodput_.restart_judged();
  }
}

void SendWindow::on_progress_free_cap(Nanos now, std::uint32_t packets) {
  using Phase = CapGoodput::Phase;
  const bool judged = t_.bdp_cap_when_free && (free_cap_ == FreeCap::Trial || free_cap_ == FreeCap::Free);
  const Phase phase = !bdp_bounded() ? Phase::Uncapped : judged ? Phase::Judged : Phase::Neither;
  goodput_.on_progress(now, packets, phase, std::max(t_.bdp_cap_gap_ceiling, 4 * min_rtt_));
  if (phase != Phase::Judged || !goodput_.decision_due()) return;
  last_ratio_ = goodput_.ratio();
  const double bound = std::max(t_.bdp_cap_free_rate, kGrownFreeRate);
  goodput_.restart_judged();
  decide(last_ratio_ >= bound);
}

void SendWindow::on_sample_free_cap(double rate) {
  // A sample the cap bounded: the QP may have less in flight than without it.
  const bool bounded = bdp_bounded();
  const std::uint32_t n = trial_n_;
  if (!bounded) {
    note_uncapped(rate);
    return;
  }
  if (!t_.bdp_cap_when_free || t_.bdp_cap_judge != BdpJudge::SampleRates ||
      (free_cap_ != FreeCap::Trial && free_cap_ != FreeCap::Free))
    return;
  trial_[trial_samples_] = rate;
  if (++trial_samples_ < n) return;
  trial_samples_ = 0;
  // The reference: the latest n samples without the cap. Fewer (a first loss that came within
  // the QP's first n round trips): no verdict. Those are the QP's start-up samples, taken while
  // the process and its buffers warmed up: on the one-thread rig 33-46 Gbit/s, where every later
  // reference read 45-82. Judged against them, the first trial at 0.1 % loss was free in every run,
  // and since the reference cannot refill while the cap holds, one run in three kept the cap on
  // that verdict for good (docs/loss.md, part 1, "Session 20 (gbn20)"). Nor costly: judged on a
  // reference still filling, every first trial on an emulated 10 Gbit/s link was (session 10),
  // and a costly verdict grows the cap and backs off. So the cap lets go as if never tried, and
  // the next rare loss, with the ring full, tries it again.
  if (uncapped_count_ < n) {
    ++trials_unjudged_;
    last_ratio_ = 0;
    free_cap_ = FreeCap::Unknown;
    return;
  }
  const auto median = [](double* v, std::uint32_t k) {
    std::nth_element(v, v + k / 2, v + k);
    return v[k / 2];
  };
  double reference[kTrialSamples];
  std::copy_n(uncapped_, n, reference);
  const double bound = growth_ > 1 ? std::max(t_.bdp_cap_free_rate, kGrownFreeRate) : t_.bdp_cap_free_rate;
  const double reference_rate = median(reference, n);
  last_ratio_ = reference_rate > 0 ? median(trial_, n) / reference_rate : 0;
  decide(last_ratio_ >= bound);
}

void SendWindow::decide(bool free) {
  if (free) {
    if (free_cap_ == FreeCap::Trial) ++trials_free_;
    // The backoff stays: a free verdict by chance (a noisy median) is followed by a costly one
    // at the next decision, and the trials after it should not come at every loss again.
    free_cap_ = FreeCap::Free;
    on_free_verdict();
  } else if (shrunk_from_ > 0 || (free_cap_ == FreeCap::Free && growth_ < shrunk_ceiling_)) {
    // A smaller cap that costs rate, while being tried or after it was kept: back up one step
    // (at most to the cap it shrank from, which was free), still held; the next try down waits.
    // Letting go here would leave the static cap in flight until the next rare loss, and that
    // loss would pay all of it, as before the shrink.
    growth_ = shrunk_from_ > 0 ? shrunk_from_ : std::min(growth_ * std::max(t_.bdp_cap_growth, 1.001), shrunk_ceiling_);
    shrunk_from_ = 0;
    free_streak_ = 0;
    free_cap_ = FreeCap::Free;
    ++shrinks_costly_;
    shrink_backoff_ = std::min<std::uint32_t>(std::max<std::uint32_t>(2 * shrink_backoff_, 1), 64);
    shrink_skip_ = shrink_backoff_;
  } else {
    ++trials_costly_;
    free_streak_ = 0;
    shrunk_ceiling_ = 0;
    free_cap_ = FreeCap::Costly;
    // Grow before backing off: the next rare loss tries the larger cap (the sample that sets
    // bdp_grown() reads applies it). Only at the largest cap do trials wait for more losses. Not the
    // cap while losses are frequent: there it pays whatever it costs (docs/loss.md, session 8).
    const double grown = std::min(growth_ * t_.bdp_cap_growth, std::max(t_.bdp_cap_max_growth, 1.0));
    if (grown > growth_ * 1.001 && bdp_grown() < static_cap_) {
      growth_ = grown;
      trial_skip_ = 0;
    } else {
      trial_skip_ = trial_backoff_;
      trial_backoff_ = std::min<std::uint32_t>(std::max<std::uint32_t>(2 * trial_backoff_, 1), 64);
    }
  }
}

void SendWindow::on_free_verdict() {
  // Decisions are medians of a few noisy samples: a cap moves down only after two free ones in
  // a row at the cap it has, and a smaller one is kept only after two more (a single lucky
  // verdict, then a costly one, would let the cap go and start the growth over).
  constexpr std::uint32_t kSteady = 2;
  if (++free_streak_ < kSteady) return;
  if (shrunk_from_ > 0) {
    ++shrinks_;  // the smaller cap carried the rate: it stays
    shrunk_ceiling_ = std::max(shrunk_ceiling_, shrunk_from_);
    shrunk_from_ = 0;
  }
  if (!t_.bdp_cap_shrink || growth_ <= 1) return;
  if (shrink_skip_ > 0) {
    --shrink_skip_;
    return;
  }
  // The next decisions run at one growth step less (the sample that bdp_grown() reads applies it).
  shrunk_from_ = growth_;
  growth_ = std::max(growth_ / std::max(t_.bdp_cap_growth, 1.001), 1.0);
  free_streak_ = 0;
}

std::uint32_t SendWindow::limit() const {
  if (!t_.enabled) return std::numeric_limits<std::uint32_t>::max();
  const double w = std::min(lost_ ? share() : static_cap_, bdp_share());
  return std::max<std::uint32_t>(1, static_cast<std::uint32_t>(w));
}

std::uint32_t SendWindow::ack_spacing() const {
  if (!t_.enabled) return std::numeric_limits<std::uint32_t>::max();
  // While the BDP cap holds a go-back-N QP back: twice per window too.
  const bool bdp_bound = bdp_share() < (lost_ ? share() : static_cap_);
  if (!bdp_bound && (!lost_ || congested_ || congestion_only_)) return std::numeric_limits<std::uint32_t>::max();
  return std::max<std::uint32_t>(1, limit() / 2);
}

// The branch hints and the out-of-line engaged_cap / grow_under_cap keep the path every ACK
// takes (a congestion-only window, go-back-N's and selective repeat's default, or any window
// before its first loss) in a few adjacent cache lines (docs/perf-changes.md section 88).
void SendWindow::on_progress(Nanos now, std::uint32_t packets) {
  if (!t_.enabled || packets == 0) [[unlikely]]
    return;
  delivered_ += packets;
  expire(now);
  if (bdp_on_ && t_.bdp_cap_judge == BdpJudge::Goodput) [[unlikely]]
    on_progress_free_cap(now, packets);
  if (queue_high_ && congested_) [[unlikely]]
    return;  // a queue above the target: hold
  // Cut by congestion only (go-back-N's default window) or before any loss, the cap is the
  // static total throughout: the same product once for the loop and the clamp, not at every
  // test (docs/perf-changes.md section 73).
  if (congestion_only_ || !lost_) [[likely]] {
    const double total = static_total();
    for (std::uint32_t i = 0; i < packets && cwnd_ < total; ++i)
      grow_one();
    cap_clip_ = std::min(cap_clip_, total);
    clamp_below(total);
    return;
  }
  grow_under_cap(packets);
}

void SendWindow::grow_under_cap(std::uint32_t packets) {
  for (std::uint32_t i = 0; i < packets && cwnd_ < effective_cap(); ++i)
    grow_one();
  clamp();
}

double SendWindow::engaged_cap() const { return congested_ ? cap() : need(); }

bool SendWindow::on_loss(Nanos now, Nanos rtt, bool timeout) {
  if (!t_.enabled) return false;
  expire(now);
  // Congestion: the round trip shows a standing queue (the latest samples all above the target),
  // or nothing is known of the path yet (the first window lost). Not the smoothed round trip:
  // one descheduled poller's sample of milliseconds keeps it above the target for many round
  // trips, and every random loss in them would look like a queue.
  const bool congestion = timeout || min_rtt_ == 0 || queue_high_;
  if (bdp_on_) {
    // The first interval is what was delivered before the first loss; TFRC weights the latest a quarter.
    const double interval = delivered_ - delivered_at_loss_;
    loss_interval_ = loss_interval_ == 0 ? std::max(interval, 1.0) : loss_interval_ + (interval - loss_interval_) / 4;
    delivered_at_loss_ = delivered_;
    goodput_.on_loss(static_cap_);
    bdp_engaged_ = true;
    bdp_until_ = std::max(bdp_until_, now + static_cast<Nanos>(t_.bdp_cap_memory_rtts) * std::max<Nanos>(rtt, 1));
    on_loss_free_cap();
  }
  // Selective repeat resends only what was lost: a random loss costs the same at any window.
  if (congestion_only_ && !congestion) return false;
  if (!lost_) cwnd_ = std::min(cwnd_, static_total());
  lost_ = true;
  if (congestion) {
    congested_ = true;
    congested_until_ = std::max(congested_until_, now + static_cast<Nanos>(t_.congestion_memory_rtts) * std::max<Nanos>(rtt, 1));
  }
  if (timeout) {
    ssthresh_ = std::max(cwnd_ * t_.decrease, t_.min_packets * sharers_);
    cwnd_ = std::min(ssthresh_, static_cast<double>(sharers_));
    clamp();
    return true;
  }
  // The QPs sharing the window lose together when a queue overflows: one cut per round trip.
  if (now < next_cut_at_) return false;
  next_cut_at_ = now + rtt;
  // A random loss keeps what the rate needs in flight: less would cost goodput on every loss
  // and save nothing, since a lost packet's resend is what was sent behind it anyway.
  ssthresh_ = congestion ? std::max(cwnd_ * t_.decrease, t_.min_packets * sharers_)
                         : std::max({cwnd_ * t_.decrease, std::min(cwnd_ * t_.random_decrease, need()),
                                     std::min(cwnd_, t_.random_loss_floor)});
  cwnd_ = ssthresh_;
  clamp();
  return true;
}

// Inline, as clamp(): each RTT sample asks them once.
[[gnu::always_inline]] inline Nanos SendWindow::queue_target() const {
  // A queue of a few packets is no congestion on a slow link (one 4 KiB frame is 33 us at
  // 1 Gbit/s): the target is at least twice the base RTT of queueing (tests/lib/rdma/
  // overrun_test.cpp: 16 QPs at 1 Gbit/s reach 0.80 of the link at once, 0.96 at twice).
  if (t_.queue_delay_target <= 0 || min_rtt_ == 0) return std::numeric_limits<Nanos>::max();
  return min_rtt_ + std::max(t_.queue_delay_target, 2 * min_rtt_);
}

[[gnu::always_inline]] inline void SendWindow::judge_queue(Nanos target) {
  const std::uint32_t n = std::min({recent_count_, kRecent, std::max<std::uint32_t>(t_.queue_samples, 1)});
  bool high = n > 0;
  for (std::uint32_t i = 1; i <= n && high; ++i) high = recent_[(recent_count_ - i) % kRecent] > target;
  queue_high_ = high;
}

void SendWindow::on_rtt_sample(Nanos now, Nanos rtt, std::uint32_t delivered_packets, Nanos interval, std::uint32_t pmtu) {
  if (rtt <= 0) return;
  expire(now);
  // One QP's rate; its share of the path's, so times the sharers.
  const double rate =
      static_cast<double>(delivered_packets) * pmtu * 8 * 1e9 / static_cast<double>(std::max(interval, rtt)) * sharers_;
  // The BDP cap's trial judges this sample by the caps of the previous one: first, while min_rtt_,
  // knee_rtt_ and last_rtt_ (which the caps are computed from) are still that sample's.
  if (bdp_on_) {
    // Before the path's first loss (no loss interval, no recent loss, no trial) bdp_engaged() is
    // false and the cap bounds nothing: the sample only goes into the uncapped ring, without
    // on_sample_free_cap's tests (every ACK at queue depth 1 is a sample).
    if (loss_interval_ <= 0 && !bdp_engaged_ && free_cap_ == FreeCap::Unknown) [[likely]]
      note_uncapped(rate);
    else
      on_sample_free_cap(rate);
  }
  last_rtt_ = rtt;
  recent_[recent_count_++ % kRecent] = rtt;
  if (min_rtt_ == 0 || rtt < min_rtt_) min_rtt_ = rtt;
  max_rate_bps_ = std::max(rate, max_rate_bps_ * 0.99);  // the path's rate, not one sample's
  // The knee may drift up slowly, so that it follows a path whose round trip grew.
  if (rate >= kKneeRate * max_rate_bps_)
    knee_rtt_ = knee_rtt_ == 0 ? rtt : std::min(rtt, knee_rtt_ + static_cast<Nanos>(static_cast<std::uint64_t>(knee_rtt_) / 256) + 1);
  const double bps = std::max(max_rate_bps_, t_.line_rate_bps);
  per_ns_ = bps * 1e-9 * 0.125 / pmtu;  // packets per nanosecond (x 0.125: / 8 exactly, one division less)
  bdp_measured_ = per_ns_ * static_cast<double>(min_rtt_);
  sample_total_ = cap_clip_ = static_total();
  sample_growth_ = growth_;
  const Nanos target = queue_target();
  judge_queue(target);
  // The delay cut only after a congestion loss: a software path's round trip varies by far more
  // than the target with the scheduling of its threads, and a lossless QP must send as before.
  if (t_.enabled && queue_high_ && congested_ && now >= next_delay_cut_at_) [[unlikely]] {
    next_delay_cut_at_ = now + rtt;
    const double excess = static_cast<double>(rtt - target) / static_cast<double>(rtt);
    cwnd_ *= 1 - (1 - t_.decrease) * excess;
    ssthresh_ = std::max(cwnd_, t_.min_packets * sharers_);
  }
  // clamp(), whose min of cap_clip_ with the static total is the total just stored in both.
  clamp_below(!lost_ || congestion_only_ ? sample_total_ : engaged_cap());
}

// The caps, each the expression the sample used to compute, in the same order of operations.
double SendWindow::cap_at_sample() const {
  if (min_rtt_ == 0) return sample_total_;
  return std::clamp(t_.bdp_headroom * per_ns_ * static_cast<double>(min_rtt_), static_cast<double>(t_.bdp_floor_packets),
                    sample_total_);
}

double SendWindow::need() const {
  if (min_rtt_ == 0) return sample_total_;
  return std::clamp(t_.need_headroom * per_ns_ * static_cast<double>(knee_rtt_ ? knee_rtt_ : last_rtt_),
                    std::min(t_.random_loss_floor, sample_total_), sample_total_);
}

double SendWindow::bdp_base() const {
  if (min_rtt_ == 0) return 0;
  return std::clamp(t_.bdp_cap_headroom * per_ns_ * static_cast<double>(min_rtt_), std::min(t_.bdp_cap_floor, sample_total_),
                    sample_total_);
}

double SendWindow::bdp_grown() const {
  if (min_rtt_ == 0) return 0;
  return std::clamp(sample_growth_ * t_.bdp_cap_headroom * per_ns_ * static_cast<double>(min_rtt_),
                    std::min(t_.bdp_cap_floor, sample_total_), sample_total_);
}

Nanos SendWindow::standing_rtt() const {
  const std::uint32_t n = std::min({recent_count_, kRecent, std::max<std::uint32_t>(t_.queue_samples, 1)});
  if (n == 0) return 0;
  Nanos m = std::numeric_limits<Nanos>::max();
  for (std::uint32_t i = 1; i <= n; ++i) m = std::min(m, recent_[(recent_count_ - i) % kRecent]);
  return m;
}

}  // namespace roce::rdma
