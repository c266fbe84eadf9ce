// Completer: consumes ACKs, NAKs, READ responses and atomic ACKs. It retires send WQEs in
// posting order (cumulative and implicit acknowledgement), places READ and atomic results,
// owns the retransmission and RNR timers and asks the requester to go back N.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "lib/rdma/payload.hpp"
#include "lib/rdma/qp_context.hpp"
#include "lib/rdma/requester.hpp"
#include "lib/rdma/send_window.hpp"
#include "protocol/packet.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

enum class CompleterOutcome : std::uint8_t {
  Nothing,   // dropped or duplicate: no state changed
  Progress,  // something was acknowledged, placed or retried
  Fatal,     // a WQE failed: the QP must enter ERR
  Corrupted, // the deferred ICRC failed: nothing changed but the bytes of a MIDDLE placed ahead
};

// What to do with a response PSN relative to the outstanding window: a pure decision.
enum class ResponsePsnClass : std::uint8_t { Valid, Old, Ghost };
ResponsePsnClass classify_response_psn(std::uint32_t psn, std::uint32_t una, std::uint32_t sent_end);

class Completer {
 public:
  void start(const QpContext& qp);

  CompleterOutcome on_response(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now);
  CompleterOutcome on_timer(QpContext& qp, Requester& req, Nanos now);
  // The requester sent a packet: make sure the retransmission timer runs. The early timer a
  // packet asking for an ACK restarts is armed once, by end_send_turn: every packet of a turn
  // has the same `now`, so arming it per packet gave the same deadline at several times the cost.
  void on_request_sent(const QpContext& qp, const Requester& req, Nanos now);
  // The same once for a run of request frames (QueuePair::build_run), each asking for an ACK:
  // `first_sent_end` one past the first frame's PSN, `end` one past the last one's.
  void on_run_sent(const QpContext& qp, std::uint32_t first_sent_end, std::uint32_t end, Nanos now);
  // The QP's turn at the transmit loop is over (Engine::transmit): the early timer deferred by
  // on_request_sent is armed now.
  void end_send_turn(const QpContext& qp, Nanos now);

  // Retires finished WQEs at the head of the SQ in order, writing CQEs.
  void retire(QpContext& qp, Requester& req);
  // Moves every unfinished send WQE to `status` (the first) and IBV_WC_WR_FLUSH_ERR (the rest).
  void flush(QpContext& qp, Requester& req);

  // Where a READ response's payload goes when it is the one the oldest unfinished WQE, a READ,
  // expects next (the only response placed ahead of its deferred ICRC, if payload.hpp allows).
  // Reads state only; false if it is not that response.
  bool read_destination(const QpContext& qp, const proto::Packet& pkt, PayloadDest* dest) const;

  Nanos deadline() const { return std::min({retransmit_at_, rnr_at_, early_at_}); }
  Nanos retransmit_deadline() const { return retransmit_at_; }
  std::uint32_t una() const { return una_; }
  const SendWindow& window() const { return shared_window_ ? *shared_window_ : own_window_; }
  SendWindow& window() { return shared_window_ ? *shared_window_ : own_window_; }
  // The window shared with the other QPs on this QP's path (nullptr: a window of its own).
  void share_window(SendWindow* w) { shared_window_ = w; }
  Nanos srtt() const { return srtt_; }
  Nanos rttvar() const { return rttvar_; }
  // While the QP's share of the window is below one packet: the spacing between request packets, else 0.
  Nanos window_spacing() const { return window().spacing(srtt_ ? srtt_ : window().min_rtt()); }

 private:
  enum class AckResult : std::uint8_t { Ok, ResponseLost };
  // Where the READ response the WQE expects next lands, and whether this packet is it.
  struct ReadPlacement {
    bool ok = false;
    bool ends = false;
    std::uint64_t offset = 0;
    std::uint64_t remaining = 0;
  };
  static ReadPlacement read_placement(const QpContext& qp, const SendWqe& w, const proto::Packet& pkt);
  AckResult acknowledge_before(QpContext& qp, Requester& req, std::uint32_t end_psn, std::uint32_t* retry_psn);
  void finish(QpContext& qp, Requester& req, SendWqe& w, ibv_wc_status status);
  // `cut_as_timeout`: the loss was found by the answer to a local ACK timeout's probe: the window
  // is cut as for the timeout itself.
  CompleterOutcome retry(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now, bool timeout, bool cut_as_timeout = false);
  // The local ACK timer expired: a retry (IBA), spent on a probe where one fits.
  CompleterOutcome on_local_ack_timeout(QpContext& qp, Requester& req, Nanos now);
  // A timer's one packet instead of a window (TransportTuning::timer_probes): go-back-N's tail
  // probe or oldest packet's probe, selective repeat's probe of the newest or oldest unreported
  // packet. False: none fits (a READ or atomic waits): the go-back.
  bool probe(QpContext& qp, Requester& req, std::uint32_t from, Nanos now, bool timeout);
  // What every probe (one packet a timer resent) leaves: no RTT sample from its answer.
  void probe_sent(const Requester& req, Nanos now);
  // The oldest unacknowledged packet went alone (both modes): its answer tells a hole from a stall.
  void oldest_probe_sent(QpContext& qp, std::uint32_t psn);
  // `timer`: a timer, not a NAK, found the loss; with selective repeat only what no SACK
  // reported is resent then.
  void go_back(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now, bool early = false, bool timer = false);
  // The early timer's first try on a go-back-N QP: resend the newest packet alone (false: it cannot).
  bool tail_probe(QpContext& qp, Requester& req, Nanos now);
  // The early timer's later tries on a go-back-N QP whose tail probe drew no answer: resend the
  // oldest unacknowledged packet alone (false: it cannot, a READ or atomic; the go-back then).
  // `timeout`: the local ACK timer's probe (with timer_probes, whether or not a tail probe went first).
  bool oldest_probe(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now, bool timeout);
  // A SACK's selective part: marks what it shows missing for one resend each.
  void on_sack(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now);
  CompleterOutcome fail_at(QpContext& qp, Requester& req, std::uint32_t psn, ibv_wc_status status);
  CompleterOutcome on_read_response(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now, bool placed);
  // Selective repeat: a response of a READ whose responses are tracked one by one
  // (completer_read_holes.cpp): placed where its PSN puts it; what it shows missing is asked for.
  CompleterOutcome on_tracked_read_response(QpContext& qp, Requester& req, SendWqe& w, const proto::Packet& pkt, Nanos now,
                                            bool placed);
  // Selective repeat: a response at `psn` acknowledged everything before it (and `psn` itself):
  // completes in order what it can, una stopping at a tracked READ still missing responses.
  CompleterOutcome acknowledge_in_turn(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now);
  // ... after `w` (an atomic, ATOMIC_WRITE or FLUSH answered at `psn`) finished, perhaps
  // behind such a READ.
  CompleterOutcome finish_in_turn(QpContext& qp, Requester& req, SendWqe& w, std::uint32_t psn, Nanos now) {
    finish(qp, req, w, IBV_WC_SUCCESS);
    return acknowledge_in_turn(qp, req, psn, now);
  }
  CompleterOutcome on_atomic_ack(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now);
  CompleterOutcome on_aeth(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now);
  // on_response for every response the straight path (straight_ack) does not take: out of line,
  // so that the plain ACK's code in on_response is a few adjacent cache lines (docs/perf-changes.md
  // section 88).
  [[gnu::noinline]] CompleterOutcome on_other_response(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now);
  // An RC ACK (no NAK, no SACK) whose PSN on_response would take, with no probe of the oldest
  // packet awaiting its answer, and an in-flight SEND or WRITE at the head of the SQ:
  // what on_aeth does, without its general walk (TransportTuning::straight_acks). False, with
  // nothing changed, for any other response.
  bool straight_ack(QpContext& qp, Requester& req, const proto::Packet& pkt, Nanos now, CompleterOutcome* out);
  void progressed(QpContext& qp, const Requester& req, Nanos now);
  // progressed's body: inline in straight_ack (every ACK at queue depth 1), called through
  // progressed everywhere else.
  void progressed_inline(QpContext& qp, const Requester& req, Nanos now);
  // Oldest PSN to resend from: una, or where the oldest outstanding READ's data stopped.
  std::uint32_t resume_psn(const QpContext& qp) const;
  void arm_timers(const QpContext& qp, Nanos now);  // local ACK timer and early timer
  // on_request_sent and on_run_sent: packets went, the last of them asking for an ACK if
  // `asked` (up to `ask_end`); `sent_end` is where the first of them left the sent PSNs.
  void requests_sent(const QpContext& qp, bool asked, std::uint32_t ask_end, std::uint32_t sent_end, Nanos now);
  // The local ACK timer only; a fresh start, which may again be moved past a stall of our own.
  void arm_retransmit(Nanos now) {
    retransmit_at_ = rto_ != kNever ? now + rto_ : kNever;
    ack_timer_moved_ = false;
  }
  // The local ACK timer expired (retransmit_at_ <= now) in a stall of our own worker
  // (QpContext::own_stall): moves it on by the part of the stall it ran through, once per
  // start. True if that left it in the future: no timeout, no retry used.
  bool defer_past_own_stall(QpContext& qp, Nanos now);
  void arm_early(const QpContext& qp, Nanos now);   // early timer only, never past the other
  void take_rtt_sample(const QpContext& qp, Nanos now, bool first_copy_answered);
  void smooth_rtt(Nanos r);  // RFC 6298's srtt and rttvar
  // A response while a tail probe's ambiguous answer is watched (probe_sample_at_): a second
  // ACK of the probed packet makes the round trip a sample after all.
  void spurious_probe_answer(QpContext& qp, const proto::Packet& pkt, Nanos now);
  // A go-back-N from `psn` is about to start: whether it is a new loss event (cutting the
  // window) or a signal for a range already being resent (starting nothing).
  bool duplicate_loss_signal(const Requester& req, std::uint32_t psn) const;
  void loss_event(QpContext& qp, const Requester& req, Nanos now, bool timeout);
  bool in_recovery() const { return recovering_ && proto::psn_before(una_, recovery_end_); }
  // Selective repeat's probe after the tail probe's short wait: switched on, and SACK-reported
  // losses frequent (TransportTuning::selective_tail_probe; docs/loss.md part 2).
  bool selective_probes_short(const QpContext& qp) const;
  // The probes' short wait (TransportTuning::tail_probe_floor): go-back-N's follows the path,
  // selective repeat's is max(tail_probe_min, 2 srtt). Only with an RTT sample.
  Nanos short_wait(const QpContext& qp) const;
  Nanos rto() const { return rto_; }

  // Declared in the order of use (docs/perf-changes.md section 78): the timers every transmit
  // turn and refresh read (deadline, end_send_turn) in the first cache line, what an ACK reads or
  // changes in the next two, the send window (1272 bytes) last. queue_pair_layout.cpp pins it.
  std::uint32_t una_ = 0;
  std::uint8_t retry_left_ = 7;
  std::uint8_t rnr_retry_left_ = 7;
  bool early_rearm_ = false;          // a packet of this send turn asked for an ACK: end_send_turn arms
  bool retrying_ = false;  // a go-back-N is under way and has made no progress yet
  std::uint32_t consecutive_rnr_ = 0;
  bool ack_timer_moved_ = false;  // defer_past_own_stall moved the local ACK timer since its start
  // With timer_probes, the doublings of probes that went unanswered are kept over progress until
  // an RTT sample (an ACK of a PSN sent once; Karn's rule for TCP's RTO): a peer back from a
  // stall answers its backlog an ACK at a time, each gap longer than the short wait, and every
  // gap drew a probe (tests/lib/rdma/timer_probe_test.cpp).
  bool backoff_held_ = false;
  Nanos rto_ = kNever;
  Nanos retransmit_at_ = kNever;
  Nanos rnr_at_ = kNever;

  // Early retransmission: RTT smoothed as in RFC 6298, sampled by Karn's rule (only PSNs sent
  // once: a retransmission drops the pending sample), but for one case: an ACK that comes back
  // within half a smoothed round trip of an early retransmission cannot answer it, so the first
  // copy got through and the sample stands. Dropping it there froze srtt below a round trip
  // grown by queueing, and every window after was resent.
  Nanos early_at_ = kNever;
  Nanos early_sent_at_ = kNever;      // the latest early retransmission since the last progress
  Nanos srtt_ = 0, rttvar_ = 0;
  std::uint32_t early_backoff_ = 0;   // doublings since the last progress (kept over one that answered a first copy)
  std::uint32_t sample_end_ = 0;      // the sample completes once una reaches this PSN
  std::uint32_t sample_from_ = 0;     // samples start only above: PSNs below were sampled or resent
  std::uint32_t probed_psn_ = 0;      // go-back-N: the packet the tail probe (probed_) resent
  Nanos sample_sent_at_ = kNever;     // kNever: no sample pending
  bool sample_resent_ = false;        // an early retransmission resent the sampled PSN
  bool probed_ = false;               // go-back-N: the early timer sent its tail probe since the last progress
  bool oldest_probed_ = false;        // ... and then probed the oldest packet, oldest_probe_psn_ (both modes)
  bool timeout_probed_ = false;       // ... on a local ACK timeout, since the last progress
  std::uint32_t oldest_probe_psn_ = 0;
  std::uint64_t sr_loss_at_ = 0;      // selective repeat: delivered_ at the latest SACK-reported loss
  double sr_loss_interval_ = 0;       // ... and the average interval between them (0: none yet)
  Nanos probe_sample_at_ = kNever;    // once the tail probe's answer left the RTT sample ambiguous, the sample's send time
  std::uint32_t ack_req_end_ = 0;     // one past the latest packet sent with AckReq
  std::uint32_t acked_end_ = 0;       // one past the highest PSN a response acknowledged (implicitly or not)

  // Send window (AIMD + BDP cap). A loss event covers what was sent when it started: until una
  // passes recovery_end_, further losses in that range neither cut again nor resend twice.
  SendWindow* shared_window_ = nullptr;  // owned by the engine
  std::uint32_t recovery_end_ = 0;
  bool recovering_ = false;
  bool peer_answered_ = false;        // a valid response came: the early timer may run without an RTT sample
  std::uint32_t progress_una_ = 0;    // una when the window last heard of progress
  std::uint64_t delivered_ = 0;       // packets acknowledged since start
  Nanos rate_since_ = kNever;         // the delivery rate is measured from here ...
  std::uint64_t rate_delivered_ = 0;  // ... and delivered_ then
  SendWindow own_window_;

  friend struct QueuePairLayout;  // queue_pair_layout.cpp
};

std::string to_string(CompleterOutcome o);
std::string to_string(ResponsePsnClass c);

}  // namespace roce::rdma
