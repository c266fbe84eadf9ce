// Selective repeat at the requester (docs/loss.md, part 2): a SACK names the request packets
// the responder holds past a hole; the ones below the highest held that it does not hold are
// resent, each once, and new data goes on. A timer resends what no SACK reported.
#include "lib/rdma/requester.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

template <typename F>
void Requester::for_each_sent_request(const QpContext& qp, F&& f) const {
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::InFlight) continue;
    if (w.is_read()) {
      // One request packet; once its data started coming, go-back-N re-asks for the rest (or,
      // for a tracked READ, requester_read_holes.cpp asks for each missing range).
      if (w.read_packets_received == 0 && w.read_high == 0 && w.next_packet != 0) f(w, 0u, w.first_psn);
      continue;
    }
    for (std::uint32_t k = 0; k < w.next_packet && k < w.npackets; ++k) f(w, k, psn_add(w.first_psn, k));
  }
}

template <typename F>
void Requester::for_each_sent_request(QpContext& qp, F&& f) {
  std::as_const(*this).for_each_sent_request(std::as_const(qp), [&](const SendWqe& w, std::uint32_t k, std::uint32_t psn) {
    f(const_cast<SendWqe&>(w), k, psn);
  });
}

std::uint32_t Requester::held_ahead_counted() const {
  // Held PSNs below una ran since the SACK (una passed them): only those at or after una count.
  // A held packet the responder later dropped (no receive posted) is counted until the next
  // SACK: the caps are then exceeded by at most that, and the reorder reach still bounds it.
  if (sr_window_ == 0 || sack_held_.empty()) return 0;
  const std::int32_t d = psn_diff(una_hint_, psn_next(sack_epsn_));
  return sack_held_.count_from(d > 0 ? static_cast<std::uint32_t>(d) : 0u);
}

std::uint32_t Requester::on_sack(const QpContext& qp, std::uint32_t epsn, const SackBitmap& sacked, std::uint32_t* first) {
  sack_epsn_ = epsn;
  sack_held_ = sacked;
  held_ahead_ = held_ahead_counted();
  // The highest PSN held: everything unreported below it was lost (the paths selective repeat
  // runs on do not reorder within a round trip; a late original is a duplicate, dropped).
  const int top = sacked.highest();
  if (top < 0) return 0;
  const std::uint32_t end = psn_add(epsn, 1 + top);  // the highest held
  const auto held = [&](std::uint32_t psn) {
    const std::int32_t d = psn_diff(psn, epsn);
    return d > 0 && sacked.has(static_cast<std::uint32_t>(d - 1));
  };
  // The latest transmission the SACK shows arrived: a copy sent before it and still missing was
  // lost (IRN's rule for lost retransmissions), without waiting for a timer.
  std::uint32_t latest = 0;
  for_each_sent_request(qp, [&](const SendWqe&, std::uint32_t, std::uint32_t psn) {
    if (!held(psn)) return;
    PsnSlot& s = sr_slot(psn);
    s.flags |= kSacked;
    latest = std::max(latest, s.tx);
  });
  std::uint32_t marked = 0;
  for_each_sent_request(qp, [&](const SendWqe&, std::uint32_t, std::uint32_t psn) {
    if (psn_before(psn, epsn) || !psn_before(psn, end) || held(psn)) return;
    PsnSlot& s = sr_slot(psn);
    if (s.flags & (kPending | kSacked)) return;  // a SACK never takes back a hold
    if ((s.flags & kResent) && s.tx >= latest) return;  // its latest copy may still arrive
    s.flags |= kPending | kResent;
    if (marked++ == 0) *first = psn;
    ++sr_pending_;
  });
  return marked;
}

Requester::TimerResend Requester::resend_unsacked(const QpContext& qp, bool probes_only, std::uint32_t* probe_psn) {
  // A tracked READ some of whose responses came, or whose responses were found missing: all it
  // still misses is asked for again (what a timer finds: a lost tail, a hole's request or
  // answer lost again).
  std::uint32_t holes = 0;
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::InFlight || !tracks_read(w)) continue;
    const bool asked = rd_flags(psn_add(w.first_psn, w.read_packets_received)) & (kAsked | kAskPending);
    if (w.read_high != 0 || asked) holes += ask_read_holes(w, w.npackets, tx_seq_);
  }
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (w.state == WqeState::Done) continue;
    // A READ whose responses are taken in order (not tracked), or an atomic (ATOMIC_WRITE,
    // FLUSH), waiting for its answer: its request may have been reported held or answered, so
    // no probe would send it again; go-back-N asks for it (a duplicate the responder answers
    // again), as it would on a NAK. (A READ none of whose responses came was left to the probe:
    // with its request reported held, a go-back whose re-ask was lost never asked again, and
    // the answers to the later requests the probe sent were duplicate loss signals until the
    // retries ran out: ROCE_FAULT_SEED=108000 and 145000.)
    if (w.state == WqeState::InFlight && w.needs_response_data() && !tracks_read(w) && w.next_packet != 0) return TimerResend::None;
    break;
  }
  // A probe, not the whole window: the newest packet no SACK reported goes again alone. If
  // only ACKs were lost (a starved receive ring drops whatever comes), it is a duplicate the
  // responder answers with an ACK for everything; if a tail was lost, it arrives past the hole
  // and its SACK names every missing packet, each then resent once (TCP's tail loss probe).
  // Resending everything unreported instead cost a window per spurious timer on af_packet.
  // A timer that finds the same newest packet unreported again (the probe drew no answer: a
  // poller starved for longer than the wait, or a peer holding fewer PSNs than we send, which
  // drops it as beyond its window) probes the oldest unreported packet: the responder takes
  // it whatever its window, as new (it was the hole; an ACK of it alone says nothing after it
  // arrived, and the completer resends the rest) or as a duplicate (answered with all it has).
  std::uint32_t newest = 0, oldest = 0;
  std::uint32_t unreported = 0;
  for_each_sent_request(qp, [&](const SendWqe&, std::uint32_t, std::uint32_t psn) {
    if ((sr_slot(psn).flags & kSacked) || psn_before(psn, una_hint_)) return;
    if (unreported++ == 0) oldest = psn;
    newest = psn;
  });
  if (unreported == 0) return holes != 0 ? TimerResend::ReadHoles : TimerResend::None;
  if (probed_ && newest == probe_psn_) {
    if (probes_only) {
      sr_slot(oldest).flags |= kPending | kResent;
      sr_pending_ = std::max<std::uint32_t>(sr_pending_, 1);
      *probe_psn = oldest;
      return TimerResend::Oldest;
    }
    probed_ = false;
    for_each_sent_request(qp, [&](const SendWqe&, std::uint32_t, std::uint32_t psn) {
      PsnSlot& s = sr_slot(psn);
      if (!(s.flags & kSacked)) s.flags = kPending | kResent;
    });
    sr_pending_ = unreported;
    return TimerResend::All;
  }
  probed_ = true;
  probe_psn_ = newest;
  sr_slot(newest).flags = kPending | kResent;
  sr_pending_ = 1;
  *probe_psn = newest;
  return TimerResend::Newest;
}

bool Requester::build_selective(QpContext& qp, TxFrame& frame) {
  SendWqe* wqe = nullptr;
  std::uint32_t index = 0;
  for_each_sent_request(qp, [&](SendWqe& w, std::uint32_t k, std::uint32_t psn) {
    if (wqe != nullptr || psn_before(psn, una_hint_)) return;
    PsnSlot& s = sr_slot(psn);
    if (!(s.flags & kPending)) return;
    s.flags &= static_cast<std::uint8_t>(~kPending);
    wqe = &w;
    index = k;
  });
  if (wqe == nullptr) {
    sr_pending_ = 0;  // the rest were acknowledged meanwhile
    return false;
  }
  --sr_pending_;
  // The packet as it first went out: write_packet builds packet `next_packet` and moves it on.
  const std::uint32_t next = wqe->next_packet;
  wqe->next_packet = index;
  sr_resending_ = true;
  write_packet(qp, *wqe, frame);
  sr_resending_ = false;
  wqe->next_packet = next;
  if (selective()) qp.counters.inc(Counter::SelectiveResends);  // else go-back-N's probe of the oldest
  return true;
}

}  // namespace roce::rdma
