// The responder's answers: the queue of ACKs, NAKs, READ response streams and atomic ACKs it
// owes (in PSN order), the saved responder resources, the answers to duplicate requests, and
// the building of each response packet.
#include <algorithm>

#include "lib/rdma/responder.hpp"
#include "protocol/ack_template.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

Responder::Item& Responder::push_item() {
  Item& it = out_[slot(out_count_)];
  ++out_count_;
  it = Item{};
  return it;
}

void Responder::queue_ack(QpContext& qp, std::uint32_t psn, bool prompt) {
  // Selective repeat: at most half the reorder window (or of the in-flight cap, when smaller)
  // goes unacknowledged, so the requester, which keeps at most that in flight, always has a
  // second ACK coming; an ACK held back
  // (Engine's AckHold) until the window filled left one ACK per window, and its loss stopped
  // the QP until the timer (docs/loss.md, part 2, session 11).
  if (ack_due(psn)) prompt = true;
  if (coalesce_ack(qp, psn, prompt)) return;
  if (output_full()) return;  // callers check room first; an ACK is never worth a crash
  push_ack(psn, prompt);
}

void Responder::queue_nak(QpContext& qp, std::uint32_t psn, Syndrome s) {
  if (output_full()) return;
  Item& it = push_item();
  it.kind = Item::Kind::Nak;
  it.psn = psn;
  it.msn = msn_;
  it.syndrome = s;
  qp.counters.inc(s.is_rnr_nak() ? Counter::SendRnrErr : Counter::NaksSent);
}

Responder::Resource& Responder::next_resource() {
  Resource& r = resources_[next_resource_];
  next_resource_ = (next_resource_ + 1) % resources_.size();
  return r;
}

Responder::Item* Responder::truncate_output_at(std::uint32_t psn, std::uint32_t read_first_psn) {
  for (std::size_t i = 0; i < out_count_; ++i) {
    Item& it = out_[slot(i)];
    const std::uint32_t span = it.kind == Item::Kind::ReadResponse ? it.npackets : 1;
    if (psn_diff(psn_add(it.psn, span - 1), psn) < 0) continue;  // wholly before psn: still owed
    const bool same_read = it.kind == Item::Kind::ReadResponse && it.psn == read_first_psn && psn_diff(psn, it.psn) >= 0;
    out_count_ = same_read ? i + 1 : i;
    return same_read ? &it : nullptr;
  }
  return nullptr;
}

Responder::Item* Responder::find_read_stream(const Resource& r) {
  const std::uint32_t end = psn_add(r.first_psn, r.npackets);
  for (std::size_t i = 0; i < out_count_; ++i) {
    Item& it = out_[slot(i)];
    if (it.kind == Item::Kind::ReadResponse && psn_diff(it.psn, r.first_psn) >= 0 && psn_diff(it.psn, end) < 0 &&
        psn_add(it.psn, it.npackets) == end)
      return &it;
  }
  return nullptr;
}

// A new READ/atomic recycles the oldest resource. A requester keeps at most max_rd_atomic
// (<= our max_dest_rd_atomic) outstanding, so it sends this one only after the oldest one
// completed on its side: answers still queued for that one are replays of a duplicate (its
// retry timer fired while the first answer was still on the way) and nobody waits for them.
// First-time answers are never dropped: a requester that really exceeds the limit still gets
// NAK invalid request.
bool Responder::is_stale(const Item& it) const {
  const Resource& oldest = resources_[next_resource_];
  if (!replays_queued_ || !it.reexecuted || oldest.kind == Resource::Kind::Free) return false;
  if (it.kind != Item::Kind::ReadResponse && it.kind != Item::Kind::AtomicAck) return false;
  const std::int32_t d = psn_diff(it.psn, oldest.first_psn);
  return d >= 0 && d < static_cast<std::int32_t>(std::max<std::uint32_t>(oldest.npackets, 1));
}

std::uint32_t Responder::rd_atomic_in_use() const {
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < out_count_; ++i) {
    const Item& it = out_[slot(i)];
    n += !it.replay && (it.kind == Item::Kind::ReadResponse || it.kind == Item::Kind::AtomicAck) && !is_stale(it);
  }
  return n;
}

void Responder::drop_stale_replays() {
  if (!replays_queued_) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out_count_; ++i) {
    const Item it = out_[slot(i)];
    if (!is_stale(it)) out_[slot(kept++)] = it;
  }
  out_count_ = kept;
}

std::uint64_t Responder::queued_read_packets() const {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < out_count_; ++i) {
    const Item& it = out_[slot(i)];
    if (it.kind == Item::Kind::ReadResponse) n += it.npackets - it.sent;
  }
  return n;
}

RespState Responder::duplicate(QpContext& qp, Walk& w) {
  const Packet& pkt = w.pkt;
  const std::uint32_t psn = pkt.psn();
  qp.counters.inc(Counter::DuplicateRequest);
  switch (pkt.info->operation) {
    case Operation::Send:
    case Operation::Write:
      // Already executed: acknowledge again, with the latest PSN (IBA C9-105), at once: the
      // requester that resent it is recovering and waits for this answer.
      queue_ack(qp, psn_add(epsn_, -1), true);
      return RespState::Done;
    case Operation::ReadRequest:
      for (const Resource& r : resources_) {
        if (r.kind != Resource::Kind::Read) continue;
        const std::int32_t d = psn_diff(psn, r.first_psn);
        if (d < 0 || d >= static_cast<std::int32_t>(r.npackets)) continue;
        // Re-execute from where the retried request starts, checked like a new one.
        const std::uint64_t va = pkt.ext.reth.va.get();
        const std::uint32_t len = pkt.ext.reth.dma_length.get();
        const std::uint64_t offset = std::uint64_t(d) * qp.cfg.pmtu;
        const bool to_end = std::uint64_t{len} + offset == r.length;
        // Selective repeat (docs/loss.md, part 2, "READ responses"): the requester asks for a
        // hole's range alone, which may stop short of the original's end.
        const bool selective = reorder_.enabled();
        std::byte* src = nullptr;
        if (va != r.va + offset || !(to_end || (selective && std::uint64_t{len} + offset < r.length && len != 0)) ||
            (len != 0 && qp.mrs->check_remote(pkt.ext.reth.rkey.get(), qp.cfg.pd, qp.cfg.qpn, va, len, IBV_ACCESS_REMOTE_READ,
                                              &src) != AccessResult::Ok)) {
          qp.counters.inc(Counter::InvalidRequests);
          return RespState::Done;
        }
        qp.counters.inc(Counter::DuplicateReadReexecuted);
        w.outcome = ResponderOutcome::Progress;
        replays_queued_ = true;
        // Go-back-N: the requester went back to this PSN and will ask again for everything
        // after it: answers still queued from here on are stale. A response stream of this
        // same READ that is still going out restarts at the requested packet instead.
        if (!selective) {
          if (Item* same = truncate_output_at(psn, r.first_psn)) {
            same->sent = static_cast<std::uint32_t>(d);
            same->msn = msn_;
            same->reexecuted = true;
            return RespState::Done;
          }
        } else if (Item* same = to_end ? find_read_stream(r) : nullptr) {
          // Selective repeat: the requester asks for what it misses and nothing else, so every
          // answer queued stays, and a range is answered after the queue; but one READ has one
          // stream to its end (one responder resource, as in rxe): a request for its rest moves
          // the queued stream back to the packet asked for, never ahead of what it has sent. A
          // READ whose responses the requester takes in order (longer than the SACK span, or
          // its buffer overlaps an earlier READ's) is asked for its rest after each lost
          // response; each such answer ran to the READ's end behind the last, and at 10 % loss
          // the stale streams crowded out every other answer (ROCE_FAULT_SEED=34000).
          const std::int32_t start = psn_diff(same->psn, r.first_psn);
          if (start > d) {  // it answers a later part only: it starts over at the packet asked for
            same->psn = psn;
            same->va = va;
            same->rkey = pkt.ext.reth.rkey.get();
            same->length = len;
            same->npackets = packets_for(len, qp.cfg.pmtu);
            same->sent = 0;
          } else {
            same->sent = std::min(same->sent, static_cast<std::uint32_t>(d - start));
          }
          same->msn = msn_;
          same->reexecuted = true;
          return RespState::Done;
        }
        // Like every response, it carries the MSN the responder holds now (as rxe does), which
        // counts the messages completed since the original.
        Item& it = push_item();
        it.reexecuted = true;
        it.kind = Item::Kind::ReadResponse;
        it.replay = true;
        it.psn = psn;
        it.msn = msn_;
        it.va = va;
        it.rkey = pkt.ext.reth.rkey.get();
        it.length = len;
        it.npackets = packets_for(len, qp.cfg.pmtu);
        return RespState::Done;
      }
      return RespState::Done;  // too old to answer: the requester has moved on
    case Operation::CmpSwap:
    case Operation::FetchAdd:
      for (const Resource& r : resources_) {
        if (r.kind != Resource::Kind::Atomic || r.first_psn != psn) continue;
        Item& it = push_item();
        it.reexecuted = true;
        replays_queued_ = true;
        it.kind = Item::Kind::AtomicAck;
        it.replay = true;
        it.psn = psn;
        it.msn = msn_;
        it.original = r.original;  // replayed, never executed twice
        qp.counters.inc(Counter::DuplicateAtomicReplayed);
        w.outcome = ResponderOutcome::Progress;
        return RespState::Done;
      }
      return RespState::Done;
    case Operation::AtomicWrite:
    case Operation::Flush: return duplicate_placement(qp, w);
    default: return RespState::Done;
  }
}

bool Responder::build_next(QpContext& qp, TxFrame& frame, const AckTemplate* ack) {
  if (out_count_ == 0) return false;
  Item& it = out_[out_head_];
  if (it.kind == Item::Kind::Sack && build_sack_frame(qp, it, frame)) {
    out_head_ = slot(1);
    if (--out_count_ == 0) replays_queued_ = false;
    return frame.length != 0;
  }
  // An ACK or NAK (or a SACK whose reorder buffer emptied: a plain ACK) from the QP's prebuilt
  // frame: the same bytes as the builder's below for a fraction of its work.
  if (ack && it.kind != Item::Kind::AtomicAck && it.kind != Item::Kind::ReadResponse) {
    if (const std::size_t n = ack->write(it.psn, it.syndrome, it.msn, MutableByteSpan{frame.data, frame.capacity})) {
      if (it.kind != Item::Kind::Nak) {
        qp.counters.inc(Counter::AcksSent);
        acked_out_ = it.psn;
      }
      qp.counters.inc(Counter::SentPkts);
      frame.length = static_cast<std::uint32_t>(n);
      out_head_ = slot(1);
      if (--out_count_ == 0) replays_queued_ = false;
      return true;
    }
  }
  FrameSpec spec = qp.path;
  std::uint32_t payload = 0;
  const std::byte* src = nullptr;
  bool done = true;
  switch (it.kind) {
    case Item::Kind::Ack:
    case Item::Kind::Sack:  // the reorder buffer emptied before it went out: a plain ACK
    case Item::Kind::Nak:
      spec.bth.opcode = raw(Opcode::RcAck);
      spec.bth.psn.set(it.psn);
      spec.ext.aeth = Aeth{it.syndrome.raw, Be24::of(it.msn)};
      if (it.kind != Item::Kind::Nak) {
        qp.counters.inc(Counter::AcksSent);
        acked_out_ = it.psn;
      }
      break;
    case Item::Kind::AtomicAck:
      spec.bth.opcode = raw(Opcode::RcAtomicAck);
      spec.bth.psn.set(it.psn);
      spec.ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(it.msn)};
      spec.ext.atomic_ack.original_data.set(it.original);
      qp.counters.inc(Counter::AtomicAcksSent);
      break;
    case Item::Kind::ReadResponse: {
      const bool first = it.sent == 0;
      const bool last = it.sent + 1 == it.npackets;
      const Opcode op = first ? (last ? Opcode::RcReadResponseOnly : Opcode::RcReadResponseFirst)
                              : (last ? Opcode::RcReadResponseLast : Opcode::RcReadResponseMiddle);
      const std::uint64_t offset = std::uint64_t{it.sent} * qp.cfg.pmtu;
      payload = static_cast<std::uint32_t>(std::min<std::uint64_t>(qp.cfg.pmtu, it.length - offset));
      std::byte* data = nullptr;
      if (payload != 0 && qp.mrs->check_remote(it.rkey, qp.cfg.pd, qp.cfg.qpn, it.va + offset, payload, IBV_ACCESS_REMOTE_READ,
                                               &data) != AccessResult::Ok) {
        // The region went away (deregistered or invalidated) after the request was accepted:
        // no data can be sent, so the rest of the READ fails as a class C error.
        spec.bth.opcode = raw(Opcode::RcAck);
        spec.bth.psn.set(psn_add(it.psn, static_cast<std::int32_t>(it.sent)));
        spec.ext.aeth = Aeth{Syndrome::nak(NakCode::RemoteAccessError).raw, Be24::of(it.msn)};
        qp.counters.inc(Counter::RemoteAccessErrors);
        qp.counters.inc(Counter::NaksSent);
        payload = 0;
        fatal_ = true;
        break;
      }
      src = data;
      spec.bth.opcode = raw(op);
      spec.bth.psn.set(psn_add(it.psn, it.sent));
      spec.ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(it.msn)};
      ++it.sent;
      done = last;
      qp.counters.inc(Counter::ReadResponsesSent);
      break;
    }
  }
  const FrameLayout l = write_headers(spec, payload, MutableByteSpan{frame.data, frame.capacity});
  if (l.ok()) {
    place_and_seal(spec, l, MutableByteSpan{frame.data, frame.capacity}, qp.tuning->crc, src, qp.icrc_cache);
    frame.length = static_cast<std::uint32_t>(l.length);
    qp.counters.inc(Counter::SentPkts);
  } else {
    frame.length = 0;
    qp.counters.inc(Counter::SendErr);
  }
  if (done) {
    out_head_ = slot(1);
    if (--out_count_ == 0) replays_queued_ = false;
  }
  return frame.length != 0;
}

}  // namespace roce::rdma
