// The go-back-N send window: how many packets an RC QP may have in flight. Go-back-N resends
// what was sent behind a lost packet, so what one loss costs is what is in flight beyond the
// path's need; the window is kept near that need. One window is shared by the QPs of an engine
// toward one peer address (the path they share, and so its bottleneck); each QP with send work
// gets an equal share. A QP alone on its path has the window to itself.
//
// Two kinds of loss, told apart by the round trip (docs/loss.md):
// - Congestion (a tail-drop queue overflowing, a receiver overrun): the RTT samples before the
//   loss rose above min RTT + max(queue_delay_target, 2 min RTT), or the local ACK timer fired.
//   The window is cut by `decrease` (to one packet per QP on a timeout) and, for a while after,
//   capped at bdp_headroom x delivered rate x min RTT (IRN's BDP flow control) and cut further
//   while the RTT shows a queue. A share below one packet spaces packets: one every srtt / share
//   (N QPs through a queue that holds fewer than N packets lose packets at any window).
// - Random loss (no queue in sight): cut by `decrease` but never below the path's need: the
//   in-flight that carried the best delivery rate, estimated as need_headroom x the best rate x
//   the smallest round trip seen at (nearly) that rate. A lone packet's round trip is not that:
//   a polling software path carries its best rate only with a burst or two in flight, and a
//   window below that loses goodput to every loss without saving resends. The need also caps the
//   window after the first loss: more in flight only queues, and is resent behind every loss.
// One loss cut per round trip across the sharing QPs (they lose together when a queue
// overflows); the completer counts at most one loss event per window of a QP's data. Progress
// grows the window: slow start up to the window before the last cut, then `increase_per_rtt`
// packets per round trip. Until the path first loses a packet every QP may have the static cap
// (max_inflight_*) in flight, as without a window.
// Pure arithmetic, no clock of its own: the completers feed it RTT samples and events.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lib/rdma/cap_goodput.hpp"
#include "lib/time.hpp"

namespace roce::rdma {

// What decides whether go-back-N's BDP cap is free (WindowTuning::bdp_cap_judge).
enum class BdpJudge : std::uint8_t {
  SampleRates,  // the median rate of the RTT samples the cap bounded, against as many without it
  Goodput,      // packets acknowledged per unit of time while it held, against the stretch without it
};

struct WindowTuning {
  // Off by default: on the software path (perf_suite --only loss) it cut resends per loss but
  // also goodput under random loss (docs/loss.md, Figures).
  bool enabled = false;
  // The window of selective repeat QPs (on with this even when `enabled` is off): against
  // congestion only, since a random loss costs them one resend whatever is in flight. It starts
  // at `initial_packets` in slow start (so that its first round trips are measured before a
  // queue fills), is cut when the standing round trip shows a queue, and has no cap. On by
  // default: it keeps a shallow tail-drop queue to 0.02-0.05 % resent (tests/lib/rdma/
  // overrun_test.cpp) and, judging by the standing round trip, never cut for the software
  // path's random loss (docs/loss.md, "Telling a queue from noise").
  bool selective_repeat = true;
  // The same congestion-only window for go-back-N QPs while `enabled` is off (on by default:
  // 0.24 / 0.05 % resent through the shallow queue with 4 / 16 QPs, against 94 / 92 % without).
  bool go_back_n_congestion = true;
  double initial_packets = 16;
  double min_packets = 1.0 / 16;   // smallest share of one QP; below 1 the QP is paced
  double decrease = 0.5;           // multiplicative cut per loss event
  // Packets per round trip once past the slow-start threshold (the whole path's window).
  double increase_per_rtt = 1.0;
  // Congestion cap = headroom x rate x min RTT.
  double bdp_headroom = 1.5;
  std::uint32_t bdp_floor_packets = 4;  // the congestion cap never goes below this
  // The need = need_headroom x best rate x RTT at that rate (at least random_loss_floor packets
  // on the path): enough in flight for the rate, and for a loss to be followed by a packet that
  // draws the NAK. A random loss never cuts below random_loss_floor either.
  double need_headroom = 1.25;
  double random_loss_floor = 4;
  // A random loss cuts by at least this (to the need when that is lower, never below `decrease`):
  // the cut probes whether the rate holds with less in flight, and the need follows if it does.
  double random_decrease = 0.8;
  double line_rate_bps = 0;        // rate the caps assume besides the measured one; 0: measured only
  // An RTT sample above min RTT + max(this, 2 min RTT) shows a queue: a loss then is congestion.
  // After one, such a sample also cuts the window in proportion to the excess, at most by
  // `decrease` and once per round trip, and holds it until a sample comes back below. Tail drop
  // hits whoever arrives at a full queue, not who filled it; the delay every QP on the
  // bottleneck sees keeps the queue below full for all of them. 0: every loss is random.
  Nanos queue_delay_target = 200 * kMicro;
  // ... when the smallest of the latest `queue_samples` RTT samples is above it: a queue that
  // stands, not one late sample. A software path's round trip jumps by milliseconds when a
  // poller is descheduled, for a sample or two; a tail-drop queue that overflows has held every
  // sample above the target since it filled (docs/loss.md, "Telling a queue from noise").
  std::uint32_t queue_samples = 3;
  // A congestion loss keeps the cap and the delay cut for this many round trips after it.
  std::uint32_t congestion_memory_rtts = 4096;
  // Go-back-N's in-flight cap while losses are frequent (IRN's BDP flow control): bdp_headroom x
  // the best delivery rate x min RTT of the path, never below bdp_cap_floor packets, for each QP.
  // Go-back-N resends what was sent behind a lost packet before its NAK came back: about half
  // of what is in flight, so more in flight than the path needs is resent behind every loss
  // (docs/loss.md, part 1). The floor keeps packets behind a loss to draw its NAK and a burst in
  // flight for a polling software path (whose min RTT is a lone packet's). Only while the window
  // is on (`enabled` or `go_back_n_congestion`); never for selective repeat QPs (a loss costs
  // them one packet at any window).
  // When it holds: with bdp_cap_loss_interval > 0, while the path's loss events come on average
  // less than that many delivered packets apart (TFRC's loss interval: an average over the
  // intervals between loss events, a quarter weight to the latest, and the interval still open
  // when it is longer). On the single-threaded software path the 6 packets in flight that
  // <= 4 resent per lost frame needs cost a quarter of the rate: worth it at 1-5 % random loss
  // (2x goodput at 5 %), not at 0.1 %, where every loss cost 16 resends but the cap cost 0.22
  // of goodput (docs/loss.md, part 1). 0: from any loss until bdp_cap_memory_rtts round trips
  // pass without one (session 7's cap).
  // Issue 21 asks for <= 4 resent per lost frame at 0.1 % too, where loss events come 500-1000
  // packets apart: an interval of 8192 and a floor of 5, sent in thirds (bdp_cap_split), meet it
  // (SmallWindow.HeldCapResendsAtMostFourPerLostFrameAtOnePerMille), but on the suite's one-lcore
  // rig they cut go-back-N's goodput at 0.1 % from 0.95 to 0.64 of lossless, under issue 9's 0.90.
  // The defaults stay session 14's until the owner chooses (docs/loss.md, part 1,
  // "Session 15").
  bool bdp_cap = true;
  // The cap is this x rate x min RTT: IRN caps at the BDP itself. (1.5, the congestion cap's
  // headroom, left 7.5 packets on a 25 Gbit/s path with a 6.6 us round trip, and 4.16 resent per
  // lost frame at 1 %, over issue 21's 4: RandomLoss, eight seeds.)
  double bdp_cap_headroom = 1.0;
  double bdp_cap_floor = 6;
  double bdp_cap_loss_interval = 256;
  // While the BDP cap is what bounds a go-back-N QP, at most cap / bdp_cap_parts packets (rounded
  // up) go per transmit call, and an ACK is asked for as often: the responder works
  // on one part while the requester builds the next, instead of each of two poll-mode cores
  // idling while the other works on the whole small window (docs/loss.md, part 1, "Session 14"
  // and "Session 15"). Only the BDP cap, never the static caps or the congestion window: a path
  // that never loses sends as before. Off by default with the interval above (on with it).
  bool bdp_cap_split = false;
  // ... in this many parts. Thirds: on the two-core model (tests/lib/rdma/small_window_test.cpp,
  // 0.1 % loss, cap 5) 0.84 of the uncapped goodput and 3.1 resent per lost frame, halves 0.80 and
  // 4.2 (docs/loss.md, part 1, "Session 15").
  std::uint32_t bdp_cap_parts = 3;
  // ... but not while the peer answers each part before this QP's next transmit turn: one thread
  // running both ends (perf_suite's one-lcore rig), or a peer faster than our loop. Parts then only
  // make each turn carry fewer frames. Told by the turns themselves (Requester::note_turn): parts
  // stop after kInStepTurns turns in a row began with nothing in flight, and are tried again
  // after kWholeTurns whole turns. false: parts whenever the cap bounds the QP.
  bool bdp_cap_split_adaptive = true;
  // Selective repeat's losses are frequent below this interval (Completer::selective_probes_short):
  // session 8's 256, kept apart from the BDP cap's interval so that selective repeat QPs did not
  // change when go-back-N's did.
  double selective_loss_interval = 256;
  std::uint32_t bdp_cap_memory_rtts = 1024;
  // ... and at any loss interval while the cap is free: the rate it leaves is at least
  // bdp_cap_free_rate of the best rate measured without it. Where the round trip is the
  // wire's, rate x min RTT is what the rate needs and the cap costs nothing: a loss then costs
  // about half the BDP instead of half of everything in flight. Where a round trip is a polling
  // loop's iteration (perf_suite's one-thread loss case) the rate needs a whole burst in flight,
  // the cap costs a quarter of the rate, and only frequent losses hold it (docs/loss.md, part 1,
  // "Session 10"). Told by trial: after a loss that the interval alone would not cap, the cap
  // holds until a decision (by goodput by default, bdp_cap_judge below; with
  // BdpJudge::SampleRates: for bdp_cap_trial_samples RTT samples; their median rate against the median of the
  // latest as many samples taken without the cap decides; with fewer such samples, the QP's
  // start-up, there is no verdict and the cap lets go untried (medians: a
  // descheduled poller's sample is an outlier, and the best of a few noisy samples found the cap
  // free on the one-thread rig in a quarter of the trials)). A costly verdict is not tried again for 1, 2, 4 .. 64 loss events (the backoff
  // is never reset); while free, every bdp_cap_trial_samples samples decide again against the
  // same reference.
  bool bdp_cap_when_free = true;
  double bdp_cap_free_rate = 0.9;
  std::uint32_t bdp_cap_trial_samples = 16;  // at most SendWindow::kTrialSamples
  // A costly verdict grows the cap before it backs off: the next trial (at the next rare loss)
  // holds bdp_cap_growth x the last trial's cap, up to bdp_cap_max_growth x rate x min RTT; only
  // a costly verdict at the largest cap waits 1, 2, 4 .. loss events. A path whose round trip
  // is the wire's but whose ACKs come in batches (one per ack_spacing packets) and whose poller
  // adds a loop iteration needs a little more than rate x min RTT: at exactly that the verdicts
  // flapped at the 0.9 bound, and every loss while costly cost the whole window (40-70 packets
  // on a link whose queue holds them). Not rate x knee RTT: where the static cap fills a
  // bottleneck queue, every full-rate sample carries the queue (docs/loss.md, part 1,
  // "Session 11"). 1: no growth (session 10's cap).
  double bdp_cap_growth = 1.5;
  double bdp_cap_max_growth = 4;
  // A grown cap shrinks again when the path needs less: after two free decisions in a row at a
  // grown cap the next ones run at the cap one growth step smaller (down to 1 x rate x min
  // RTT), judged as a trial is. Two free decisions there: the smaller cap stays, and may shrink
  // again. A costly one first, or later at a cap that shrank: the cap goes one step back up
  // (still held, at most to where it shrank from) and the next try down waits 1, 2, 4 .. 64
  // more free decisions. Without it a cap grown by a noisy costly verdict, or while the path
  // needed more, held that much in flight for good (docs/loss.md, part 1, "Session 12").
  // Off by default: it saved no resends in same-run A/Bs, and on the one-thread rig, whose
  // trial medians are kinder than its goodput, it once walked the cap down to 1 x (6 packets)
  // judged free at 0.70 of lossless per CPU second.
  bool bdp_cap_shrink = false;
  // How a trial is judged. Goodput (lib/rdma/cap_goodput.hpp): the packets acknowledged per unit
  // of time over bdp_cap_trial_packets delivered under the cap, against the latest as many
  // delivered without it; a stretch without progress longer than bdp_cap_gap_ceiling (or
  // 4 x min RTT: a descheduled poller or a timer's wait, not the cap) and the ACK that ends it
  // count toward neither, nor does the go-back
  // after every loss (the static cap's packets: what may have been in flight). A
  // cap at any growth is free at >= max(bdp_cap_free_rate, 0.95) of that goodput: the issue's
  // bound is goodput, and 0.9 let the one-thread rig's grown caps cost a tenth. SampleRates,
  // session 10's median of the RTT samples' rates, stays the default: on this shared machine
  // (load 10-13) the goodput judge saved no resends on two lcores, where no cap small enough
  // for <= 4 came near 0.95 of the rate, and judged the 25 Gbit/s link's grown caps at
  // 0.88-0.95, tripling its resends per lost (docs/loss.md, part 1, "Session 13").
  BdpJudge bdp_cap_judge = BdpJudge::SampleRates;
  std::uint32_t bdp_cap_trial_packets = 256;
  Nanos bdp_cap_gap_ceiling = 50 * kMicro;
};

class SendWindow {
 public:
  // `static_cap`: the packets the transport tuning allows one QP in flight anyway. `ecn_feedback`:
  // the QPs run DCQCN (kept for the record: the delay cut waits for a congestion loss either way).
  // `selective`: the window of selective repeat QPs (WindowTuning::selective_repeat).
  void start(const WindowTuning& t, double static_cap, bool ecn_feedback, bool selective = false);

  bool enabled() const { return t_.enabled; }
  bool selective() const { return selective_; }
  // Whether the window bounds the QPs yet (after the path's first loss), not only the static cap.
  bool engaged() const { return t_.enabled && lost_; }
  // Whether go-back-N's BDP cap holds (losses are frequent, or with no loss interval: a loss came recently).
  bool bdp_engaged() const;
  // The average number of packets delivered between loss events (0: fewer than one loss yet).
  double loss_interval() const { return loss_interval_; }
  // WindowTuning::bdp_cap_when_free: whether the cap was found free (it holds at any loss
  // interval), and the trials that found it free or costly.
  bool bdp_free() const { return free_cap_ == FreeCap::Free; }
  // Go-back-N's BDP cap in packets (each QP's, at least one) while it is what bounds the QP, below
  // the static caps and the window's share; 0 otherwise (WindowTuning::bdp_cap_split).
  std::uint32_t bdp_split_cap() const {
    if (loss_interval_ == 0 || !bdp_bounded()) return 0;
    const double b = bdp();
    if (lost_ && share() < b) return 0;
    return std::max<std::uint32_t>(1, static_cast<std::uint32_t>(b));
  }
  std::uint32_t bdp_trials_free() const { return trials_free_; }
  std::uint32_t bdp_trials_costly() const { return trials_costly_; }
  // Trials (BdpJudge::SampleRates) that ended with fewer than bdp_cap_trial_samples samples
  // without the cap to judge them against: no verdict, the cap let go untried.
  std::uint32_t bdp_trials_unjudged() const { return trials_unjudged_; }
  // The cap's multiple of rate x min RTT (WindowTuning::bdp_cap_growth).
  double bdp_growth() const { return growth_; }
  // WindowTuning::bdp_cap_shrink: tries of a smaller cap that were kept, and that cost rate.
  std::uint32_t bdp_shrinks() const { return shrinks_; }
  std::uint32_t bdp_shrinks_costly() const { return shrinks_costly_; }
  // The latest decision's measure against its reference (BdpJudge::Goodput: goodput under the
  // cap over goodput without it; SampleRates: the medians' ratio); 0 before any.
  double bdp_last_ratio() const { return last_ratio_; }
  // Rate x min RTT in packets, before the cap's headroom, growth, floor and static cap.
  double bdp_measured() const { return bdp_measured_; }
  double packets() const { return cwnd_; }  // the whole path's window
  // The congestion cap (while congested()), clipped to the static total of every event since
  // the latest RTT sample.
  double cap() const { return std::min(cap_at_sample(), cap_clip_); }
  double need() const;  // the random-loss floor (the whole path's)
  // Go-back-N's in-flight cap (each QP's; 0: no RTT sample yet): rate x min RTT while losses are
  // frequent, grown by costly verdicts otherwise (WindowTuning::bdp_cap_growth).
  double bdp() const { return losses_frequent() ? bdp_base() : bdp_grown(); }
  bool congested(Nanos now) const { return congested_until_ > now; }
  bool queue_high() const { return queue_high_; }
  Nanos min_rtt() const { return min_rtt_; }
  // The smallest of the latest queue_samples RTT samples (0: none yet).
  Nanos standing_rtt() const;
  Nanos knee_rtt() const { return knee_rtt_; }
  std::uint32_t sharers() const { return sharers_; }
  // Packets one QP may have in flight (at least one).
  std::uint32_t limit() const;
  // Packets between ACK requests: twice per window after a random loss (a loss at the window's
  // end then still has an ACK behind it that slides the window, and the packets that follow draw
  // the NAK, not the early timer); no bound of its own otherwise (congestion: fewer ACKs, fewer
  // bursts into the queue).
  std::uint32_t ack_spacing() const;
  // While one QP's share is below one packet: the spacing between its packets at round trip `rtt`.
  // Inline: asked before every request packet, and 0 unless a share is below one packet.
  // cwnd_ >= sharers_ first: then share() >= 1 (a rounded quotient keeps the order), without a division.
  Nanos spacing(Nanos rtt) const {
    if (!t_.enabled || !lost_ || cwnd_ >= sharers_ || share() >= 1 || rtt <= 0) return 0;
    return static_cast<Nanos>(static_cast<double>(rtt) / share());
  }

  // A QP gained send work (join) or ran out of it (leave). Inline: a QP at queue depth 1 leaves
  // at every ACK and joins at every post. The first to join and the last to leave change no
  // sharer count, so the static total stays the one kept (total_), not a product again.
  void join() {
    if (joined_++ == 0)
      goodput_.on_idle();  // the wait for this work is not the path's goodput
    else
      set_sharers(sharers_ + 1);
    follow_total();
  }
  void leave() {
    if (joined_ == 0) return;
    if (--joined_ > 0) set_sharers(sharers_ - 1);
    follow_total();
  }

  // `packets` newly acknowledged at `now`.
  void on_progress(Nanos now, std::uint32_t packets);
  // A loss event seen by a QP whose round trip is `rtt` (its smoothed one: the cut spacing, not
  // the test for a queue, which takes the standing round trip): returns whether the window was cut.
  // `timeout`: the local ACK timer, down to one packet per QP.
  bool on_loss(Nanos now, Nanos rtt, bool timeout);
  // An RTT sample `rtt`; one QP had `delivered_packets` of `pmtu` bytes acknowledged in the last `interval`.
  void on_rtt_sample(Nanos now, Nanos rtt, std::uint32_t delivered_packets, Nanos interval, std::uint32_t pmtu);

 private:
  double share() const { return cwnd_ / sharers_; }
  // static_cap_ x sharers_, kept by the only two places that change either (start, set_sharers):
  // asked at every join, leave, ACK and RTT sample.
  double static_total() const { return total_; }
  void set_sharers(std::uint32_t n) {
    sharers_ = n;
    total_ = static_cap_ * sharers_;
  }
  // After a join or leave: before any loss the window is what the static caps allow together;
  // a window cut by congestion only slow-starts toward them while no congestion holds.
  void follow_total() {
    const double total = total_;
    if (!lost_) cwnd_ = ssthresh_ = total;
    if (congestion_only_ && !congested_) ssthresh_ = total;
  }
  // After a loss the window never needs more than the path's need (congested: the cap).
  // Selective repeat has no random-loss cap: a random loss costs it one packet at any window.
  // One QP's BDP cap: the path's whole BDP, as IRN caps each flow (what one loss costs a
  // go-back-N QP is its own in flight; sharing the path is the congestion window's and DCQCN's
  // job). None for selective repeat, before the first RTT sample, or without a recent loss.
  double bdp_share() const { return bdp_engaged() && bdp_base() > 0 ? bdp() : static_cap_; }
  double effective_cap() const { return !lost_ || congestion_only_ ? static_total() : congested_ ? cap() : need(); }
  // The caps follow the latest RTT sample, and are computed where they are read from what it
  // left (per_ns_, sample_total_, sample_growth_) and what only a sample changes (min_rtt_,
  // knee_rtt_, last_rtt_): at queue depth 1 every ACK is a sample, and on a path that never lost
  // a packet nothing reads them in between (docs/perf-changes.md section 54). Before the first
  // sample (min_rtt_ 0): start()'s static total, and no BDP cap.
  double cap_at_sample() const;
  double bdp_base() const;
  double bdp_grown() const;  // at the growth of the latest sample
  void expire(Nanos now) {
    // The congestion cap lapses: the window may grow back to the static caps.
    if (congested_ && now >= congested_until_) congested_ = false;
    if (bdp_engaged_ && now >= bdp_until_) bdp_engaged_ = false;
  }
  // queue_high_ from the latest queue_samples samples against `target`, newest first, up to the
  // first one at or below it (on a path with no queue, the newest): standing_rtt() > target.
  void judge_queue(Nanos target);
  // A round trip above this shows a queue (never, before the first sample).
  Nanos queue_target() const;
  void clamp();
  // Out of line: the window after a loss that cuts it for random losses too (WindowTuning::
  // enabled): effective_cap()'s engaged part, and on_progress's growth under it.
  [[gnu::noinline]] double engaged_cap() const;
  [[gnu::noinline]] void grow_under_cap(std::uint32_t packets);
  void grow_one();
  void clamp_below(double cap);  // clamp's bounds on cwnd_ under a cap already known
  WindowTuning t_{};
  double static_cap_ = 1;   // per QP
  double cwnd_ = 1;
  double ssthresh_ = 1;
  // What the latest RTT sample left for the caps (in the places of the four caps it used to
  // compute: the object's size and layout stay): the congestion cap's clip by the static total
  // at every event since, the static total then, the path's rate in packets per nanosecond, the
  // BDP cap's growth then.
  double cap_clip_ = 1;
  double sample_total_ = 1;
  double per_ns_ = 0;
  double sample_growth_ = 1;
  bool bdp_on_ = false;
  bool bdp_engaged_ = false;  // a loss came less than bdp_cap_memory_rtts round trips ago (until bdp_until_)
  Nanos bdp_until_ = 0;
  // The path's loss interval (WindowTuning::bdp_cap_loss_interval), in packets delivered.
  double delivered_ = 0;
  double delivered_at_loss_ = 0;
  double loss_interval_ = 0;  // 0: no loss yet
  bool losses_frequent() const;
  // WindowTuning::bdp_cap_when_free: Unknown until the first trial, Trial while one runs.
  enum class FreeCap : std::uint8_t { Unknown, Trial, Free, Costly };
  FreeCap free_cap_ = FreeCap::Unknown;
  static constexpr std::uint32_t kTrialSamples = 32;
  double uncapped_[kTrialSamples] = {};  // rates of the latest samples the cap did not bound (a ring)
  std::uint32_t uncapped_count_ = 0;     // how many it holds (at most trial_n_)
  std::uint32_t uncapped_next_ = 0;      // where the next one goes
  // Into the ring by a compare, not `% trial_n_`: a 32-bit division at every RTT sample, which
  // at queue depth 1 is every ACK. Only the count up to trial_n_ is ever asked.
  void note_uncapped(double rate) {
    uncapped_[uncapped_next_] = rate;
    if (++uncapped_next_ == trial_n_) uncapped_next_ = 0;
    if (uncapped_count_ < trial_n_) ++uncapped_count_;
  }
  std::uint32_t trial_n_ = 16;           // bdp_cap_trial_samples within 1 .. kTrialSamples (start())
  double trial_[kTrialSamples] = {};     // rates of this trial's samples, which the cap bounded
  std::uint32_t trial_samples_ = 0;
  std::uint32_t trial_skip_ = 0, trial_backoff_ = 0;  // loss events until the next trial after a costly one
  std::uint32_t trials_free_ = 0, trials_costly_ = 0, trials_unjudged_ = 0;
  double growth_ = 1;  // the cap's multiple of rate x min RTT (grown by costly verdicts)
  // WindowTuning::bdp_cap_shrink: the free growth a smaller try came from (0: none running),
  // free decisions until the next try, and the backoff after a costly one.
  double shrunk_from_ = 0;
  double shrunk_ceiling_ = 0;  // the largest free growth a kept shrink came from (0: none since the cap let go)
  std::uint32_t shrink_skip_ = 0, shrink_backoff_ = 0;
  std::uint32_t shrinks_ = 0, shrinks_costly_ = 0;
  std::uint32_t free_streak_ = 0;  // free decisions in a row at the cap's growth
  void on_free_verdict();
  void on_loss_free_cap();
  void on_sample_free_cap(double rate);
  void on_progress_free_cap(Nanos now, std::uint32_t packets);
  // The cap was found free (or costly) at a decision, by either judge.
  void decide(bool free);
  // The cap bounds the QP: it may have less in flight than without it.
  bool bdp_bounded() const { return bdp_engaged() && bdp_base() > 0 && bdp() < static_cap_; }
  CapGoodput goodput_;
  double last_ratio_ = 0;
  double bdp_measured_ = 0;
  Nanos min_rtt_ = 0;          // 0: no sample yet
  Nanos knee_rtt_ = 0;         // smallest RTT of a sample at >= 0.8 of the best rate; 0: none
  Nanos last_rtt_ = 0;
  // The latest RTT samples (a ring of kRecent): their minimum is the standing round trip.
  static constexpr std::uint32_t kRecent = 8;
  Nanos recent_[kRecent] = {};
  std::uint32_t recent_count_ = 0;
  double max_rate_bps_ = 0;    // highest delivery rate measured, decaying slowly
  std::uint32_t sharers_ = 1;  // QPs with send work (at least one); set_sharers changes it
  double total_ = 1;           // static_total()
  std::uint32_t joined_ = 0;
  Nanos next_cut_at_ = 0;      // one loss cut per round trip across the sharing QPs
  Nanos next_delay_cut_at_ = 0;
  Nanos congested_until_ = 0;  // the congestion cap and delay cut apply until then
  bool congested_ = false;     // cached congested(now) of the latest event
  bool lost_ = false;
  bool ecn_feedback_ = false;
  bool selective_ = false;        // the window of selective repeat QPs
  bool congestion_only_ = false;  // cut by congestion losses only (WindowTuning::go_back_n_congestion, selective_repeat)
  bool queue_high_ = false;  // the latest queue_samples RTT samples were all above the delay target
};

}  // namespace roce::rdma
