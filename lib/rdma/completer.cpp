#include "lib/rdma/completer.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "protocol/aeth.hpp"
#include "protocol/icrc_deferred.hpp"
#include "protocol/psn.hpp"
#include "protocol/sack.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

ibv_wc_opcode wc_opcode(ibv_wr_opcode op) {
  if (op == kWrFlush) return kWcFlush;  // not in Debian 12's enum (verbs_ext.hpp)
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    case IBV_WR_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
    case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
    case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
    default: return IBV_WC_SEND;
  }
}

ibv_wc_status nak_status(NakCode c) {
  switch (c) {
    case NakCode::InvalidRequest: return IBV_WC_REM_INV_REQ_ERR;
    case NakCode::RemoteAccessError: return IBV_WC_REM_ACCESS_ERR;
    case NakCode::RemoteOperationalError: return IBV_WC_REM_OP_ERR;
    default: return IBV_WC_REM_INV_RD_REQ_ERR;
  }
}

// 4.096 us x 2^timeout; 0 disables the timer (IBA: infinite).
Nanos local_ack_timeout(std::uint8_t timeout) {
  if (timeout == 0) return kNever;
  return Nanos{4096} << std::min<unsigned>(timeout, 31);
}

// classify_response_psn's rule, inline where the completer asks it (every response).
[[gnu::always_inline]] inline ResponsePsnClass classify_psn(std::uint32_t psn, std::uint32_t una, std::uint32_t sent_end) {
  if (psn_diff(psn, sent_end) >= 0) return ResponsePsnClass::Ghost;
  if (psn_diff(psn, una) < -1) return ResponsePsnClass::Old;
  return ResponsePsnClass::Valid;
}

}  // namespace

ResponsePsnClass classify_response_psn(std::uint32_t psn, std::uint32_t una, std::uint32_t sent_end) {
  return classify_psn(psn, una, sent_end);
}

void Completer::start(const QpContext& qp) {
  una_ = qp.cfg.sq_psn & kPsnMask;
  retry_left_ = qp.cfg.retry_cnt;
  rnr_retry_left_ = qp.cfg.rnr_retry;
  consecutive_rnr_ = 0;
  rto_ = local_ack_timeout(qp.cfg.timeout);
  retransmit_at_ = kNever;
  rnr_at_ = kNever;
  early_at_ = kNever;
  early_backoff_ = 0;
  backoff_held_ = false;
  early_sent_at_ = kNever;
  early_rearm_ = false;
  srtt_ = rttvar_ = 0;
  sample_end_ = sample_from_ = una_;
  sample_sent_at_ = kNever;
  sample_resent_ = false;
  probe_sample_at_ = kNever;
  ack_req_end_ = una_;
  const TransportTuning* t = qp.tuning;
  double static_cap = t ? t->max_inflight_packets : 256;
  if (t && t->max_inflight_bytes != 0)
    static_cap = std::min(static_cap, std::max(1.0, static_cast<double>(t->max_inflight_bytes / qp.cfg.pmtu)));
  // A shared window is started by its owner, once.
  if (shared_window_ == nullptr)
    own_window_.start(t ? t->window : WindowTuning{}, static_cap, t && t->congestion.enabled, qp.cfg.selective_repeat != 0);
  recovery_end_ = progress_una_ = acked_end_ = una_;
  recovering_ = false;
  peer_answered_ = false;
  delivered_ = rate_delivered_ = 0;
  sr_loss_at_ = 0;
  sr_loss_interval_ = 0;
  rate_since_ = kNever;
}

void Completer::finish(QpContext& qp, Requester& req, SendWqe& w, ibv_wc_status status) {
  if (w.state == WqeState::InFlight && w.needs_response_data()) {
    // Selective repeat: a READ may finish before an older one, whose responder resource a new
    // READ must not recycle yet; its credit goes back when it retires, in order.
    if (req.selective()) w.rd_credit_held = true;
    else req.release_rd_atomic();
  }
  w.state = WqeState::Done;
  w.status = status;
  (void)qp;
}

Completer::AckResult Completer::acknowledge_before(QpContext& qp, Requester& req, std::uint32_t end_psn,
                                                   std::uint32_t* retry_psn) {
  if (psn_after(end_psn, acked_end_)) acked_end_ = end_psn;
  // A tracked READ (selective repeat) still missing responses: nothing after it completes yet,
  // and una stays at its first missing one; what it acknowledged is kept in acked_end_.
  bool blocked = false;
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& w = qp.sq.at(i);
    if (w.state == WqeState::Done) {
      // A READ or atomic that finished behind a tracked READ: una passes it once that one did.
      if (!blocked && w.status == IBV_WC_SUCCESS && req.selective() && w.needs_response_data() && psn_diff(w.last_psn(), end_psn) < 0 &&
          psn_after(psn_next(w.last_psn()), una_))
        una_ = psn_next(w.last_psn());
      continue;
    }
    if (w.state != WqeState::InFlight) break;
    if (psn_diff(w.last_psn(), end_psn) >= 0) {
      // Partially covered: only a multi-packet SEND/WRITE can be acknowledged in part, and a
      // tracked READ up to its first missing response.
      if (!blocked && req.tracks_read(w)) {
        const std::uint32_t missing = psn_add(w.first_psn, w.read_packets_received);
        if (psn_after(missing, una_)) una_ = missing;
      } else if (!blocked && !w.needs_response_data() && psn_after(end_psn, una_)) {
        una_ = end_psn;
      }
      break;
    }
    if (req.tracks_read(w)) {
      // The responder is past this READ and answers in PSN order: what did not come was lost,
      // and is asked for alone (requester_read_holes.cpp), with no go-back.
      req.ask_read_holes(w, w.npackets, 0);
      const std::uint32_t missing = psn_add(w.first_psn, w.read_packets_received);
      if (!blocked && psn_after(missing, una_)) una_ = missing;
      blocked = true;
      continue;
    }
    if (w.needs_response_data()) {
      // The responder is past this READ/atomic, so its response was lost.
      *retry_psn = psn_add(w.first_psn, w.read_packets_received);
      if (!blocked && psn_after(*retry_psn, una_)) una_ = *retry_psn;
      return AckResult::ResponseLost;
    }
    if (blocked) continue;
    finish(qp, req, w, IBV_WC_SUCCESS);
    una_ = psn_next(w.last_psn());
  }
  return AckResult::Ok;
}

// Inline: take_rtt_sample's, once per ACK that moves una (and spurious_probe_answer's, rarely).
[[gnu::always_inline]] inline void Completer::smooth_rtt(Nanos r) {
  if (srtt_ == 0) {
    srtt_ = r;
    rttvar_ = r / 2;
  } else {
    // Both sums are positive: divided as unsigned, the same quotients without the fix-up that
    // rounds a negative one toward zero.
    const Nanos err = srtt_ > r ? srtt_ - r : r - srtt_;
    rttvar_ = static_cast<Nanos>(static_cast<std::uint64_t>(3 * rttvar_ + err) / 4);
    srtt_ = static_cast<Nanos>(static_cast<std::uint64_t>(7 * srtt_ + r) / 8);
  }
}

// Inline: progressed() is its only caller, once per ACK that moves una.
[[gnu::always_inline]] inline void Completer::take_rtt_sample(const QpContext& qp, Nanos now, bool first_copy_answered) {
  if (sample_sent_at_ == kNever || psn_before(una_, sample_end_)) return;
  const Nanos sent_at = sample_sent_at_;
  const Nanos r = std::max<Nanos>(now - sent_at, 1);  // srtt_ 0 means "no sample"
  sample_sent_at_ = kNever;
  const bool ambiguous = sample_resent_ && !first_copy_answered;
  sample_resent_ = false;
  if (ambiguous) [[unlikely]]
    return;
  if (backoff_held_) [[unlikely]] {
    backoff_held_ = false;  // a PSN sent once was answered: the round trip is known again
    early_backoff_ = 0;
  }
  // Our own worker stalled since the packet went (Engine::note_stall): the round trip holds the
  // stall, milliseconds on a busy host against microseconds of path, and would lift srtt and
  // every probe's wait with it (at 5 % loss the probes then no longer fitted before the local
  // ACK timeout: docs/loss.md part 1, "Session 19"). The delivery rate starts again from here.
  // Not the first sample: a loop that polls this worker only now and then (every poll a "stall")
  // would otherwise never have one, and without it no early timer runs.
  if (srtt_ != 0 && qp.own_stall != nullptr && qp.own_stall->end > sent_at) [[unlikely]] {
    rate_since_ = now;
    rate_delivered_ = delivered_;
    return;
  }
  // The delivery rate over the time since the previous sample (at least this round trip): over
  // one short RTT, an ACK covering a whole message would count as delivered in an instant.
  const Nanos interval = std::max(r, now - rate_since_);
  window().on_rtt_sample(now, r, static_cast<std::uint32_t>(delivered_ - rate_delivered_), interval, qp.cfg.pmtu);
  rate_since_ = now;
  rate_delivered_ = delivered_;
  smooth_rtt(r);
}

// Inline in straight_ack, where the call's saves and restores were a sixth of its cost
// (docs/perf-changes.md section 73); progressed below for the rarer responses.
[[gnu::always_inline]] inline void Completer::progressed_inline(QpContext& qp, const Requester& req, Nanos now) {
  retry_left_ = qp.cfg.retry_cnt;
  rnr_retry_left_ = qp.cfg.rnr_retry;
  retrying_ = false;
  // The answer to a go-back-N tail probe alone cannot come sooner than the path's fastest round
  // trip: an ACK within it answered the first copy. Without this, a late ACK that drew a probe
  // and came back after half a round trip (a jittery path) was no RTT sample, so rttvar never
  // learnt the jitter and every late ACK drew a probe again (TailProbeWait.AJittery*).
  const bool tail_answered = probed_ && !oldest_probed_ && !timeout_probed_ && qp.tuning->tail_probe_floor > 0;
  const Nanos answer_min = tail_answered ? window().min_rtt() : 0;
  probed_ = false;
  oldest_probed_ = false;
  timeout_probed_ = false;
  // A selective repeat probe is answered like the packets before it (an ACK for everything), so
  // a quick answer says nothing about whether the timer was early: counting it as early kept the
  // doubled wait, and took the whole wait (from the sampled packet, before the timer) as an RTT
  // sample, which lifted srtt and with it the next wait.
  const bool first_copy_answered =
      early_sent_at_ != kNever && now - early_sent_at_ < std::max(srtt_ / 2, answer_min) && !selective_probes_short(qp);
  // The timer was early: the next window keeps the doubled wait, the one after starts afresh.
  if (first_copy_answered) [[unlikely]] {
    qp.counters.inc(Counter::SpuriousEarlyRetransmits);
  } else if (!backoff_held_) {
    early_backoff_ = 0;
  }
  early_sent_at_ = kNever;
  const std::int32_t acked = psn_diff(una_, progress_una_);
  if (acked > 0) [[likely]] {
    delivered_ += static_cast<std::uint32_t>(acked);
    window().on_progress(now, static_cast<std::uint32_t>(acked));
  }
  progress_una_ = una_;
  if (recovering_ && !psn_before(una_, recovery_end_)) [[unlikely]]
    recovering_ = false;
  // Later than that the answer is ambiguous (Karn) and no sample is taken; a second ACK of the
  // probed packet (spurious_probe_answer) then shows both copies got through, and the round
  // trip is taken after all, so that the wait learns a late ACK instead of probing it each time.
  const bool watch = tail_answered && !first_copy_answered && sample_sent_at_ != kNever && sample_resent_ &&
                     !psn_before(una_, sample_end_) && !psn_before(una_, psn_next(probed_psn_));
  const Nanos watch_from = sample_sent_at_;
  take_rtt_sample(qp, now, first_copy_answered);
  probe_sample_at_ = watch ? watch_from : kNever;
  if (psn_before(una_, req.sent_end_psn())) {
    arm_timers(qp, now);
  } else {
    retransmit_at_ = kNever;
    early_at_ = kNever;
  }
}

void Completer::progressed(QpContext& qp, const Requester& req, Nanos now) { progressed_inline(qp, req, now); }

void Completer::spurious_probe_answer(QpContext& qp, const Packet& pkt, Nanos now) {
  // An ACK that covers the probed packet and acknowledges nothing new: the responder answered
  // both copies (a duplicate request is ACKed again, IBA C9-105), so the first ACK was late, not
  // lost. Its round trip is at most the time to this second answer: taken as the sample (too
  // long by up to a round trip if the probe's answer came second, which only lengthens the wait).
  // Any other progress first ends the watch (progressed), so no stale send time is ever taken.
  if (pkt.bth.opcode != raw(Opcode::RcAck) || !Syndrome{pkt.ext.aeth.syndrome}.is_ack()) return;
  const std::uint32_t psn = pkt.psn();
  if (psn_before(psn, probed_psn_) || !psn_before(psn, una_)) return;
  qp.counters.inc(Counter::SpuriousEarlyRetransmits);
  // Not across a stall of our own (take_rtt_sample).
  if (qp.own_stall == nullptr || qp.own_stall->end <= probe_sample_at_) smooth_rtt(std::max<Nanos>(now - probe_sample_at_, 1));
  probe_sample_at_ = kNever;
}

void Completer::arm_timers(const QpContext& qp, Nanos now) {
  arm_retransmit(now);
  arm_early(qp, now);
}

bool Completer::selective_probes_short(const QpContext& qp) const {
  if (!qp.cfg.selective_repeat || !qp.tuning || !qp.tuning->selective_tail_probe || sr_loss_interval_ == 0) return false;
  // Frequent: SACK-reported loss events on average less than WindowTuning::selective_loss_interval
  // (256 packets) apart; the interval still open counts once it is the longer, so a clean stretch
  // of a few times that ends it.
  const double open = static_cast<double>(delivered_ - sr_loss_at_);
  const double avg = open > sr_loss_interval_ ? sr_loss_interval_ + (open - sr_loss_interval_) / 4 : sr_loss_interval_;
  const double limit = qp.tuning->window.selective_loss_interval > 0 ? qp.tuning->window.selective_loss_interval : 256;
  return avg < limit;
}

void Completer::arm_early(const QpContext& qp, Nanos now) {
  early_at_ = kNever;
  const Nanos floor = qp.tuning ? qp.tuning->early_retransmit_min : 0;
  // Only while a packet that asked for an ACK is unacknowledged: a sender paced so slowly
  // (DCQCN) that no AckReq went out for a while is not waiting for anything.
  // Without an RTT sample (the first window lost every packet a sample could come from, which a
  // full tail-drop queue does to whoever arrives second): four times the floor once the peer has
  // answered something, sixteen times before.
  if (floor <= 0 || rto_ == kNever || early_backoff_ >= 32 || !psn_before(una_, ack_req_end_)) return;
  // That wait only with the send window (off by default): a peer slow to answer its first
  // packets (rxe in a guest) must not see them twice.
  if (srtt_ == 0 && !(qp.tuning && qp.tuning->window.enabled)) return;
  // At least twice the smoothed round trip: a queue that grows past srtt + 4 rttvar would have
  // every QP on it resend its window, which doubles the queue and keeps the round trip there.
  // Selective repeat's timer sends one probe, not a window (requester_selective.cpp): with
  // early_retransmit_standing_rtt (off by default) it waits twice the standing round trip (the
  // smallest of the path's latest samples, SendWindow) instead of srtt's bound. Off because a
  // tail-drop queue that fills grows the round trip faster than the latest samples show: in
  // overrun_test.cpp 4 selective repeat QPs then resent 80 % of what they sent (docs/loss.md).
  const Nanos standing =
      qp.cfg.selective_repeat != 0 && qp.tuning && qp.tuning->early_retransmit_standing_rtt ? window().standing_rtt() : 0;
  Nanos base = srtt_ == 0      ? (peer_answered_ ? 4 : 16) * floor
               : standing != 0 ? std::max(floor, 2 * standing)
                               : std::max({floor, srtt_ + 4 * rttvar_, 2 * srtt_});
  // The tail probe costs one packet if it was not needed: it goes after the short wait, about two
  // round trips (short_wait). So does
  // a go-back while the BDP cap holds (a loss came recently): it resends no more than the cap,
  // a few packets, and a lost resend (which the responder, having sent its one NAK for that
  // PSN, answers with silence) would otherwise stall the QP for the floor's 250 us. Neither while
  // the path shows a queue: there the round trip grows past 2 srtt, and every QP on the queue
  // would resend into it (tests/lib/rdma/overrun_test.cpp: 16 QPs resent 3.8 % instead of 0.05 %).
  // Nor during a go-back without the cap: the resend queues behind the whole window sent before
  // it, and its ACK comes later than 2 srtt (RandomLoss at 0.1 %: two spurious probes per loss).
  const bool cheap = ((!probed_ && early_backoff_ == 0 && !in_recovery()) || window().bdp_engaged()) &&
                     !window().queue_high() && !window().congested(now);
  // Selective repeat's timer sends a probe too (requester_selective.cpp), so the same short wait
  // fits it while SACKs report frequent losses: with its window full (the reorder window, every
  // round trip on a CPU-bound path), the one ACK that would slide it is the only thing in
  // flight, and when that ACK is lost nothing else comes (docs/loss.md, part 2, "The missing
  // tenth"). Not on a path that reports no losses: there silence is a starved poller (af_packet).
  const bool probes = !qp.cfg.selective_repeat || selective_probes_short(qp);
  if (srtt_ != 0 && cheap && qp.tuning && qp.tuning->tail_probe_min > 0 && probes) base = std::min(base, short_wait(qp));
  const Nanos wait = base << early_backoff_;
  if (now + wait < retransmit_at_) early_at_ = now + wait;
}

Nanos Completer::short_wait(const QpContext& qp) const {
  const TransportTuning& t = *qp.tuning;
  if (qp.cfg.selective_repeat != 0 || t.tail_probe_floor <= 0) return std::max(t.tail_probe_min, 2 * srtt_);
  // The rttvar term at most 4 srtt and the early timer's floor: samples that include scheduling
  // stalls lift srtt and rttvar to milliseconds, the probe then goes as late as the early timer
  // would, and the oldest packet's probe after it no longer comes before the local ACK timeout.
  // Our own worker's stalls are kept out of the samples (take_rtt_sample, session 19); a peer's
  // are not. Above the floor's 125 us of srtt the wait is 2 srtt, as before session 18.
  Nanos wait = std::max({t.tail_probe_floor, 2 * srtt_, std::min({srtt_ + 4 * rttvar_, 4 * srtt_, t.early_retransmit_min})});
  // One packet asked for and unanswered: its ACK is the only one that can come, so a peer's
  // hold of it (Engine::hold_ack) is all late; and a spurious probe would double what the
  // exchange sent (queue depth 1). RACK-TLP adds the worst delayed ACK there too.
  if (psn_diff(ack_req_end_, una_) == 1 && t.ack_hold.turns > 0) wait += t.ack_hold.age;
  return wait;
}

// Inline: on_request_sent's per frame at queue depth 1.
inline void Completer::requests_sent(const QpContext& qp, bool asked, std::uint32_t ask_end, std::uint32_t sent_end,
                                     Nanos now) {
  if (retransmit_at_ == kNever && rnr_at_ == kNever) {
    // A packet asking for an ACK has end_send_turn arm the early timer (below), which overwrites
    // whatever arm_early gave here; nothing reads early_at_ before the turn ends.
    if (asked) {
      arm_retransmit(now);
      early_at_ = kNever;
    } else {
      arm_timers(qp, now);
    }
  }
  if (asked) {
    // An ACK is owed about one round trip after each AckReq: the early timer runs from the
    // latest one.
    if (psn_after(ask_end, ack_req_end_)) ack_req_end_ = ask_end;
    early_rearm_ = true;
  }
  // A packet carrying a PSN never sent before starts an RTT sample if none is pending.
  if (sample_sent_at_ == kNever && !retrying_ && psn_after(sent_end, sample_from_)) {
    sample_end_ = sample_from_ = sent_end;
    sample_sent_at_ = now;
    if (rate_since_ == kNever) {
      rate_since_ = now;
      rate_delivered_ = delivered_;
    }
  }
}

void Completer::on_request_sent(const QpContext& qp, const Requester& req, Nanos now) {
  requests_sent(qp, req.last_asked_ack(), req.last_end_psn(), req.sent_end_psn(), now);
}

void Completer::on_run_sent(const QpContext& qp, std::uint32_t first_sent_end, std::uint32_t end, Nanos now) {
  // Frame by frame, the first frame arms the timers and is the only one that may start an RTT
  // sample (a run's PSNs are all new: the later ones find the sample pending); each frame asks
  // for an ACK, the last one's end the furthest.
  requests_sent(qp, true, end, first_sent_end, now);
}

void Completer::end_send_turn(const QpContext& qp, Nanos now) {
  if (!early_rearm_) return;
  early_rearm_ = false;
  if (retransmit_at_ != kNever) arm_early(qp, now);
}

CompleterOutcome Completer::retry(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now, bool timeout, bool cut_as_timeout) {
  // Packets already in flight when a go-back-N started keep arriving out of order; only
  // progress or a timeout may start the next one (otherwise one loss burns every retry).
  if (!timeout && (retrying_ || duplicate_loss_signal(req, psn))) {
    qp.counters.inc(Counter::DuplicateLossSignals);
    // The NAK acknowledged everything before `psn`: the resend skips what it had yet to resend there.
    if (retrying_ || !psn_after(psn, req.send_pos())) return CompleterOutcome::Nothing;
    req.rewind(qp, psn);
    return CompleterOutcome::Progress;
  }
  if (retry_left_ == 0) {
    qp.counters.inc(Counter::RetryExceededErr);
    return fail_at(qp, req, una_, IBV_WC_RETRY_EXC_ERR);
  }
  --retry_left_;
  if (timeout) qp.counters.inc(Counter::RetransmitTimeouts);
  qp.counters.inc(Counter::CompleterRetryErr);
  loss_event(qp, req, now, timeout || cut_as_timeout);
  go_back(qp, req, psn, now, false, timeout);
  return CompleterOutcome::Progress;
}

CompleterOutcome Completer::on_local_ack_timeout(QpContext& qp, Requester& req, Nanos now) {
  const std::uint32_t from = resume_psn(qp);
  // The retry is used whatever goes out (C9-140: retry_cnt counts local ACK timeouts without
  // progress), so a dead peer still ends the QP in IBV_WC_RETRY_EXC_ERR on time. What goes out
  // is one packet asking for an ACK, not the window: a peer whose poller was descheduled past
  // the timeout (four busy neighbours on two cores) has everything and answers the duplicate with
  // an ACK of it all; a peer that lost the oldest packet takes it as new and ACKs it alone, and
  // the go-back follows then (on_aeth), with the timeout's window cut.
  if (!qp.tuning->timer_probes || retry_left_ == 0) return retry(qp, req, from, now, true);
  if (!probe(qp, req, from, now, true)) return retry(qp, req, from, now, true);
  --retry_left_;
  qp.counters.inc(Counter::RetransmitTimeouts);
  qp.counters.inc(Counter::CompleterRetryErr);
  timeout_probed_ = true;
  arm_timers(qp, now);  // the local ACK timer runs again from this retry
  return CompleterOutcome::Progress;
}

bool Completer::probe(QpContext& qp, Requester& req, std::uint32_t from, Nanos now, bool timeout) {
  if (!req.selective()) return (!timeout && tail_probe(qp, req, now)) || oldest_probe(qp, req, from, now, timeout);
  if (!qp.tuning->timer_probes) return false;
  std::uint32_t psn = 0;
  switch (req.resend_unsacked(qp, true, &psn)) {
    case Requester::TimerResend::None:
    case Requester::TimerResend::All: return false;
    case Requester::TimerResend::ReadHoles: break;
    case Requester::TimerResend::Newest: qp.counters.inc(Counter::TailProbes); break;
    case Requester::TimerResend::Oldest: oldest_probe_sent(qp, psn); break;  // the newest's probe went unanswered
  }
  ++early_backoff_;
  probe_sent(req, now);
  return true;
}

void Completer::probe_sent(const Requester& req, Nanos now) {
  // Karn: the ACK that answers may answer either copy of the probed packet; judged as an early
  // retransmission's (an ACK within half a round trip answered the first copy).
  if (sample_sent_at_ != kNever) sample_resent_ = true;
  // Nor does the probe start a sample of its own (its PSN was sent before): a probe's round trip
  // is an unqueued packet's, and such samples drove srtt below the time a message's ACK takes,
  // so that the next probe fired before it (RandomLoss at 0.1 %: 95 probes for 54 losses).
  sample_from_ = req.sent_end_psn();
  early_sent_at_ = now;
}

void Completer::oldest_probe_sent(QpContext& qp, std::uint32_t psn) {
  qp.counters.inc(Counter::OldestProbes);
  oldest_probed_ = true;
  oldest_probe_psn_ = psn;
  // With timer_probes the doubled wait stays until a round trip is measured again: the silence
  // may be a stall (Karn's rule for the backoff).
  backoff_held_ = qp.tuning->timer_probes;
}

bool Completer::duplicate_loss_signal(const Requester& req, std::uint32_t psn) const {
  return in_recovery() && psn_before(psn, recovery_end_) && !psn_before(psn, req.send_pos());
}

void Completer::loss_event(QpContext& qp, const Requester& req, Nanos now, bool timeout) {
  qp.counters.inc(Counter::LossEvents);
  // One cut per window of data: a loss among packets sent before the previous cut took effect
  // says nothing new about the path. A local ACK timeout always cuts.
  if ((timeout || !in_recovery()) && window().on_loss(now, srtt_ ? srtt_ : window().min_rtt(), timeout))
    qp.counters.inc(Counter::WindowCuts);
  if (!in_recovery()) {
    recovering_ = true;
    recovery_end_ = req.sent_end_psn();
  }
}

void Completer::go_back(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now, bool early, bool timer) {
  // Selective repeat with timer_probes: a timer gets here only when probe() found none to send.
  std::uint32_t probe_psn = 0;
  const bool unsacked = (early || timer) && req.selective() && !qp.tuning->timer_probes &&
                        req.resend_unsacked(qp, false, &probe_psn) != Requester::TimerResend::None;
  if (!unsacked) req.rewind(qp, psn);
  retrying_ = true;
  if (early && sample_sent_at_ != kNever) {
    sample_resent_ = true;  // judged when its ACK comes back
  } else {
    sample_sent_at_ = kNever;  // Karn: an ACK may now answer either copy
    sample_resent_ = false;
  }
  sample_from_ = req.sent_end_psn();
  arm_timers(qp, now);
}

bool Completer::tail_probe(QpContext& qp, Requester& req, Nanos now) {
  // With timer_probes a timer after a doubled wait or on a path showing a queue probes too: the
  // doubled wait is what a starved peer earns (its ACK came after the timer), and a queue's
  // signals are the RTT samples such a peer inflates (docs/loss.md, "A timer sends one probe").
  const bool probes = qp.tuning->timer_probes;
  if (probed_ || (!probes && early_backoff_ != 0) || srtt_ == 0 || qp.tuning->tail_probe_min <= 0 || req.selective()) return false;
  if (!probes && (window().queue_high() || window().congested(now))) return false;  // a queue: the go-back as before
  if (!req.probe_newest(qp)) return false;
  qp.counters.inc(Counter::TailProbes);
  probed_ = true;
  probed_psn_ = psn_add(req.sent_end_psn(), -1);
  probe_sent(req, now);
  const Nanos ack_timer = retransmit_at_;  // a probe must not postpone the QP's failure
  arm_early(qp, now);
  retransmit_at_ = ack_timer;
  return true;
}

void Completer::on_sack(QpContext& qp, Requester& req, const Packet& pkt, Nanos now) {
  qp.counters.inc(Counter::SacksReceived);
  std::uint32_t first = 0;
  if (req.on_sack(qp, psn_next(pkt.psn()), sack_bitmap(pkt), &first) == 0) return;
  // A hole costs its own packets, not a window: no go-back. The window is cut only when the
  // round trip shows a queue (SendWindow: selective repeat reacts to congestion alone), at most
  // once per round trip across the QPs of the path.
  qp.counters.inc(Counter::LossEvents);
  // The SACK-reported loss interval, in packets delivered (TFRC's weights, as SendWindow's).
  const double interval = static_cast<double>(delivered_ - sr_loss_at_);
  sr_loss_interval_ = sr_loss_interval_ == 0 ? std::max(interval, 1.0) : sr_loss_interval_ + (interval - sr_loss_interval_) / 4;
  sr_loss_at_ = delivered_;
  if (window().on_loss(now, srtt_ ? srtt_ : window().min_rtt(), false)) qp.counters.inc(Counter::WindowCuts);
  if (sample_sent_at_ != kNever && psn_before(first, sample_end_)) {
    sample_sent_at_ = kNever;  // Karn: the sampled PSN goes twice
    sample_resent_ = false;
  }
  arm_early(qp, now);  // the resends get their round trip before the timer looks again
}

bool Completer::oldest_probe(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now, bool timeout) {
  // Silence after the tail probe is a lost NAK, a lost resend (the responder sends one NAK per
  // hole, then drops in silence) or a peer that is not polling (an af_packet ring behind a
  // starved poller: nothing was lost). One packet tells them apart: the oldest unacknowledged.
  // If it was the hole, its ACK comes alone and the go-back follows then (on_aeth); if not, the
  // responder answers it as a duplicate with all it has. A whole window sent on silence was
  // what a starved poller cost (docs/loss.md, the af_packet case). The local ACK timer still
  // goes back from una, and still fails the QP.
  // With timer_probes every early timer the tail probe does not take comes here, whatever the
  // path's queue (see tail_probe), and so does the local ACK timeout, with or without an RTT
  // sample or the tail probe (tail_probe_min 0: the early timer goes back as before).
  const bool probes = qp.tuning->timer_probes;
  if (req.selective()) return false;
  if (!timeout && (srtt_ == 0 || qp.tuning->tail_probe_min <= 0)) return false;
  if (!probes && (!probed_ || window().queue_high() || window().congested(now))) return false;  // the go-back as before
  if (!req.probe_oldest(qp, psn)) return false;
  oldest_probe_sent(qp, psn);
  ++early_backoff_;
  probe_sent(req, now);
  const Nanos ack_timer = retransmit_at_;  // a probe must not postpone the QP's failure
  arm_early(qp, now);
  retransmit_at_ = ack_timer;
  return true;
}

std::uint32_t Completer::resume_psn(const QpContext& qp) const {
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (w.state == WqeState::Done) continue;
    if (w.state == WqeState::InFlight && w.is_read()) return psn_add(w.first_psn, w.read_packets_received);
    break;
  }
  return una_;
}

CompleterOutcome Completer::fail_at(QpContext& qp, Requester& req, std::uint32_t psn, ibv_wc_status status) {
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& w = qp.sq.at(i);
    if (w.state == WqeState::Done) continue;
    if (w.state == WqeState::InFlight && psn_diff(psn, w.first_psn) >= 0 && psn_diff(psn, w.last_psn()) <= 0) {
      finish(qp, req, w, status);
      return CompleterOutcome::Fatal;
    }
  }
  // No WQE holds that PSN: fail the oldest one so the error is not lost.
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::Done) {
      finish(qp, req, w, status);
      break;
    }
  }
  return CompleterOutcome::Fatal;
}

CompleterOutcome Completer::on_response(QpContext& qp, Requester& req, const Packet& pkt, Nanos now) {
  if (probe_sample_at_ != kNever) [[unlikely]]
    spurious_probe_answer(qp, pkt, now);
  // A plain ACK (a SACK has an opcode of its own): the straight path, which tells whether it applies.
  CompleterOutcome straight;
  if (pkt.bth.opcode == raw(Opcode::RcAck) && qp.tuning->straight_acks && straight_ack(qp, req, pkt, now, &straight)) [[likely]]
    return straight;
  return on_other_response(qp, req, pkt, now);
}

CompleterOutcome Completer::on_other_response(QpContext& qp, Requester& req, const Packet& pkt, Nanos now) {
  // A deferred ICRC is settled before anything acts on the response, but for the READ response
  // MIDDLE the oldest READ expects next: that one is placed while it is settled.
  bool placed = false;
  if (pkt.icrc_status == IcrcStatus::Deferred) {
    PayloadDest dest;
    if (pkt.info->operation == Operation::ReadResponse && read_destination(qp, pkt, &dest) &&
        placement_ahead_allowed(pkt, true, dest)) {
      if (!place_payload(pkt, dest, qp.tuning->crc, true)) return CompleterOutcome::Corrupted;
      placed = true;
    } else if (!settle_icrc(pkt, qp.tuning->crc)) {
      return CompleterOutcome::Corrupted;
    }
  }
  const std::uint32_t psn = pkt.psn();
  switch (classify_psn(psn, una_, req.sent_end_psn())) {
    case ResponsePsnClass::Ghost:
    case ResponsePsnClass::Old:
      qp.counters.inc(Counter::GhostResponses);
      return CompleterOutcome::Nothing;
    case ResponsePsnClass::Valid: break;
  }
  peer_answered_ = true;
  CompleterOutcome out;
  switch (pkt.info->operation) {
    case Operation::ReadResponse: out = on_read_response(qp, req, pkt, now, placed); break;
    case Operation::AtomicAck: out = on_atomic_ack(qp, req, pkt, now); break;
    default: out = on_aeth(qp, req, pkt, now); break;
  }
  req.set_una(una_);
  return out;
}

CompleterOutcome Completer::on_aeth(QpContext& qp, Requester& req, const Packet& pkt, Nanos now) {
  const std::uint32_t psn = pkt.psn();
  const Syndrome syn{pkt.ext.aeth.syndrome};
  const std::uint32_t before = una_;
  std::uint32_t retry_psn = 0;
  // Nothing outstanding, or a NAK for a PSN already acknowledged (a NAK names a request not yet
  // completed): it answers nothing here. An ACK for una - 1 with requests outstanding is an
  // ordinary repeated ACK (a responder acknowledges a duplicate again, C9-105).
  if (!psn_before(una_, req.sent_end_psn()) || (syn.type() != AckType::Ack && psn_before(psn, una_))) {
    qp.counters.inc(Counter::UnsolicitedResponses);
    return CompleterOutcome::Nothing;
  }
  switch (syn.type()) {
    case AckType::Ack: {
      qp.counters.inc(Counter::AcksReceived);
      consecutive_rnr_ = 0;
      // The oldest packet's probe acknowledged alone: the responder took it as new, so it had
      // lost it and dropped everything sent after it (go-back-N); those go again now. A
      // responder that had it answers a duplicate with its latest PSN (C9-105), further on.
      // (Selective repeat: a SACK says the responder holds packets after it, so not a hole of all.)
      const bool probed_hole = oldest_probed_ && before == oldest_probe_psn_ && psn == oldest_probe_psn_ && !is_sack(pkt);
      const bool hole_after_timeout = probed_hole && timeout_probed_;
      const auto r = acknowledge_before(qp, req, psn_next(psn), &retry_psn);
      if (una_ != before) progressed(qp, req, now);
      if (r == AckResult::ResponseLost) return retry(qp, req, retry_psn, now, false);
      if (probed_hole && una_ == psn_next(psn) && psn_before(una_, req.sent_end_psn())) {
        qp.counters.inc(Counter::ProbedHoles);
        return retry(qp, req, una_, now, false, hole_after_timeout);
      }
      if (is_sack(pkt)) {
        on_sack(qp, req, pkt, now);
        return CompleterOutcome::Progress;
      }
      return una_ != before ? CompleterOutcome::Progress : CompleterOutcome::Nothing;
    }
    case AckType::RnrNak: {
      qp.counters.inc(Counter::RcvdRnrErr);
      const auto r = acknowledge_before(qp, req, psn, &retry_psn);
      if (una_ != before) progressed(qp, req, now);
      const std::uint32_t resume = r == AckResult::ResponseLost ? retry_psn : psn;
      if (qp.cfg.rnr_retry != 7) {
        if (rnr_retry_left_ == 0) {
          qp.counters.inc(Counter::RetryRnrExceededErr);
          return fail_at(qp, req, resume, IBV_WC_RNR_RETRY_EXC_ERR);
        }
        --rnr_retry_left_;
      }
      Nanos wait = static_cast<Nanos>(syn.rnr_wait_ns());
      if (qp.tuning->rnr_exponential_backoff) wait <<= std::min<std::uint32_t>(consecutive_rnr_, 10);
      ++consecutive_rnr_;
      qp.counters.inc(Counter::RnrWaits);
      rnr_at_ = now + wait;
      retrying_ = false;
      retransmit_at_ = kNever;
      early_at_ = kNever;
      req.rewind(qp, resume);
      req.enter_rnr_wait(rnr_at_);
      return CompleterOutcome::Progress;
    }
    case AckType::Nak: {
      qp.counters.inc(Counter::NaksReceived);
      const auto r = acknowledge_before(qp, req, psn, &retry_psn);
      if (una_ != before) progressed(qp, req, now);
      if (syn.nak_code() == NakCode::PsnSequenceError) {
        qp.counters.inc(Counter::RcvdSeqErr);
        return retry(qp, req, r == AckResult::ResponseLost ? retry_psn : psn, now, false);
      }
      return fail_at(qp, req, r == AckResult::ResponseLost ? retry_psn : psn, nak_status(syn.nak_code()));
    }
    case AckType::Reserved: break;
  }
  qp.counters.inc(Counter::GhostResponses);
  return CompleterOutcome::Nothing;
}

// Inline in on_response, its only caller (every plain ACK).
[[gnu::always_inline]] inline bool Completer::straight_ack(QpContext& qp, Requester& req, const Packet& pkt, Nanos now,
                                                           CompleterOutcome* out) {
  // What on_response and on_aeth would find first, read without changing anything: an ICRC
  // already checked, a PSN they take (valid, with requests outstanding), an ACK syndrome, no
  // probe of the oldest packet whose answer on_aeth judges (probed_hole), and a SEND or WRITE in
  // flight at the head. (An early retransmission's answer is progressed()'s to judge, as ever.)
  const std::uint32_t psn = pkt.psn();
  const std::uint32_t sent_end = req.sent_end_psn();
  if (pkt.icrc_status == IcrcStatus::Deferred || !Syndrome{pkt.ext.aeth.syndrome}.is_ack() || oldest_probed_ ||
      qp.sq.empty() || classify_psn(psn, una_, sent_end) != ResponsePsnClass::Valid || !psn_before(una_, sent_end)) [[unlikely]]
    return false;
  SendWqe* w = &qp.sq.at(qp.sq.head());
  if (w->state != WqeState::InFlight || w->needs_response_data()) [[unlikely]]
    return false;
  peer_answered_ = true;
  qp.counters.inc(Counter::AcksReceived);
  consecutive_rnr_ = 0;
  const std::uint32_t end = psn_next(psn);
  const std::uint32_t before = una_;
  if (psn_after(end, acked_end_)) acked_end_ = end;
  // acknowledge_before's walk for SENDs and WRITEs in flight: each one the ACK covers finishes
  // (finish() holds no READ credit for them), una stops inside one it covers in part or before
  // one not sent. Anything else (a READ, an atomic, a WQE already done) and the rest is
  // acknowledge_before's: it passes over the WQEs finished here as it would over its own.
  AckResult r = AckResult::Ok;
  std::uint32_t retry_psn = 0;
  for (std::uint64_t i = qp.sq.head();;) {
    const std::uint32_t last = w->last_psn();
    if (psn_diff(last, end) >= 0) {
      if (psn_after(end, una_)) una_ = end;
      break;
    }
    w->state = WqeState::Done;
    w->status = IBV_WC_SUCCESS;
    una_ = psn_next(last);
    if (++i == qp.sq.tail()) break;
    w = &qp.sq.at(i);
    if (w->state == WqeState::Posted) break;
    if (w->state != WqeState::InFlight || w->needs_response_data()) [[unlikely]] {
      r = acknowledge_before(qp, req, end, &retry_psn);
      break;
    }
  }
  if (una_ != before) [[likely]]
    progressed_inline(qp, req, now);
  if (r == AckResult::ResponseLost) [[unlikely]]
    *out = retry(qp, req, retry_psn, now, false);
  else
    *out = una_ != before ? CompleterOutcome::Progress : CompleterOutcome::Nothing;
  req.set_una(una_);
  return true;
}

Completer::ReadPlacement Completer::read_placement(const QpContext& qp, const SendWqe& w, const Packet& pkt) {
  const Position pos = pkt.info->position;
  const bool starts = pos == Position::First || pos == Position::Only;
  ReadPlacement at;
  at.offset = std::uint64_t{w.read_packets_received} * qp.cfg.pmtu;
  at.remaining = w.length - at.offset;
  at.ends = pos == Position::Last || pos == Position::Only;
  const std::uint64_t want = at.ends ? at.remaining : qp.cfg.pmtu;
  // After a READ was re-issued from the middle of its message, the responder may answer it as a
  // new request (FIRST/ONLY, as the IBA describes) or continue its original response (MIDDLE/
  // LAST: Linux rxe replays its saved response state). Both carry the bytes at this offset.
  const bool resumed = w.read_expect_first && w.read_packets_received > 0;
  at.ok = (resumed || starts == w.read_expect_first) && pkt.payload_length == want &&
          !(at.ends && at.remaining > qp.cfg.pmtu) && !(!at.ends && at.remaining <= qp.cfg.pmtu);
  return at;
}

bool Completer::read_destination(const QpContext& qp, const Packet& pkt, PayloadDest* dest) const {
  if (pkt.payload_length == 0) return false;
  const SendWqe* w = nullptr;
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail() && w == nullptr; ++i)
    if (qp.sq.at(i).state != WqeState::Done) w = &qp.sq.at(i);
  if (w == nullptr || w->state != WqeState::InFlight || !w->is_read() ||
      pkt.psn() != psn_add(w->first_psn, w->read_packets_received))
    return false;
  const ReadPlacement at = read_placement(qp, *w, pkt);
  if (!at.ok) return false;
  *dest = segment_dest(qp.send_segs(*w), w->num_seg, at.offset, pkt.payload_length,
                       at.ends ? 0 : std::min<std::uint64_t>(qp.cfg.pmtu, at.remaining - pkt.payload_length));
  return true;
}

CompleterOutcome Completer::on_read_response(QpContext& qp, Requester& req, const Packet& pkt, Nanos now, bool placed) {
  const std::uint32_t psn = pkt.psn();
  const std::uint32_t before = una_;
  // A READ response acknowledges every request before it.
  std::uint32_t retry_psn = 0;
  if (acknowledge_before(qp, req, psn, &retry_psn) == AckResult::ResponseLost) {
    if (una_ != before) progressed(qp, req, now);
    return retry(qp, req, retry_psn, now, false);
  }
  if (una_ != before) progressed(qp, req, now);
  SendWqe* w = nullptr;
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& c = qp.sq.at(i);
    if (c.state == WqeState::InFlight) {
      w = &c;
      break;
    }
  }
  // ATOMIC_WRITE and FLUSH are answered by a zero-length READ response ONLY at their PSN
  // (selective repeat: perhaps behind a READ still missing responses).
  if (req.selective())
    for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
      SendWqe& c = qp.sq.at(i);
      if (c.state == WqeState::InFlight && (c.is_atomic_write() || c.is_flush()) && psn == c.first_psn) {
        w = &c;
        break;
      }
    }
  if (w != nullptr && (w->is_atomic_write() || w->is_flush()) && psn == w->first_psn) {
    if (pkt.info->position != Position::Only || pkt.payload_length != 0) {
      qp.counters.inc(Counter::GhostResponses);
      return retry(qp, req, psn, now, false);
    }
    if (req.selective()) return finish_in_turn(qp, req, *w, psn, now);
    una_ = psn_next(psn);
    finish(qp, req, *w, IBV_WC_SUCCESS);
    progressed(qp, req, now);
    return CompleterOutcome::Progress;
  }
  if (req.selective()) {
    // Selective repeat: the READ this response belongs to need not be the oldest one.
    for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
      SendWqe& c = qp.sq.at(i);
      if (c.state == WqeState::InFlight && c.is_read() && psn_diff(psn, c.first_psn) >= 0 && psn_diff(psn, c.last_psn()) <= 0) {
        if (req.tracks_read(c)) return on_tracked_read_response(qp, req, c, pkt, now, placed);
        break;
      }
    }
  }
  if (w == nullptr || !w->is_read() || psn_diff(psn, w->first_psn) < 0 ||
      psn_diff(psn, w->last_psn()) > 0) {
    qp.counters.inc(Counter::UnsolicitedResponses);  // no READ waits for this PSN
    return CompleterOutcome::Nothing;
  }
  const std::uint32_t expected = psn_add(w->first_psn, w->read_packets_received);
  const std::int32_t d = psn_diff(psn, expected);
  if (d < 0) {  // a duplicate of something already placed
    qp.counters.inc(Counter::GhostResponses);
    return CompleterOutcome::Nothing;
  }
  if (d > 0) return retry(qp, req, expected, now, false);  // responses in between were lost

  const ReadPlacement at = read_placement(qp, *w, pkt);
  if (!at.ok) {
    qp.counters.inc(Counter::GhostResponses);
    return retry(qp, req, expected, now, false);
  }
  const bool ends = at.ends;
  if (!placed)
    place_payload(pkt,
                  segment_dest(qp.send_segs(*w), w->num_seg, at.offset, pkt.payload_length,
                               ends ? 0 : std::min<std::uint64_t>(qp.cfg.pmtu, at.remaining - pkt.payload_length)),
                  qp.tuning->crc, false);
  ++w->read_packets_received;
  w->read_expect_first = false;
  una_ = psn_next(psn);
  if (ends) finish(qp, req, *w, IBV_WC_SUCCESS);
  progressed(qp, req, now);
  return CompleterOutcome::Progress;
}

CompleterOutcome Completer::on_atomic_ack(QpContext& qp, Requester& req, const Packet& pkt, Nanos now) {
  const std::uint32_t psn = pkt.psn();
  const std::uint32_t before = una_;
  std::uint32_t retry_psn = 0;
  if (acknowledge_before(qp, req, psn, &retry_psn) == AckResult::ResponseLost) {
    if (una_ != before) progressed(qp, req, now);
    return retry(qp, req, retry_psn, now, false);
  }
  SendWqe* w = nullptr;
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& c = qp.sq.at(i);
    // Selective repeat: the atomic may wait behind a READ still missing responses.
    if (c.state == WqeState::InFlight && (!req.selective() || (c.is_atomic() && c.first_psn == psn))) {
      w = &c;
      break;
    }
  }
  if (w == nullptr || !w->is_atomic() || w->first_psn != psn) {
    qp.counters.inc(Counter::UnsolicitedResponses);  // no atomic waits for this PSN
    if (una_ != before) progressed(qp, req, now);
    return una_ != before ? CompleterOutcome::Progress : CompleterOutcome::Nothing;
  }
  const std::uint64_t original = pkt.ext.atomic_ack.original_data.get();
  copy_to_segments(qp.send_segs(*w), w->num_seg, 0, reinterpret_cast<const std::byte*>(&original), sizeof original);
  if (req.selective()) return finish_in_turn(qp, req, *w, psn, now);
  una_ = psn_next(psn);
  finish(qp, req, *w, IBV_WC_SUCCESS);
  progressed(qp, req, now);
  return CompleterOutcome::Progress;
}

bool Completer::defer_past_own_stall(QpContext& qp, Nanos now) {
  // While our own worker stood still (the lcore descheduled on a busy host; docs/loss.md part 1,
  // "Session 20") none of our timers ran: the early timer's probes, which find a loss (or show
  // there was none) well before the timeout, never went, and a stall longer than the timeout
  // woke the worker with both due, the timeout first: a retry used and the window cut as for a
  // dead path. Moved on by the part of the stall after its start, the timer expires once the QP
  // has had its whole timeout of running time, the probes first (the worker reads its queue to
  // the end before it runs timers again: dp::Worker::timers_due). Once per start, so that a loop
  // whose every poll is a stall still times out a dead peer, at most one stall later per retry.
  const OwnStall* s = qp.own_stall;
  if (ack_timer_moved_ || s == nullptr || rto_ == kNever) return false;
  const Nanos started = retransmit_at_ - rto_;
  // The stall lies inside the timer's run: after its start, before its expiry (a deadline that
  // passed before the stall began was due while the worker ran).
  if (s->end <= started || s->start >= retransmit_at_) return false;
  ack_timer_moved_ = true;
  retransmit_at_ += s->end - std::max(s->start, started);
  return retransmit_at_ > now;
}

CompleterOutcome Completer::on_timer(QpContext& qp, Requester& req, Nanos now) {
  CompleterOutcome out = CompleterOutcome::Nothing;
  if (rnr_at_ <= now) {
    rnr_at_ = kNever;
    req.leave_rnr_wait();
    arm_timers(qp, now);
    out = CompleterOutcome::Progress;
  }
  const bool outstanding = psn_before(una_, req.sent_end_psn());
  if (retransmit_at_ <= now && outstanding && defer_past_own_stall(qp, now)) qp.counters.inc(Counter::AckTimeoutsDeferred);
  if (retransmit_at_ <= now) {
    retransmit_at_ = kNever;
    early_at_ = kNever;
    if (outstanding) out = on_local_ack_timeout(qp, req, now);
  } else if (early_at_ <= now) {
    early_at_ = kNever;
    const std::uint32_t from = resume_psn(qp);
    if (outstanding && rnr_at_ == kNever && !psn_after(req.send_pos(), from)) {
      // Nothing sent since the last go-back (the window holds the resend back): resending
      // from the same place would start nothing new.
      qp.counters.inc(Counter::DuplicateLossSignals);
      arm_early(qp, now);
      out = CompleterOutcome::Progress;
    } else if (outstanding && rnr_at_ == kNever && probe(qp, req, from, now, false)) {
      const Nanos ack_timer = retransmit_at_;  // a probe must not postpone the QP's failure
      arm_early(qp, now);
      retransmit_at_ = ack_timer;
      out = CompleterOutcome::Progress;
    } else if (outstanding && rnr_at_ == kNever) {
      qp.counters.inc(Counter::EarlyRetransmits);
      loss_event(qp, req, now, false);
      ++early_backoff_;
      // The local ACK timer keeps running from the last progress: early retransmissions must
      // not postpone the QP's failure on a dead path.
      const Nanos ack_timer = retransmit_at_;
      go_back(qp, req, from, now, true);
      early_sent_at_ = now;
      retransmit_at_ = ack_timer;
      arm_early(qp, now);
      out = CompleterOutcome::Progress;
    }
  }
  req.set_una(una_);
  return out;
}

void Completer::retire(QpContext& qp, Requester& req) {
  while (!qp.sq.empty()) {
    SendWqe& w = qp.sq.at(qp.sq.head());
    if (w.state != WqeState::Done) break;
    if (w.signaled || w.status != IBV_WC_SUCCESS) {
      if (w.status != IBV_WC_SUCCESS) [[unlikely]]
        qp.counters.inc(Counter::WcErrors);
      // Written in place in the CQ's ring (CompletionQueue::emplace): no copy.
      if (ibv_wc* wc = qp.send_cq ? qp.send_cq->emplace() : nullptr) {
        wc->wr_id = w.wr_id;
        wc->status = w.status;
        wc->opcode = wc_opcode(w.opcode);
        wc->byte_len = w.length;
        wc->qp_num = qp.cfg.qpn;
      }
    }
    if (w.rd_credit_held) [[unlikely]] {
      w.rd_credit_held = false;
      req.release_rd_atomic();
    }
    if (req.cursor_ == qp.sq.head()) ++req.cursor_;
    qp.sq.pop();
  }
}

void Completer::flush(QpContext& qp, Requester& req) {
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::Done) finish(qp, req, w, IBV_WC_WR_FLUSH_ERR);
  }
  retransmit_at_ = kNever;
  rnr_at_ = kNever;
  early_at_ = kNever;
  retire(qp, req);
}

std::string to_string(CompleterOutcome o) {
  switch (o) {
    case CompleterOutcome::Nothing: return "nothing";
    case CompleterOutcome::Progress: return "progress";
    case CompleterOutcome::Fatal: return "fatal";
    case CompleterOutcome::Corrupted: return "corrupted";
  }
  return "unknown";
}

std::string to_string(ResponsePsnClass c) {
  switch (c) {
    case ResponsePsnClass::Valid: return "valid";
    case ResponsePsnClass::Old: return "old";
    case ResponsePsnClass::Ghost: return "ghost";
  }
  return "unknown";
}

}  // namespace roce::rdma
