#include "lib/rdma/responder.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "protocol/psn.hpp"

namespace roce {

using namespace roce::proto;

namespace {

constexpr std::uint32_t kMaxMessageBytes = 1u << 31;  // IBA: 2^31 bytes per message
constexpr std::uint32_t kGrhBytes = 40;

bool is_first_or_only(const OpcodeInfo& i) { return i.starts_message(); }

}  // namespace

RequestPsnClass classify_request_psn(std::uint32_t psn, std::uint32_t expected) {
  const std::int32_t d = psn_diff(psn, expected);
  if (d == 0) return RequestPsnClass::Expected;
  return d < 0 ? RequestPsnClass::Duplicate : RequestPsnClass::Ahead;
}

void Responder::start(const QpContext& qp) {
  epsn_ = qp.cfg.rq_psn & kPsnMask;
  msn_ = 0;
  seq_ = SequenceState::Normal;
  msg_ = Message::None;
  msg_offset_ = 0;
  write_va_ = 0;
  write_rkey_ = 0;
  write_remaining_ = 0;
  fatal_ = false;
  uc_dropping_ = false;
  const std::size_t rd = std::max<std::size_t>(qp.cfg.max_dest_rd_atomic, 1);
  resources_.assign(rd, Resource{});
  next_resource_ = 0;
  // Room for one READ/atomic answer per resource, with an ACK or NAK between each. The ring is
  // rounded up to a power of two so a slot is a mask, not a division; the bound stays exact.
  out_capacity_ = 2 * rd + 4;
  out_.assign(std::bit_ceil(out_capacity_), Item{});
  out_head_ = 0;
  out_count_ = 0;
  replays_queued_ = false;
}

Responder::Item& Responder::push_item() {
  Item& it = out_[slot(out_count_)];
  ++out_count_;
  it = Item{};
  return it;
}

void Responder::queue_ack(QpContext& qp, std::uint32_t psn) {
  if (out_count_ > 0) {
    Item& tail = out_[slot(out_count_ - 1)];
    if (tail.kind == Item::Kind::Ack) {  // coalesce: one ACK covers everything up to psn
      tail.psn = psn;
      tail.msn = msn_;
      qp.counters.inc(Counter::AckDeferred);
      return;
    }
  }
  if (output_full()) return;  // callers check room first; an ACK is never worth a crash
  Item& it = push_item();
  it.kind = Item::Kind::Ack;
  it.psn = psn;
  it.msn = msn_;
  it.syndrome = Syndrome::ack();
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

std::uint32_t Responder::pending_rd_atomic() const {
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < out_count_; ++i) {
    const Item& it = out_[slot(i)];
    n += !it.replay && (it.kind == Item::Kind::ReadResponse || it.kind == Item::Kind::AtomicAck);
  }
  return n;
}

bool Responder::make_room_for_rd_atomic() {
  // A new READ/atomic recycles the oldest resource. A requester keeps at most max_rd_atomic
  // (<= our max_dest_rd_atomic) outstanding, so it sends this one only after the oldest one
  // completed on its side: answers still queued for that one are replays of a duplicate (its
  // retry timer fired while the first answer was still on the way) and nobody waits for them.
  // First-time answers are never dropped: a requester that really exceeds the limit still gets
  // NAK invalid request. (Fresh replays take no resource, but a stale one still costs the link.)
  if (!replays_queued_) return pending_rd_atomic() < resources_.size();
  const Resource& oldest = resources_[next_resource_];
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out_count_; ++i) {
    const Item it = out_[slot(i)];
    const bool stale = it.reexecuted && (it.kind == Item::Kind::ReadResponse || it.kind == Item::Kind::AtomicAck) &&
                       psn_diff(it.psn, oldest.first_psn) >= 0 &&
                       psn_diff(it.psn, oldest.first_psn) < static_cast<std::int32_t>(std::max<std::uint32_t>(oldest.npackets, 1));
    if (!stale) out_[slot(kept++)] = it;
  }
  out_count_ = kept;
  return pending_rd_atomic() < resources_.size();
}

ResponderOutcome Responder::on_request(QpContext& qp, const Packet& pkt, ByteSpan frame, Nanos now) {
  (void)now;
  switch (qp.cfg.type) {
    case IBV_QPT_RC: return on_rc_request(qp, pkt);
    case IBV_QPT_UC: return on_uc_request(qp, pkt);
    case IBV_QPT_UD: return on_ud_request(qp, pkt, frame);
    default: return ResponderOutcome::Nothing;
  }
}

ResponderOutcome Responder::on_rc_request(QpContext& qp, const Packet& pkt) {
  // Any request may need one output slot (a coalesced ACK needs none, but keep it simple):
  // with no room the request is dropped unexecuted and the requester's retry brings it back.
  if (output_full()) {
    qp.counters.inc(Counter::ResponderBusyDrops);
    return ResponderOutcome::Nothing;
  }
  switch (classify_request_psn(pkt.psn(), epsn_)) {
    case RequestPsnClass::Ahead:
      qp.counters.inc(Counter::OutOfSeqRequest);
      if (seq_ == SequenceState::Normal) {
        queue_nak(qp, epsn_, Syndrome::nak(NakCode::PsnSequenceError));
        seq_ = SequenceState::NakSent;
      }
      return ResponderOutcome::Nothing;
    case RequestPsnClass::Duplicate:
      qp.counters.inc(Counter::DuplicateRequest);
      return on_duplicate(qp, pkt);
    case RequestPsnClass::Expected: break;
  }
  seq_ = SequenceState::Normal;
  return execute(qp, pkt);
}

ResponderOutcome Responder::execute(QpContext& qp, const Packet& pkt) {
  const OpcodeInfo& info = *pkt.info;
  // Opcode sequence: an open message takes only its MIDDLE/LAST, no message takes them.
  const bool open = msg_ != Message::None;
  const bool continues = !is_first_or_only(info);
  const Message kind = info.operation == Operation::Send ? Message::Send
                       : info.operation == Operation::Write ? Message::Write
                                                            : Message::None;
  if (open != continues || (open && kind != msg_)) {
    qp.counters.inc(Counter::OpcodeSequenceErrors);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  if (!fits_pmtu(qp, pkt)) {
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  switch (info.operation) {
    case Operation::Send: return do_send(qp, pkt);
    case Operation::Write: return do_write(qp, pkt);
    case Operation::ReadRequest: return do_read(qp, pkt);
    case Operation::CmpSwap:
    case Operation::FetchAdd: return do_atomic(qp, pkt);
    default:  // FLUSH and ATOMIC_WRITE are not offered by this responder
      qp.counters.inc(Counter::InvalidRequests);
      return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
}

bool Responder::fits_pmtu(const QpContext& qp, const Packet& pkt) {
  // FIRST/MIDDLE carry exactly one path MTU, LAST/ONLY at most one.
  return pkt.payload_length <= qp.cfg.pmtu &&
         (pkt.info->payload != PayloadRule::ExactPmtu || pkt.payload_length == qp.cfg.pmtu);
}

bool Responder::fits_open_write(const Packet& pkt) const {
  return pkt.payload_length <= write_remaining_ && (!pkt.info->ends_message() || pkt.payload_length == write_remaining_);
}

PayloadTarget Responder::continuation_target(const QpContext& qp, const Packet& pkt) const {
  const OpcodeInfo& info = *pkt.info;
  if (!qp.is_rc() || !qp.accepts_requests() || output_full() || pkt.psn() != epsn_ || info.starts_message() ||
      info.has_immediate() || pkt.payload_length == 0 || !fits_pmtu(qp, pkt))
    return {};
  const std::uint32_t len = pkt.payload_length;
  if (info.operation == Operation::Write && msg_ == Message::Write) {
    if (!fits_open_write(pkt)) return {};
    std::byte* dst = nullptr;
    if (qp.mrs->check_remote(write_rkey_, qp.cfg.pd, write_va_, len, IBV_ACCESS_REMOTE_WRITE, &dst) != AccessResult::Ok)
      return {};
    // The open WRITE continues in the same region, right after these bytes.
    return {dst, {dst + len, info.ends_message() ? 0 : std::min(write_remaining_ - len, len)}};
  }
  if (info.operation == Operation::Send && msg_ == Message::Send && !qp.rq.empty()) {
    const RecvWqe& r = qp.rq.at(qp.rq.head());
    if (r.local_error || std::uint64_t{msg_offset_} + len > r.length) return {};
    const LocalSegment* segs = qp.recv_segs(r);
    PayloadTarget to{contiguous_in_segments(segs, r.num_seg, msg_offset_, len), {}};
    if (to.dst && !info.ends_message())
      to.next = write_ahead_in_segments(segs, r.num_seg, msg_offset_ + len, std::min(len, r.length - msg_offset_ - len));
    return to;
  }
  return {};
}

ResponderOutcome Responder::class_c_error(QpContext& qp, std::uint32_t psn, NakCode code) {
  if (code == NakCode::RemoteAccessError) qp.counters.inc(Counter::RemoteAccessErrors);
  if (code == NakCode::RemoteOperationalError) qp.counters.inc(Counter::RemoteOperationalErrors);
  queue_nak(qp, psn, Syndrome::nak(code));
  msg_ = Message::None;
  return ResponderOutcome::Fatal;
}

void Responder::complete_receive(QpContext& qp, ibv_wc_status status, ibv_wc_opcode opcode, std::uint32_t byte_len,
                                 unsigned flags, std::uint32_t imm_or_rkey, std::uint32_t src_qp) {
  const RecvWqe& r = qp.rq.at(qp.rq.head());
  ibv_wc wc{};
  wc.wr_id = r.wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.byte_len = byte_len;
  wc.qp_num = qp.cfg.qpn;
  wc.src_qp = src_qp;
  wc.wc_flags = flags;
  wc.pkey_index = 0;
  if (flags & IBV_WC_WITH_IMM) wc.imm_data = imm_or_rkey;
  if (flags & IBV_WC_WITH_INV) wc.invalidated_rkey = imm_or_rkey;
  if (status != IBV_WC_SUCCESS) qp.counters.inc(Counter::WcErrors);
  if (qp.recv_cq) qp.recv_cq->push(wc);
  qp.rq.pop();
  qp.counters.inc(Counter::RdmaRecvs);
}

void Responder::end_of_request(QpContext& qp, const Packet& pkt) {
  epsn_ = psn_next(pkt.psn());
  if (pkt.bth.ack_requested()) queue_ack(qp, pkt.psn());
}

ResponderOutcome Responder::do_send(QpContext& qp, const Packet& pkt) {
  const OpcodeInfo& info = *pkt.info;
  if (info.starts_message()) {
    if (qp.rq.empty()) {
      queue_nak(qp, pkt.psn(), Syndrome::rnr_nak(qp.cfg.min_rnr_timer));
      seq_ = SequenceState::NakSent;
      return ResponderOutcome::Progress;
    }
    msg_ = Message::Send;
    msg_offset_ = 0;
  }
  RecvWqe& r = qp.rq.at(qp.rq.head());
  if (r.local_error) {
    complete_receive(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, msg_offset_, 0, 0, 0);
    return class_c_error(qp, pkt.psn(), NakCode::RemoteOperationalError);
  }
  if (std::uint64_t{msg_offset_} + pkt.payload_length > r.length) {
    complete_receive(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, msg_offset_, 0, 0, 0);
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  if (pkt.payload_length && !pkt.payload_placed)
    copy_to_segments(qp.recv_segs(r), r.num_seg, msg_offset_, pkt.payload.data(), pkt.payload_length);
  msg_offset_ += pkt.payload_length;
  if (!info.ends_message() && !pkt.payload_placed)
    prefetch_segments_for_write(qp.recv_segs(r), r.num_seg, msg_offset_,
                                std::min<std::uint32_t>(pkt.payload_length, r.length - msg_offset_));
  if (info.ends_message()) {
    unsigned flags = 0;
    std::uint32_t extra = 0;
    if (info.has_immediate()) {
      flags |= IBV_WC_WITH_IMM;
      std::memcpy(&extra, pkt.ext.imm.bytes.data(), 4);
    }
    if (info.has_invalidate()) {
      extra = pkt.ext.ieth.rkey.get();
      if (!qp.mrs->invalidate(extra, qp.cfg.pd)) {
        complete_receive(qp, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, msg_offset_, 0, 0, 0);
        qp.counters.inc(Counter::InvalidRequests);
        return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
      }
      flags |= IBV_WC_WITH_INV;
    }
    msn_ = psn_next(msn_);
    complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV, msg_offset_, flags, extra, 0);
    msg_ = Message::None;
  }
  end_of_request(qp, pkt);
  return ResponderOutcome::Progress;
}

ResponderOutcome Responder::do_write(QpContext& qp, const Packet& pkt) {
  const OpcodeInfo& info = *pkt.info;
  if (info.starts_message()) {
    if (!(qp.cfg.access & IBV_ACCESS_REMOTE_WRITE)) {
      qp.counters.inc(Counter::InvalidRequests);
      return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
    }
    const std::uint64_t va = pkt.ext.reth.va.get();
    const std::uint32_t len = pkt.ext.reth.dma_length.get();
    if (len > kMaxMessageBytes || pkt.payload_length > len ||
        (info.position == Position::Only && pkt.payload_length != len)) {
      qp.counters.inc(Counter::InvalidRequests);
      return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
    }
    std::byte* dst = nullptr;
    // A zero-length WRITE touches no memory, so its R_Key is not checked (IBA 9.7.4.1.3).
    if (len != 0 &&
        qp.mrs->check_remote(pkt.ext.reth.rkey.get(), qp.cfg.pd, va, len, IBV_ACCESS_REMOTE_WRITE, &dst) !=
            AccessResult::Ok)
      return class_c_error(qp, pkt.psn(), NakCode::RemoteAccessError);
    msg_ = Message::Write;
    write_va_ = va;
    write_rkey_ = pkt.ext.reth.rkey.get();
    write_remaining_ = len;
    write_length_ = len;
  }
  if (!fits_open_write(pkt)) {
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  // WRITE with immediate consumes a receive WQE; without one, answer RNR before touching memory
  // so the retried packet finds the same state.
  if (info.has_immediate() && qp.rq.empty()) {
    if (info.starts_message()) msg_ = Message::None;
    queue_nak(qp, pkt.psn(), Syndrome::rnr_nak(qp.cfg.min_rnr_timer));
    seq_ = SequenceState::NakSent;
    return ResponderOutcome::Progress;
  }
  if (pkt.payload_length) {
    std::byte* dst = nullptr;
    if (qp.mrs->check_remote(write_rkey_, qp.cfg.pd, write_va_, pkt.payload_length, IBV_ACCESS_REMOTE_WRITE, &dst) !=
        AccessResult::Ok)
      return class_c_error(qp, pkt.psn(), NakCode::RemoteAccessError);
    write_va_ += pkt.payload_length;
    write_remaining_ -= pkt.payload_length;
    if (!pkt.payload_placed) {
      std::memcpy(dst, pkt.payload.data(), pkt.payload_length);
      proto::prefetch_for_write({dst + pkt.payload_length, std::min(write_remaining_, pkt.payload_length)});
    }
  }
  if (info.ends_message()) {
    msn_ = psn_next(msn_);
    msg_ = Message::None;
    if (info.has_immediate()) {
      std::uint32_t imm = 0;
      std::memcpy(&imm, pkt.ext.imm.bytes.data(), 4);
      complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, write_length_, IBV_WC_WITH_IMM, imm, 0);
    }
  }
  end_of_request(qp, pkt);
  return ResponderOutcome::Progress;
}

ResponderOutcome Responder::do_read(QpContext& qp, const Packet& pkt) {
  if (!(qp.cfg.access & IBV_ACCESS_REMOTE_READ) || !make_room_for_rd_atomic()) {
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  const std::uint64_t va = pkt.ext.reth.va.get();
  const std::uint32_t len = pkt.ext.reth.dma_length.get();
  if (len > kMaxMessageBytes) {
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  std::byte* src = nullptr;
  if (len != 0 &&
      qp.mrs->check_remote(pkt.ext.reth.rkey.get(), qp.cfg.pd, va, len, IBV_ACCESS_REMOTE_READ, &src) != AccessResult::Ok)
    return class_c_error(qp, pkt.psn(), NakCode::RemoteAccessError);
  const std::uint32_t npackets = packets_for(len, qp.cfg.pmtu);
  msn_ = psn_next(msn_);
  Resource& r = next_resource();
  r = Resource{Resource::Kind::Read, pkt.psn(), npackets, va, pkt.ext.reth.rkey.get(), len, 0};
  Item& it = push_item();
  it.kind = Item::Kind::ReadResponse;
  it.psn = pkt.psn();
  it.msn = msn_;
  it.va = va;
  it.rkey = pkt.ext.reth.rkey.get();
  it.length = len;
  it.npackets = npackets;
  epsn_ = psn_add(pkt.psn(), npackets);
  return ResponderOutcome::Progress;
}

ResponderOutcome Responder::do_atomic(QpContext& qp, const Packet& pkt) {
  if (!(qp.cfg.access & IBV_ACCESS_REMOTE_ATOMIC) || !make_room_for_rd_atomic()) {
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  const std::uint64_t va = pkt.ext.atomic.va.get();
  if (va % 8 != 0) {
    qp.counters.inc(Counter::InvalidRequests);
    return class_c_error(qp, pkt.psn(), NakCode::InvalidRequest);
  }
  std::byte* dst = nullptr;
  if (qp.mrs->check_remote(pkt.ext.atomic.rkey.get(), qp.cfg.pd, va, 8, IBV_ACCESS_REMOTE_ATOMIC, &dst) !=
      AccessResult::Ok)
    return class_c_error(qp, pkt.psn(), NakCode::RemoteAccessError);
  // Host memory may be shared with the application's threads: operate atomically.
  std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(dst));
  std::uint64_t original;
  if (pkt.info->operation == Operation::CmpSwap) {
    original = pkt.ext.atomic.compare.get();
    word.compare_exchange_strong(original, pkt.ext.atomic.swap_add.get());
  } else {
    original = word.fetch_add(pkt.ext.atomic.swap_add.get());
  }
  msn_ = psn_next(msn_);
  Resource& r = next_resource();
  r = Resource{Resource::Kind::Atomic, pkt.psn(), 1, va, pkt.ext.atomic.rkey.get(), 8, original};
  Item& it = push_item();
  it.kind = Item::Kind::AtomicAck;
  it.psn = pkt.psn();
  it.msn = msn_;
  it.original = original;
  epsn_ = psn_next(pkt.psn());
  return ResponderOutcome::Progress;
}

ResponderOutcome Responder::on_duplicate(QpContext& qp, const Packet& pkt) {
  const OpcodeInfo& info = *pkt.info;
  const std::uint32_t psn = pkt.psn();
  switch (info.operation) {
    case Operation::Send:
    case Operation::Write:
      // Already executed: acknowledge again, with the latest PSN (IBA C9-105).
      queue_ack(qp, psn_add(epsn_, -1));
      return ResponderOutcome::Nothing;
    case Operation::ReadRequest:
      for (const Resource& r : resources_) {
        if (r.kind != Resource::Kind::Read) continue;
        const std::int32_t d = psn_diff(psn, r.first_psn);
        if (d < 0 || d >= static_cast<std::int32_t>(r.npackets)) continue;
        // Re-execute from where the retried request starts, checked like a new one.
        const std::uint64_t va = pkt.ext.reth.va.get();
        const std::uint32_t len = pkt.ext.reth.dma_length.get();
        const std::uint64_t offset = std::uint64_t(d) * qp.cfg.pmtu;
        std::byte* src = nullptr;
        if (va != r.va + offset || std::uint64_t{len} + offset != r.length ||
            (len != 0 && qp.mrs->check_remote(pkt.ext.reth.rkey.get(), qp.cfg.pd, va, len, IBV_ACCESS_REMOTE_READ,
                                              &src) != AccessResult::Ok)) {
          qp.counters.inc(Counter::InvalidRequests);
          return ResponderOutcome::Nothing;
        }
        qp.counters.inc(Counter::DuplicateReadReexecuted);
        // The requester went back to this PSN and will ask again for everything after it:
        // answers still queued from here on are stale. A response stream of this same READ
        // that is still going out restarts at the requested packet instead.
        if (Item* same = truncate_output_at(psn, r.first_psn)) {
          same->sent = static_cast<std::uint32_t>(d);
          same->msn = msn_;
          same->reexecuted = true;
          replays_queued_ = true;
          return ResponderOutcome::Progress;
        }
        // Like every response, it carries the MSN the responder holds now (as rxe does), which
        // counts the messages completed since the original.
        Item& it = push_item();
        it.reexecuted = true;
        replays_queued_ = true;
        it.kind = Item::Kind::ReadResponse;
        it.replay = true;
        it.psn = psn;
        it.msn = msn_;
        it.va = va;
        it.rkey = pkt.ext.reth.rkey.get();
        it.length = len;
        it.npackets = packets_for(len, qp.cfg.pmtu);
        return ResponderOutcome::Progress;
      }
      return ResponderOutcome::Nothing;  // too old to answer: the requester has moved on
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
        return ResponderOutcome::Progress;
      }
      return ResponderOutcome::Nothing;
    default: return ResponderOutcome::Nothing;
  }
}

ResponderOutcome Responder::on_uc_request(QpContext& qp, const Packet& pkt) {
  const OpcodeInfo& info = *pkt.info;
  if (pkt.psn() != epsn_) {
    // A lost packet loses its message; resynchronise on this PSN.
    if (msg_ != Message::None) qp.counters.inc(Counter::UcMessagesDropped);
    msg_ = Message::None;
    uc_dropping_ = !info.starts_message();
  } else if (!info.starts_message() && msg_ == Message::None) {
    uc_dropping_ = true;
  } else if (info.starts_message() && msg_ != Message::None) {
    qp.counters.inc(Counter::UcMessagesDropped);  // the previous message never got its LAST
    msg_ = Message::None;
  }
  epsn_ = psn_next(pkt.psn());
  if (info.starts_message()) uc_dropping_ = false;
  if (uc_dropping_) {
    qp.counters.inc(Counter::OpcodeSequenceErrors);
    return ResponderOutcome::Nothing;
  }
  if (!fits_pmtu(qp, pkt)) {
    uc_dropping_ = true;
    msg_ = Message::None;
    return ResponderOutcome::Nothing;
  }
  // UC answers nothing: every failure drops the rest of the message.
  auto drop = [&](Counter c) {
    qp.counters.inc(c);
    uc_dropping_ = !info.ends_message();
    msg_ = Message::None;
    return ResponderOutcome::Nothing;
  };
  if (info.operation == Operation::Send) {
    if (info.starts_message()) {
      if (qp.rq.empty()) return drop(Counter::UdNoReceiveDrops);
      msg_ = Message::Send;
      msg_offset_ = 0;
    }
    RecvWqe& r = qp.rq.at(qp.rq.head());
    if (r.local_error || std::uint64_t{msg_offset_} + pkt.payload_length > r.length) {
      complete_receive(qp, r.local_error ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, msg_offset_, 0, 0, 0);
      return drop(Counter::UcMessagesDropped);
    }
    if (pkt.payload_length)
      copy_to_segments(qp.recv_segs(r), r.num_seg, msg_offset_, pkt.payload.data(), pkt.payload_length);
    msg_offset_ += pkt.payload_length;
    if (info.ends_message()) {
      std::uint32_t imm = 0;
      if (info.has_immediate()) std::memcpy(&imm, pkt.ext.imm.bytes.data(), 4);
      complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV, msg_offset_, info.has_immediate() ? IBV_WC_WITH_IMM : 0, imm, 0);
      msg_ = Message::None;
    }
    return ResponderOutcome::Progress;
  }
  if (info.operation != Operation::Write) return drop(Counter::OpcodeSequenceErrors);
  if (info.starts_message()) {
    const std::uint64_t va = pkt.ext.reth.va.get();
    const std::uint32_t len = pkt.ext.reth.dma_length.get();
    std::byte* dst = nullptr;
    if (!(qp.cfg.access & IBV_ACCESS_REMOTE_WRITE) || pkt.payload_length > len ||
        (info.position == Position::Only && pkt.payload_length != len) ||
        (len != 0 && qp.mrs->check_remote(pkt.ext.reth.rkey.get(), qp.cfg.pd, va, len, IBV_ACCESS_REMOTE_WRITE, &dst) !=
                         AccessResult::Ok))
      return drop(Counter::RemoteAccessErrors);
    msg_ = Message::Write;
    write_va_ = va;
    write_rkey_ = pkt.ext.reth.rkey.get();
    write_remaining_ = len;
    write_length_ = len;
  }
  if (!fits_open_write(pkt)) return drop(Counter::UcMessagesDropped);
  if (info.has_immediate() && qp.rq.empty()) return drop(Counter::UdNoReceiveDrops);
  if (pkt.payload_length) {
    std::byte* dst = nullptr;
    if (qp.mrs->check_remote(write_rkey_, qp.cfg.pd, write_va_, pkt.payload_length, IBV_ACCESS_REMOTE_WRITE, &dst) !=
        AccessResult::Ok)
      return drop(Counter::RemoteAccessErrors);
    std::memcpy(dst, pkt.payload.data(), pkt.payload_length);
    write_va_ += pkt.payload_length;
    write_remaining_ -= pkt.payload_length;
    proto::prefetch_for_write({dst + pkt.payload_length, std::min(write_remaining_, pkt.payload_length)});
  }
  if (info.ends_message()) {
    msg_ = Message::None;
    if (info.has_immediate()) {
      std::uint32_t imm = 0;
      std::memcpy(&imm, pkt.ext.imm.bytes.data(), 4);
      complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, write_length_, IBV_WC_WITH_IMM, imm, 0);
    }
  }
  return ResponderOutcome::Progress;
}

ResponderOutcome Responder::on_ud_request(QpContext& qp, const Packet& pkt, ByteSpan frame) {
  const OpcodeInfo& info = *pkt.info;
  if (info.operation != Operation::Send) return ResponderOutcome::Nothing;
  if (pkt.ext.deth.qkey.get() != qp.cfg.qkey) {
    qp.counters.inc(Counter::QkeyViolations);
    return ResponderOutcome::Nothing;
  }
  if (pkt.payload_length > qp.cfg.pmtu || qp.rq.empty()) {
    qp.counters.inc(Counter::UdNoReceiveDrops);
    return ResponderOutcome::Nothing;
  }
  RecvWqe& r = qp.rq.at(qp.rq.head());
  const std::uint32_t total = kGrhBytes + pkt.payload_length;
  if (r.local_error || total > r.length) {
    complete_receive(qp, r.local_error ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, 0);
    return ResponderOutcome::Progress;
  }
  // The first 40 bytes hold the GRH; for IPv4 its last 20 bytes are the IPv4 header, as rxe does.
  std::byte grh[kGrhBytes] = {};
  if (pkt.ip_version == IpVersion::V6)
    std::memcpy(grh, frame.data() + pkt.l3_offset, kGrhBytes);
  else
    std::memcpy(grh + 20, frame.data() + pkt.l3_offset, 20);
  copy_to_segments(qp.recv_segs(r), r.num_seg, 0, grh, kGrhBytes);
  if (pkt.payload_length)
    copy_to_segments(qp.recv_segs(r), r.num_seg, kGrhBytes, pkt.payload.data(), pkt.payload_length);
  std::uint32_t imm = 0;
  unsigned flags = IBV_WC_GRH;
  if (info.has_immediate()) {
    std::memcpy(&imm, pkt.ext.imm.bytes.data(), 4);
    flags |= IBV_WC_WITH_IMM;
  }
  complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV, total, flags, imm, pkt.ext.deth.source_qp());
  return ResponderOutcome::Progress;
}

bool Responder::build_next(QpContext& qp, TxFrame& frame) {
  if (out_count_ == 0) return false;
  Item& it = out_[out_head_];
  FrameSpec spec = qp.path;
  std::uint32_t payload = 0;
  const std::byte* src = nullptr;
  bool done = true;
  switch (it.kind) {
    case Item::Kind::Ack:
    case Item::Kind::Nak:
      spec.bth.opcode = raw(Opcode::RcAck);
      spec.bth.psn.set(it.psn);
      spec.ext.aeth = Aeth{it.syndrome.raw, Be24::of(it.msn)};
      if (it.kind == Item::Kind::Ack) qp.counters.inc(Counter::AcksSent);
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
      if (payload != 0 && qp.mrs->check_remote(it.rkey, qp.cfg.pd, it.va + offset, payload, IBV_ACCESS_REMOTE_READ,
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
    place_and_seal(spec, l, MutableByteSpan{frame.data, frame.capacity}, qp.tuning->crc, src);
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

std::string to_string(RequestPsnClass c) {
  switch (c) {
    case RequestPsnClass::Expected: return "expected";
    case RequestPsnClass::Duplicate: return "duplicate";
    case RequestPsnClass::Ahead: return "ahead";
  }
  return "unknown";
}

std::string to_string(ResponderOutcome o) {
  switch (o) {
    case ResponderOutcome::Nothing: return "nothing";
    case ResponderOutcome::Progress: return "progress";
    case ResponderOutcome::Fatal: return "fatal";
  }
  return "unknown";
}

std::string to_string(Responder::SequenceState s) {
  switch (s) {
    case Responder::SequenceState::Normal: return "normal";
    case Responder::SequenceState::NakSent: return "nak-sent";
  }
  return "unknown";
}

}  // namespace roce
