// Requester: turns send queue entries into request packets. It segments by path MTU,
// assigns PSNs (a READ takes one per expected response packet), keeps the go-back-N window
// and the outstanding READ/atomic limit, and rewinds to a PSN when the completer asks.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "lib/rdma/qp_context.hpp"
#include "lib/rdma/send_window.hpp"
#include "protocol/icrc_batch.hpp"
#include "protocol/psn.hpp"
#include "protocol/sack.hpp"

namespace roce::rdma {

class Requester {
 public:
  enum class State : std::uint8_t {
    Ready,    // sends whatever the window allows
    RnrWait,  // the responder had no receive buffer: silent until the RNR timer
  };

  void start(const QpContext& qp);  // entering RTS from RTR: PSNs start at sq_psn

  // True when build_next() would produce a packet now. Inline, without the send queue walk where
  // the answer is plain: nothing past the cursor (after every ACK at queue depth 1), or a WQE not
  // yet started under it with nothing in flight and no READ/atomic credit taken (every post at
  // queue depth 1). window_allows() then holds nothing back: the WQE's PSN is una's, so neither
  // the caps, the send window, the reorder reach, the tracked READ's reach nor the READ/atomic
  // limit and fence can refuse it (a cap of 0 or below aside). Anything else walks.
  bool can_send(const QpContext& qp) const {
    if (sr_pending_ == 0 && rd_pending_ == 0) {
      if (cursor_ >= qp.sq.tail()) return false;
      if (proto::psn_diff(next_psn_, una_hint_) == 0 && inflight_rd_atomic_ == 0 &&
          qp.sq.at(cursor_).state == WqeState::Posted && static_cast<std::int32_t>(qp.tuning->max_inflight_packets) > 0)
        return qp.sends_requests() && state_ == State::Ready;
    }
    return can_send_walk(qp);
  }
  // can_send() by the send queue walk, always (the shortcut's reference in tests).
  bool can_send_walk(const QpContext& qp) const;
  // Surely nothing to send (O(1); false: perhaps something, as can_send would tell): no resend
  // or READ hole pending, and no WQE from the cursor on with a packet left. The transmit loop
  // asks it after each packet instead of a build_next that would find nothing (the WQE whose last
  // packet just went is left under the cursor, which build_next would have passed over).
  bool nothing_left(const QpContext& qp) const {
    if (sr_pending_ != 0 || rd_pending_ != 0) return false;
    if (cursor_ >= qp.sq.tail()) return true;
    if (cursor_ + 1 != qp.sq.tail()) return false;
    return all_sent(qp.sq.at(cursor_));
  }
  // Writes the next request packet into `frame`. A WQE whose local segments failed to
  // translate is finished here with IBV_WC_LOC_PROT_ERR instead (returns false, sets *failed).
  bool build_next(QpContext& qp, TxFrame& frame, bool* local_error);
  // A run of frames (QueuePair::build_run): consecutive WQEs that each go as one packet, built
  // one after the other with the windows asked once. run_room() is how many frames the in-flight
  // caps, the send window and the reorder reach let go now (none of them moves while the QP
  // transmits: each frame takes the next PSN); 0 where no run applies (not RC, not RTS, RNR
  // wait, a resend or READ hole pending). build_run() starts and writes the WQEs from the cursor
  // on into `frames` (at most run_room of them) while they fit a run (run_fits), and returns how
  // many; it stops, with that WQE unchanged, where the frame-at-a-time path (build_next) decides,
  // as it would have for it. Every frame of a run ends its message, so each asks for an ACK
  // (last_asked_ack; last_end_psn is the run's end). The cursor is left past the run's WQEs.
  std::uint32_t run_room(const QpContext& qp) const;
  std::size_t build_run(QpContext& qp, std::span<TxFrame> frames);
  // Seals the run's frames build_run() wrote with the request template: their ICRCs are
  // computed together, after all of them are written (icrc_batch.hpp). Called once the run ends,
  // before its frames go anywhere.
  void seal_run(const QpContext& qp) noexcept {
    if (run_seal_.size() != 0) run_seal_.seal(qp.request_template.icrc_flow(), qp.tuning->crc, qp.tuning->seal_clmul);
  }

  // Go-back-N: retransmit from `psn`, which lies in an in-flight WQE at or after the SQ head.
  void rewind(QpContext& qp, std::uint32_t psn);
  void enter_rnr_wait(Nanos until) {
    state_ = State::RnrWait;
    rnr_until_ = until;
  }
  void leave_rnr_wait() { state_ = State::Ready; rnr_until_ = kNever; }
  Nanos rnr_deadline() const { return rnr_until_; }
  State state() const { return state_; }

  // A WQE needing response data left flight (done or flushed).
  void release_rd_atomic() {
    if (inflight_rd_atomic_ > 0) --inflight_rd_atomic_;
  }
  std::uint32_t next_psn() const { return next_psn_; }
  std::uint32_t sent_end_psn() const { return sent_end_psn_; }
  std::uint64_t cursor() const { return cursor_; }
  // The send queue, empty, moved its indices on (WorkQueue::restart_at_first_slot): the cursor,
  // which stood at its tail, stands there again.
  void follow_restarted_queue(const QpContext& qp) { cursor_ = qp.sq.tail(); }
  // The packet build_next() wrote last: whether it set AckReq, and one past its PSNs.
  bool last_asked_ack() const { return last_asked_ack_; }
  std::uint32_t last_end_psn() const { return last_end_psn_; }
  // build_next() finished local operations (LOCAL_INV, BIND_MW): their WQEs may be retired.
  bool take_local_done() {
    const bool d = local_done_;
    local_done_ = false;
    return d;
  }
  // One past the last PSN (re)sent since the latest rewind: where the resend has got to.
  std::uint32_t send_pos() const { return send_pos_; }
  // Packets the send window lets this QP have in flight.
  std::uint32_t window_limit() const { return window_ ? window_->limit() : UINT32_MAX; }
  std::uint32_t window_ack_spacing() const { return window_ ? window_->ack_spacing() : UINT32_MAX; }
  // Go-back-N's packets per transmit call while its in-flight cap is small
  // (TransportTuning::split_small_window; WindowTuning::bdp_cap_split, while the BDP cap bounds
  // the QP): the cap over small_window_parts (bdp_cap_parts), rounded up; UINT32_MAX otherwise (neither applies,
  // selective repeat, UC and UD, or that part not below tx_quantum). Also the most packets sent
  // without asking for an ACK then.
  std::uint32_t turn_limit(const QpContext& qp) const;
  // A transmit turn of this QP begins (Engine::transmit): WindowTuning::bdp_cap_split_adaptive's count.
  void note_turn(const QpContext& qp);
  void use_window(const SendWindow* w) { window_ = w; }
  // Selective repeat (requester_selective.cpp; docs/loss.md, part 2).
  bool selective() const { return sr_window_ != 0; }
  // A SACK from a responder expecting `epsn`: marks the request packets it shows missing below
  // the highest one it holds for one resend each (a resent packet lost again is resent once more when the SACK holds a packet sent after it). Returns how many were newly marked; *first the oldest.
  std::uint32_t on_sack(const QpContext& qp, std::uint32_t epsn, const proto::SackBitmap& sacked, std::uint32_t* first);
  // What a timer's resend_unsacked() marked.
  enum class TimerResend : std::uint8_t {
    None,       // nothing: the oldest unfinished WQE waits for response data (go-back-N re-asks)
    ReadHoles,  // only a tracked READ's missing responses
    Newest,     // a probe: the newest request packet no SACK reported, alone
    Oldest,     // a probe: the oldest one, alone (the newest's probe drew no answer)
    All,        // everything unreported (`probes_only` false and the probe unanswered)
  };
  // A timer fired: marks the newest request packet no SACK reported for a resend (a probe whose
  // answer names what is missing); if the timer before probed the same packet and nothing
  // answered, the oldest unreported one instead (*probe_psn: the probed PSN), or with
  // `probes_only` false (TransportTuning::timer_probes off) everything unreported. None (nothing
  // marked) when the oldest unfinished WQE waits for response data: go-back-N re-asks for it.
  TimerResend resend_unsacked(const QpContext& qp, bool probes_only, std::uint32_t* probe_psn);
  std::uint32_t resends_pending() const { return sr_pending_; }
  // Request packets past una that the latest SACK showed held by the responder: delivered, out
  // of the network, so the in-flight caps and the send window do not count them (TCP's "pipe";
  // IRN counts what is outstanding in the network). The reorder reach (una + the window) still
  // counts every PSN: the responder holds no further. 0 on a go-back-N QP. Kept, not counted
  // per call (two or three calls a packet sent): counted again when a SACK comes (on_sack) and
  // when una moves (set_una) while it is not 0.
  std::uint32_t held_ahead() const { return held_ahead_; }
  // held_ahead() counted from the latest SACK's bits at or after una, as it is kept.
  std::uint32_t held_ahead_counted() const;
  // Go-back-N's tail loss probe: the newest request packet goes again alone, asking for an ACK.
  // False (nothing changed) when that packet belongs to a READ or atomic (the responder would
  // execute it again) or a resend has not reached the newest packet yet.
  bool probe_newest(QpContext& qp);
  // After an unanswered tail probe: the packet `psn` (the oldest unacknowledged) goes again
  // alone, asking for an ACK, while the resend position stays where it is. False (nothing
  // changed) for a READ or atomic packet.
  bool probe_oldest(QpContext& qp, std::uint32_t psn);

  // Selective READ responses (requester_read_holes.cpp; docs/loss.md, part 2, "READ
  // responses"): a READ of at most kSackSpan packets on a selective repeat QP places responses
  // out of order and asks for each missing range with a READ request of its own.
  bool tracks_read(const SendWqe& w) const {
    return sr_window_ != 0 && w.is_read() && w.npackets <= proto::kSackSpan && !w.read_in_order;
  }
  // How a response at `psn` of tracked READ `w` is taken. Arrived: new, to be placed.
  enum class ReadArrival : std::uint8_t { Arrived, Duplicate };
  // Records response `psn` of `w` as placed; *asked_tx: the transmission that asked for it (0:
  // the READ's own request).
  ReadArrival on_read_arrival(SendWqe& w, std::uint32_t psn, std::uint32_t* asked_tx);
  // Marks for a READ request of their own the responses of `w` below index `below` that did not
  // arrive and were not asked for, or were asked for by a transmission at or before `lost_tx`
  // (0: none; their answer came out of order, so they were lost again); with `only_asked`, only
  // those (the READ's own stream may still be on its way). Returns how many.
  std::uint32_t ask_read_holes(const SendWqe& w, std::uint32_t below, std::uint32_t lost_tx, bool only_asked = false);
  // Moves read_packets_received over the responses placed in sequence.
  void advance_read(SendWqe& w) const;
  std::uint32_t read_holes_pending() const { return rd_pending_; }

  // SQD is reached once no started WQE is unfinished (none in flight).
  bool drained(const QpContext& qp) const;

 private:
  bool window_allows(const QpContext& qp, const SendWqe& w) const;
  // A WQE not yet started that a run may send as it is: a SEND or WRITE (with immediate or
  // invalidate) of at most one path MTU whose lkeys translated, not fenced behind a READ or
  // atomic in flight. None of these takes a READ/atomic credit, so a run leaves the fence's
  // condition as it found it.
  bool run_fits(const QpContext& qp, const SendWqe& w) const;
  // A WQE leaves Posted: its PSNs assigned, its progress reset.
  void start_wqe(QpContext& qp, SendWqe& w);
  // Finished, or every packet sent: nothing for the requester to send of it.
  static bool all_sent(const SendWqe& w) {
    return w.state == WqeState::Done || (w.state == WqeState::InFlight && w.next_packet >= w.npackets);
  }
  // Moves the cursor past the WQEs with nothing to send (all_sent) and returns the one under it,
  // or null at the tail (build_next and build_run).
  SendWqe* skip_sent(QpContext& qp) {
    for (; cursor_ < qp.sq.tail(); ++cursor_) {
      SendWqe& w = qp.sq.at(cursor_);
      if (!all_sent(w)) return &w;
    }
    return nullptr;
  }
  // Resends the oldest packet marked for a selective resend; false when none is left.
  bool build_selective(QpContext& qp, TxFrame& frame);
  // Calls f(wqe, packet index, psn) for every request packet sent and not yet acknowledged.
  template <typename F>
  void for_each_sent_request(QpContext& qp, F&& f);
  template <typename F>
  void for_each_sent_request(const QpContext& qp, F&& f) const;
  enum SrFlag : std::uint8_t { kSacked = 1, kPending = 2, kResent = 4 };
  // A PSN's flags in a ring of kSackSpan slots, one ring for the selective resends (SrFlag) and
  // one for READ responses (RdFlag): a slot belongs to the PSN that last used it, so one left by
  // an older PSN reads as no flags.
  struct PsnSlot {
    std::uint32_t psn = 0;
    std::uint32_t tx = 0;  // the transmission (tx_seq_) that last carried it, or asked for it (READ)
    std::uint8_t flags = 0;
  };
  using PsnSlots = std::array<PsnSlot, proto::kSackSpan>;
  static PsnSlot& slot_of(PsnSlots& ring, std::uint32_t psn) {
    PsnSlot& s = ring[psn % ring.size()];
    if (s.psn != psn) s = PsnSlot{psn, 0, 0};
    return s;
  }
  static std::uint8_t flags_of(const PsnSlots& ring, std::uint32_t psn) {
    const PsnSlot& s = ring[psn % ring.size()];
    return s.psn == psn ? s.flags : 0;
  }
  PsnSlot& sr_slot(std::uint32_t psn) { return slot_of(sr_, psn); }
  std::uint8_t sr_flags(std::uint32_t psn) const { return flags_of(sr_, psn); }
  void write_packet(QpContext& qp, SendWqe& w, TxFrame& frame);
  // write_packet() for the one packet of a WQE a run sends (run_fits), but for the bookkeeping
  // build_run does once: the frame at `psn`, asking for an ACK, with `ext` holding the
  // connection's extension headers (each frame stores those of its opcode). False (counted,
  // frame.length 0) where the frame does not fit: a configuration bug.
  // With kTemplate, the headers from the request template's image (RequestTemplate::image_for)
  // and, with `seal`, the frame sealed later with the run's batch.
  template <bool kTemplate>
  bool write_run_packet(QpContext& qp, const SendWqe& w, TxFrame& frame, std::uint32_t psn, proto::ExtHeaders& ext,
                        proto::IcrcSealBatch* seal);
  // build_run() with the request template (kTemplate) or the builder (build_run_with_builder).
  template <bool kTemplate>
  std::size_t build_run_as(QpContext& qp, std::span<TxFrame> frames);
  std::size_t build_run_with_builder(QpContext& qp, std::span<TxFrame> frames);
  void send_packet(QpContext& qp, const SendWqe& w, TxFrame& frame, proto::Opcode op, std::uint32_t psn,
                   std::uint64_t offset, std::uint32_t payload, const proto::ExtHeaders& ext, bool solicited,
                   std::uint32_t npsns);
  // Whether the local buffer of the READ at SQ index `index` overlaps an earlier unfinished READ's.
  bool overlaps_earlier_read(const QpContext& qp, std::uint64_t index) const;
  // Sends the oldest range of READ responses marked missing; false when none is left.
  bool build_read_hole(QpContext& qp, TxFrame& frame);
  enum RdFlag : std::uint8_t { kArrived = 1, kAskPending = 2, kAsked = 4 };
  PsnSlot& rd_slot(std::uint32_t psn) { return slot_of(rd_, psn); }
  std::uint8_t rd_flags(std::uint32_t psn) const { return flags_of(rd_, psn); }

  // Declared in the order of use (docs/perf-changes.md section 78): what can_send, nothing_left
  // and an ACK (set_una) read in two cache lines, before the run's seal batch and the PSN rings.
  // queue_pair_layout.cpp pins it.
  State state_ = State::Ready;
  // Selective repeat's resends pending (below, at sr_window_), and rd_'s PSNs marked kAskPending:
  // here, in can_send's and nothing_left's line.
  std::uint32_t sr_pending_ = 0;
  std::uint32_t next_psn_ = 0;     // PSN the next new WQE starts at
  std::uint32_t sent_end_psn_ = 0; // one past the highest PSN ever transmitted
  std::uint32_t una_hint_ = 0;     // oldest unacknowledged PSN, kept by the completer (set_una)
  std::uint32_t rd_pending_ = 0;
  std::uint64_t cursor_ = 0;       // SQ index of the WQE transmitting next
  std::uint32_t inflight_rd_atomic_ = 0;
  std::uint32_t packets_since_ack_req_ = 0;
  bool last_asked_ack_ = false;
  std::uint32_t last_end_psn_ = 0;
  bool local_done_ = false;
  std::uint32_t send_pos_ = 0;
  Nanos rnr_until_ = kNever;
  const SendWindow* window_ = nullptr;  // the completer's send window
  // WindowTuning::bdp_cap_split_adaptive: turns in a row that began with nothing in flight while
  // the BDP cap was split into parts, whole turns since the parts stopped, and whether they did.
  std::uint16_t in_step_turns_ = 0;
  std::uint16_t whole_turns_ = 0;
  bool parts_idle_ = false;
  // Selective repeat: the responder's reorder window (0: go-back-N), and per PSN in flight
  // (PSN mod kSackSpan, at most that many in flight) what SACKs and timers said of it (sr_pending_
  // above).
  std::uint32_t sr_window_ = 0;
  bool sr_resending_ = false;  // write_packet builds a selective resend (it asks for an ACK)
  bool probing_ = false;       // the next packet is go-back-N's tail probe (it asks for an ACK)
  bool probed_ = false;        // the last timer sent probe_psn_ alone
  std::uint32_t probe_psn_ = 0;  // marked kPending (some may have been acknowledged since)
  std::uint32_t tx_seq_ = 0;      // request packets sent, first copies and resends
  // The latest SACK: its expected PSN and what it held after it, and of that what is at or
  // after una (held_ahead()).
  std::uint32_t sack_epsn_ = 0;
  std::uint32_t held_ahead_ = 0;
  proto::SackBitmap sack_held_{};
  proto::IcrcSealBatch run_seal_;  // a run's frames written and not sealed yet (seal_run)
  PsnSlots sr_{};
  // The completer's una moved (una never moves back while the QP lives: held_ahead_ counted
  // from a later una is never more, so once 0 it stays 0 until the next SACK).
  void set_una(std::uint32_t una) {
    una_hint_ = una;
    if (held_ahead_ != 0) held_ahead_ = held_ahead_counted();
  }
  // Tracked READs' response PSNs (all within kSackSpan of una: window_allows; how many are
  // marked kAskPending: rd_pending_, above). A hole READ request covers [read_hole_first_, +
  // read_hole_count_).
  PsnSlots rd_{};
  std::uint32_t read_hole_first_ = 0, read_hole_count_ = 0;

  friend class Completer;

  friend struct QueuePairLayout;  // queue_pair_layout.cpp
};

std::string to_string(Requester::State s);

}  // namespace roce::rdma
