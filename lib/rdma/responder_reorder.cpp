// Selective repeat at the responder (docs/loss.md, part 2): requests ahead of the expected PSN
// are held in the reorder buffer and run through the ordinary states once the hole before them
// is filled, so WRITE placement, SEND and WRITE-with-immediate completions, READ and atomic
// execution and duplicate handling all stay in PSN order, exactly once. What is held and what
// is missing goes back in an RC_SACK (protocol/sack.hpp).
//
// IRN's placement (Mittal et al., SIGCOMM 2018): a held WRITE MIDDLE whose place is known when
// it arrives is written there at once and only its headers wait for its turn. Its place is
// known from its PSN when its message's FIRST ran already (the open message: the next byte goes
// to write_va_, at the expected PSN) or is held itself: every packet of a message but the last
// carries exactly one MTU, so PSN f + k goes to the FIRST's VA + k x MTU. The R_Key is checked
// for that range as the in-order path checks it; when the packet's turn comes, the in-order
// path checks everything again and must arrive at the same place. LAST packets are held whole:
// their bytes end the message, and a poller watching the last byte of a buffer (ib_write_lat,
// roce-gen's latency test) must not see it before the bytes in front of it. A SEND MIDDLE of the
// open SEND goes into its receive the same way when no LAST can lie before it (place_send_ahead).
#include <algorithm>
#include <cstring>

#include "lib/rdma/responder.hpp"
#include "protocol/icrc_deferred.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

// The outcome of several requests run in one call: an error dominates, then progress.
ResponderOutcome merge(ResponderOutcome a, ResponderOutcome b) {
  if (a == ResponderOutcome::Fatal || b == ResponderOutcome::Fatal) return ResponderOutcome::Fatal;
  if (a == ResponderOutcome::Progress || b == ResponderOutcome::Progress) return ResponderOutcome::Progress;
  return a;
}

}  // namespace

ResponderOutcome Responder::hold_ahead(QpContext& qp, const Packet& pkt, ByteSpan frame) {
  // Held means acknowledged in the next SACK: only a packet known good is held. A MIDDLE placed
  // at once has its deferred ICRC settled during the copy, in one pass, as the in-order path
  // places one (payload.hpp): a corrupted one wrote only where its good copy, which the SACK
  // asks for, goes (a PSN not held, inside a message that has not completed).
  const std::uint32_t psn = pkt.psn();
  const bool deferred = pkt.icrc_status == IcrcStatus::Deferred;
  const ByteSpan whole = frame.first(std::min(frame.size(), pkt.datagram_end));
  // Not held (dropped as go-back-N would; the SACK still tells the requester where the hole
  // is, and it sends the request again): a duplicate of a held PSN; one beyond what the
  // requester may have in flight; or, with no free chunk in the engine's pool for its slot, one
  // in the window (placed or not: a held placed MIDDLE keeps its headers in the slot).
  // Counter::Count: it is held.
  Counter dropped = Counter::ReorderDuplicates;
  if (!reorder_.holds(psn)) dropped = !reorder_.in_window(psn, epsn_) ? Counter::ReorderOverflows : !reorder_.claim(psn) ? Counter::ReorderPoolExhausted : Counter::Count;
  if (dropped == Counter::Count) {
    bool good = true;
    if (std::byte* at = place_ahead(qp, pkt, deferred, &good); at != nullptr) {
      if (!good) {
        reorder_.unclaim(psn);
        return ResponderOutcome::Corrupted;
      }
      qp.counters.inc(Counter::OutOfOrderBuffered);
      qp.counters.inc(Counter::ReorderPlaced);
      reorder_.put_placed(psn, pkt, at);
      queue_sack();
      return ResponderOutcome::Nothing;
    }
    if (!reorder_.fits(whole.size())) {  // larger than a slot
      reorder_.unclaim(psn);
      dropped = Counter::ReorderOverflows;
    }
  }
  if (dropped != Counter::Count) {
    if (deferred && !settle_icrc(pkt, qp.tuning->crc)) return ResponderOutcome::Corrupted;
    qp.counters.inc(Counter::OutOfOrderBuffered);
    qp.counters.inc(dropped);
    queue_sack();
    return ResponderOutcome::Nothing;
  }
  // Copied whole, the deferred ICRC settled on the way (one pass over the payload, as the
  // in-order path places one); a corrupted one is copied but not held.
  std::byte* copy = reorder_.frame_room(psn);
  if (deferred) {
    const std::size_t at = static_cast<std::size_t>(pkt.payload.data() - whole.data());
    const std::size_t after = at + pkt.payload_length;
    std::memcpy(copy, whole.data(), at);
    if (!settle_icrc_copying(pkt, qp.tuning->crc, copy + at)) {
      reorder_.unclaim(psn);
      return ResponderOutcome::Corrupted;
    }
    std::memcpy(copy + after, whole.data() + after, whole.size() - after);
  } else {
    std::memcpy(copy, whole.data(), whole.size());
  }
  qp.counters.inc(Counter::OutOfOrderBuffered);
  reorder_.put_whole(psn, pkt, whole.data(), static_cast<std::uint32_t>(whole.size()));
  queue_sack();
  return ResponderOutcome::Nothing;
}

std::byte* Responder::place_ahead(QpContext& qp, const Packet& pkt, bool icrc_pending, bool* icrc_good) {
  const OpcodeInfo& info = *pkt.info;
  const std::uint32_t mtu = qp.cfg.pmtu;
  if (!qp.tuning->reorder_placement || info.transport != Transport::Rc || info.position != Position::Middle ||
      pkt.payload_length != mtu || mtu == 0)
    return nullptr;
  if (info.operation == Operation::Send) return place_send_ahead(qp, pkt, icrc_pending, icrc_good);
  if (info.operation != Operation::Write || !(qp.cfg.access & IBV_ACCESS_REMOTE_WRITE)) return nullptr;
  const std::uint32_t psn = pkt.psn();
  // Only a MIDDLE of the open message (its FIRST ran): every PSN missing before it is then a
  // packet of the same message, writing other bytes. Behind a held FIRST the missing PSNs may
  // be an earlier WRITE to the same bytes, which must land first (IBA executes requests in
  // order; RcFaultMatrix's overlapping WRITEs caught placement from a held FIRST breaking it),
  // or a READ that must not see them yet.
  if (msg_ != OpenMessage::Write || seq_ != SequenceState::Normal) return nullptr;
  const std::uint32_t from = epsn_;  // PSN of the message's next byte at `va`
  const std::uint64_t va = write_va_;
  const std::uint32_t rkey = write_rkey_;
  const std::uint64_t rest = write_remaining_;  // bytes of the message from `va` on
  const std::uint64_t offset = std::uint64_t{static_cast<std::uint32_t>(psn_diff(psn, from))} * mtu;
  // A MIDDLE: a whole MTU with more of the message after it; otherwise it is not in this message.
  if (offset + mtu >= rest) return nullptr;
  std::byte* dst = nullptr;
  if (qp.mrs->check_remote(rkey, qp.cfg.pd, qp.cfg.qpn, va + offset, mtu, IBV_ACCESS_REMOTE_WRITE, &dst) != AccessResult::Ok)
    return nullptr;  // held whole: in sequence, the in-order path answers it
  PayloadDest dest;
  dest.dst = dst;
  // The packet after it most likely comes next and goes right behind it: ask for that range
  // ahead, as the in-order path does (payload.hpp); without it each placement waits on memory.
  dest.next = {dst + mtu, std::min<std::uint64_t>(mtu, rest - offset - mtu)};
  *icrc_good = place_payload(pkt, dest, qp.tuning->crc, icrc_pending);
  return dst;
}

std::byte* Responder::place_send_ahead(QpContext& qp, const Packet& pkt, bool icrc_pending, bool* icrc_good) {
  // Only a MIDDLE of the open SEND (its FIRST ran and took the receive, which stays at the head
  // or held from the SRQ until the LAST). A SEND carries no length, so unlike a WRITE's the
  // message's end is not known: the MIDDLE is in the open message only if no LAST lies between
  // the expected PSN and it. A LAST is followed by a message's first packet, and this packet is
  // a MIDDLE, so such a LAST would show as a held packet that is not a SEND MIDDLE, or as two
  // PSNs missing in a row (a LAST and the FIRST after it). Neither: every PSN before it is a
  // MIDDLE of the same SEND (or the requester's sequence is invalid, which the in-order path
  // finds: it must arrive at the same place, or the request fails).
  if (msg_ != OpenMessage::Send || seq_ != SequenceState::Normal) return nullptr;
  const RecvWqe* r = qp.next_receive();
  if (r == nullptr || r->local_error) return nullptr;
  const std::uint32_t psn = pkt.psn();
  bool missing_before = true;  // the expected PSN itself is the hole
  for (std::uint32_t q = psn_next(epsn_); q != psn; q = psn_next(q)) {
    const bool held = reorder_.holds(q);
    if (held && reorder_.opcode(q) != static_cast<std::uint8_t>(Opcode::RcSendMiddle)) return nullptr;
    if (!held && missing_before) return nullptr;
    missing_before = !held;
  }
  const std::uint32_t mtu = qp.cfg.pmtu;
  const std::uint64_t offset = msg_offset_ + std::uint64_t{static_cast<std::uint32_t>(psn_diff(psn, epsn_))} * mtu;
  if (offset + mtu > r->length) return nullptr;  // in its turn, the in-order path answers it
  const PayloadDest dest = segment_dest(qp.recv_segs(*r), r->num_seg, offset, mtu, std::min<std::uint64_t>(mtu, r->length - offset - mtu));
  if (dest.dst == nullptr) return nullptr;  // split across scatter entries: held whole
  // The ICRC first: where a SEND's bytes go depends on its PSN alone, and bytes of the receive
  // past the message's end are never overwritten by a good copy (a WRITE MIDDLE's are, inside
  // the range its FIRST named), so a corrupted packet must write nothing.
  if (icrc_pending && !settle_icrc(pkt, qp.tuning->crc)) {
    *icrc_good = false;
    return dest.dst;
  }
  *icrc_good = place_payload(pkt, dest, qp.tuning->crc, false);
  return dest.dst;
}

ResponderOutcome Responder::drain(QpContext& qp, ResponderOutcome so_far) {
  bool ran = false;
  // A held WRITE in its turn takes the run's straight path, as it would have in sequence
  // (write_in_run: the same checks and answers as the walk's; their ACKs coalesced as a run's,
  // settled by end_run before the walk or the drain's own ACK reads the output).
  const bool straight = writes_straight(qp);
  while (reorder_.holds(epsn_) && so_far != ResponderOutcome::Fatal) {
    const std::uint32_t psn = epsn_;
    // As parsed when it arrived: its payload placed already, or in its slot.
    std::byte* at = reorder_.placed_at(psn);
    const Packet& pkt = reorder_.packet(psn);
    if (straight && take_held_write(qp, pkt, at)) {
      so_far = merge(so_far, ResponderOutcome::Progress);
    } else {
      end_run(qp);
      so_far = merge(so_far, walk(qp, pkt, at != nullptr ? ByteSpan{} : reorder_.frame(psn), at));
    }
    reorder_.release(psn);
    ran = true;
    // Not taken (no receive posted: an RNR NAK went out; the response queue was full): the
    // requester sends it again, and the SACK shows it missing meanwhile.
    if (epsn_ == psn) break;
  }
  end_run(qp);
  // A hole was filled: say so at once, with what is still missing if anything is.
  // (Prompt: the requester may be waiting for it with its window full.)
  if (ran && so_far != ResponderOutcome::Fatal) {
    if (reorder_.held() != 0)
      queue_sack();
    else
      queue_ack(qp, psn_add(epsn_, -1), true);
  }
  return so_far;
}

void Responder::queue_sack() {
  const std::uint32_t psn = psn_add(epsn_, -1);
  if (out_count_ > 0) {
    Item& tail = out_[slot(out_count_ - 1)];
    if (tail.kind == Item::Kind::Ack || tail.kind == Item::Kind::Sack) {  // one SACK covers both
      tail.kind = Item::Kind::Sack;
      tail.psn = psn;
      tail.msn = msn_;
      return;
    }
  }
  if (output_full()) return;  // the next one will say it
  Item& it = push_item();
  it.kind = Item::Kind::Sack;
  it.psn = psn;
  it.msn = msn_;
  it.syndrome = Syndrome::ack();
}

bool Responder::build_sack_frame(QpContext& qp, Item& it, TxFrame& frame) {
  // Alone in the queue, it may speak for everything that arrived since it was queued.
  if (out_count_ == 1 && psn_before(it.psn, psn_add(epsn_, -1))) {
    it.psn = psn_add(epsn_, -1);
    it.msn = msn_;
  }
  // Bit i: PSN it.psn + 2 + i arrived (run already, or held).
  const SackBitmap sacked = reorder_.arrived_after(psn_next(it.psn), epsn_);
  if (sacked.empty()) return false;  // nothing past the cumulative point: an ordinary ACK says it all
  FrameSpec spec = qp.path;
  spec.bth.psn.set(it.psn);
  spec.ext.aeth = Aeth{it.syndrome.raw, Be24::of(it.msn)};
  const FrameLayout l = build_sack(spec, sacked, MutableByteSpan{frame.data, frame.capacity}, qp.tuning->crc);
  if (l.ok()) {
    frame.length = static_cast<std::uint32_t>(l.length);
    qp.counters.inc(Counter::SentPkts);
    qp.counters.inc(Counter::SacksSent);
    acked_out_ = it.psn;
  } else {
    frame.length = 0;
    qp.counters.inc(Counter::SendErr);
  }
  return true;
}

}  // namespace roce::rdma
