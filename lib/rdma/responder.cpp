#include "lib/rdma/responder.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "protocol/icrc_deferred.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

constexpr std::uint32_t kGrhBytes = 40;

bool consumes_receive(const OpcodeInfo& info) {
  return (info.operation == Operation::Send && info.starts_message()) ||
         (info.operation == Operation::Write && info.has_immediate());
}

}  // namespace

void Responder::start(const QpContext& qp) {
  epsn_ = qp.cfg.rq_psn & kPsnMask;
  acked_out_ = psn_add(epsn_, -1);
  msn_ = 0;
  seq_ = SequenceState::Normal;
  set_message(OpenMessage::None);
  drop_msg_ = false;
  msg_offset_ = 0;
  write_va_ = 0;
  write_rkey_ = 0;
  write_remaining_ = 0;
  fatal_ = false;
  run_ = Run{};
  const std::size_t rd = std::max<std::size_t>(qp.cfg.max_dest_rd_atomic, 1);
  resources_.assign(rd, Resource{});
  next_resource_ = 0;
  // Room for one READ/atomic answer per resource and one replay of each, with an ACK or NAK
  // between them. The ring is rounded up to a power of two so a slot is a mask, not a
  // division; the bound stays exact.
  out_capacity_ = 2 * rd + 4;
  out_.assign(std::bit_ceil(out_capacity_), Item{});
  out_mask_ = out_.size() - 1;
  out_head_ = 0;
  out_count_ = 0;
  replays_queued_ = false;
  // Slots hold whole frames: headers around one path MTU (QueuePair::max_frame_bytes).
  // The requester's in-flight caps are taken to be this engine's (both ends ours, as selective
  // repeat is): with a window larger than them, half the window would leave one ACK per cap.
  std::uint32_t cap = UINT32_MAX;
  if (const TransportTuning* t = qp.tuning) {
    cap = t->max_inflight_packets;
    if (t->max_inflight_bytes != 0 && qp.cfg.pmtu != 0) cap = std::min(cap, std::max<std::uint32_t>(1, t->max_inflight_bytes / qp.cfg.pmtu));
  }
  reorder_.start(qp.is_rc() ? qp.cfg.selective_repeat : 0, qp.cfg.pmtu + 128, cap);
}

// The driver: the only place the walk's state changes. Checks run on the packet as parsed; the
// first acting state needs its ICRC known, so a deferred one is settled here, once, unless the
// packet is placed ahead of its verdict (Execute settles it during the copy). on_request, which
// sends a request here or through a run's WRITE path, is in responder_run.cpp.
ResponderOutcome Responder::walk(QpContext& qp, const Packet& pkt, ByteSpan frame, std::byte* placed) {
  Walk w{pkt, frame};
  w.placed = placed;
  w.icrc_known = pkt.icrc_status != IcrcStatus::Deferred;
  RespState s = RespState::CheckPsn;
  while (s != RespState::Done) {
    if (is_check(s)) {
      s = check(qp, w, s);
      continue;
    }
    if (!w.icrc_known && !(s == RespState::Execute && places_ahead(qp, w))) {
      w.icrc_known = true;
      if (!settle_icrc(pkt, qp.tuning->crc)) s = RespState::ErrCorrupted;
    }
    switch (s) {
      case RespState::Execute: s = execute(qp, w); break;
      case RespState::Acknowledge: s = acknowledge(qp, w); break;
      case RespState::Duplicate: s = duplicate(qp, w); break;
      case RespState::ErrCorrupted:
        w.outcome = ResponderOutcome::Corrupted;
        s = RespState::Done;
        break;
      default: s = on_error(qp, w, s); break;
    }
  }
  return w.outcome;
}

PayloadDest Responder::destination(const QpContext& qp, const Packet& pkt) const {
  Walk w{pkt, {}};
  RespState s = RespState::CheckPsn;
  while (is_check(s)) s = check(qp, w, s);
  return s == RespState::Execute ? w.dest : PayloadDest{};
}

bool Responder::places_ahead(const QpContext& qp, const Walk& w) const {
  return w.pkt.payload_length != 0 &&
         (placement_ahead_allowed(w.pkt, qp.is_rc(), w.dest) || last_placement_ahead_allowed(w.pkt, qp.is_rc(), w.dest));
}

// ---- checks ------------------------------------------------------------------------------

// The checks run once each per request, from walk() and destination() only (both here): inlined
// into the walk, each was a call and a return through check()'s switch, about a tenth of a 64 B
// WRITE's instructions on the receive path (docs/perf-changes.md section 36).
[[gnu::always_inline]] inline RespState Responder::check(const QpContext& qp, Walk& w, RespState s) const {
  const Packet& pkt = w.pkt;
  switch (s) {
    case RespState::CheckPsn: return check_psn(qp, w);
    case RespState::CheckOpSeq: return check_op_seq(msg_, *pkt.info);
    case RespState::CheckOpValid: {
      const RespState next = check_op_valid(qp.cfg.type, qp.cfg.access, *pkt.info);
      if (next == RespState::CheckResource && qp.cfg.type == IBV_QPT_UD && pkt.ext.deth.qkey.get() != qp.cfg.qkey)
        return RespState::ErrQkeyViolation;
      if (next == RespState::CheckResource && pkt.info->operation == Operation::Flush) return check_placement_access(qp, w);
      return next;
    }
    case RespState::CheckResource: return check_resource(qp, w);
    case RespState::CheckLength: return check_length(qp, w);
    case RespState::CheckRkey: return check_rkey(qp, w);
    default: return s;
  }
}

[[gnu::always_inline]] inline RespState Responder::check_psn(const QpContext& qp, const Walk& w) const {
  const Packet& pkt = w.pkt;
  switch (qp.cfg.type) {
    case IBV_QPT_RC:
      // Every request may need one output slot (a coalesced ACK needs none, but keep it
      // simple): with no room it is dropped unexecuted and the requester's retry brings it back.
      if (output_full()) return RespState::ErrBusy;
      switch (classify_request_psn(pkt.psn(), epsn_)) {
        case RequestPsnClass::Expected: return RespState::CheckOpSeq;
        case RequestPsnClass::Duplicate: return RespState::Duplicate;
        case RequestPsnClass::Ahead: return RespState::ErrPsnOutOfSeq;
      }
      break;
    case IBV_QPT_UC:
      // A lost packet loses its message: a FIRST/ONLY starts over at its own PSN, anything else
      // is dropped up to the next one.
      if (drop_msg_ || pkt.psn() != epsn_)
        return pkt.info->starts_message() ? RespState::CheckOpSeq : RespState::ErrPsnOutOfSeq;
      return RespState::CheckOpSeq;
    default: break;
  }
  return RespState::CheckOpSeq;  // UD has no sequence
}

[[gnu::always_inline]] inline RespState Responder::check_resource(const QpContext& qp, Walk& w) const {
  const OpcodeInfo& info = *w.pkt.info;
  switch (info.operation) {
    case Operation::ReadRequest:
    case Operation::CmpSwap:
    case Operation::FetchAdd:
    case Operation::AtomicWrite:
    case Operation::Flush:
      // First answers only: replays of duplicates take no resource (the requester counted the
      // request once), and the replays the new request makes stale are dropped when it executes.
      return rd_atomic_in_use() < resources_.size() ? RespState::CheckLength : RespState::ErrTooManyRdAtomic;
    default: break;
  }
  // A SEND (or a WRITE with immediate) that starts a message takes the next receive; the rest
  // of a SEND fills the receive its FIRST took, still at the head.
  if (qp.cfg.type == IBV_QPT_UD || consumes_receive(info) || info.operation == Operation::Send) {
    w.recv = qp.next_receive();
    if (w.recv == nullptr) return RespState::ErrRnr;
  }
  return RespState::CheckLength;
}

[[gnu::always_inline]] inline RespState Responder::check_length(const QpContext& qp, const Walk& w) const {
  const Packet& pkt = w.pkt;
  const OpcodeInfo& info = *pkt.info;
  if (!fits_pmtu(info, pkt.payload_length, qp.cfg.pmtu)) return RespState::ErrLength;
  switch (info.operation) {
    case Operation::Write:
      if (!fits_write(info, pkt.payload_length, pkt.ext.reth.dma_length.get(), write_remaining_)) return RespState::ErrLength;
      break;
    case Operation::ReadRequest:
    case Operation::Flush:
      if (pkt.ext.reth.dma_length.get() > kMaxMessageBytes) return RespState::ErrLength;
      break;
    case Operation::AtomicWrite:  // the RETH names exactly the 8 bytes the packet carries
      if (pkt.ext.reth.dma_length.get() != 8 || pkt.payload_length != 8) return RespState::ErrLength;
      break;
    case Operation::Send: {
      const RecvWqe& r = *w.recv;
      if (r.local_error) return RespState::ErrMalformedWqe;
      const std::uint64_t offset = qp.cfg.type == IBV_QPT_UD  ? kGrhBytes
                                   : info.starts_message() ? 0
                                                           : msg_offset_;
      if (offset + pkt.payload_length > r.length) return RespState::ErrRecvTooSmall;
      break;
    }
    default: break;
  }
  return RespState::CheckRkey;
}

[[gnu::always_inline]] inline RespState Responder::check_rkey(const QpContext& qp, Walk& w) const {
  const Packet& pkt = w.pkt;
  const OpcodeInfo& info = *pkt.info;
  const std::uint32_t len = pkt.payload_length;
  switch (info.operation) {
    case Operation::Write: {
      std::uint64_t va = write_va_;
      std::uint32_t rkey = write_rkey_;
      std::uint64_t rest = write_remaining_;
      if (info.starts_message()) {
        va = pkt.ext.reth.va.get();
        rkey = pkt.ext.reth.rkey.get();
        rest = pkt.ext.reth.dma_length.get();
        // The whole message is checked at its start; a zero-length WRITE touches no memory, so
        // its R_Key is not checked (IBA 9.7.4.1.3).
        std::byte* whole = nullptr;
        if (rest != 0 && qp.mrs->check_remote(rkey, qp.cfg.pd, qp.cfg.qpn, va, rest, IBV_ACCESS_REMOTE_WRITE, &whole) != AccessResult::Ok)
          return RespState::ErrRkeyViolation;
        // The packet's range starts the range just checked (check_length: len <= rest), so it
        // lands at the start of `whole`: a second look-up of the same key would find the same.
        if (len == 0) return RespState::Execute;
        w.dest.dst = whole;
        if (!info.ends_message()) w.dest.next = {whole + len, std::min<std::uint64_t>(len, rest - len)};
        return RespState::Execute;
      }
      if (len == 0) return RespState::Execute;
      // ... and every later packet's own range again: the region may have gone since.
      std::byte* dst = nullptr;
      if (qp.mrs->check_remote(rkey, qp.cfg.pd, qp.cfg.qpn, va, len, IBV_ACCESS_REMOTE_WRITE, &dst) != AccessResult::Ok)
        return RespState::ErrRkeyViolation;
      w.dest.dst = dst;
      if (!info.ends_message()) w.dest.next = {dst + len, std::min<std::uint64_t>(len, rest - len)};
      return RespState::Execute;
    }
    case Operation::ReadRequest: {
      const std::uint32_t rlen = pkt.ext.reth.dma_length.get();
      std::byte* src = nullptr;
      if (rlen != 0 && qp.mrs->check_remote(pkt.ext.reth.rkey.get(), qp.cfg.pd, qp.cfg.qpn, pkt.ext.reth.va.get(), rlen,
                                            IBV_ACCESS_REMOTE_READ, &src) != AccessResult::Ok)
        return RespState::ErrRkeyViolation;
      return RespState::Execute;
    }
    case Operation::AtomicWrite:
    case Operation::Flush: return check_placement_rkey(qp, w);
    case Operation::CmpSwap:
    case Operation::FetchAdd:
      if (pkt.ext.atomic.va.get() % 8 != 0) return RespState::ErrMisalignedAtomic;
      if (qp.mrs->check_remote(pkt.ext.atomic.rkey.get(), qp.cfg.pd, qp.cfg.qpn, pkt.ext.atomic.va.get(), 8, IBV_ACCESS_REMOTE_ATOMIC,
                               &w.target) != AccessResult::Ok)
        return RespState::ErrRkeyViolation;
      return RespState::Execute;
    case Operation::Send: {
      // No R_Key: the payload goes to the receive's scatter list.
      const RecvWqe& r = *w.recv;
      const bool ud = qp.cfg.type == IBV_QPT_UD;
      const std::uint64_t offset = ud ? kGrhBytes : info.starts_message() ? 0 : msg_offset_;
      const std::uint64_t next = info.ends_message() ? 0 : std::min<std::uint64_t>(len, r.length - offset - len);
      w.dest = segment_dest(qp.recv_segs(r), r.num_seg, offset, len, next);
      return RespState::Execute;
    }
    default: break;
  }
  return RespState::Execute;
}

// ---- acting states -----------------------------------------------------------------------

RespState Responder::execute(QpContext& qp, Walk& w) {
  const OpcodeInfo& info = *w.pkt.info;
  if (info.starts_message()) drop_msg_ = false;
  switch (info.operation) {
    case Operation::Send: return qp.cfg.type == IBV_QPT_UD ? execute_ud(qp, w) : execute_send(qp, w);
    case Operation::Write: return execute_write(qp, w);
    case Operation::ReadRequest: return execute_read(qp, w);
    case Operation::CmpSwap:
    case Operation::FetchAdd: return execute_atomic(w);
    case Operation::AtomicWrite: return execute_atomic_write(w);
    case Operation::Flush: return execute_flush(w);
    default: return RespState::ErrUnsupportedOpcode;
  }
}

RespState Responder::execute_send(QpContext& qp, Walk& w) {
  const Packet& pkt = w.pkt;
  const OpcodeInfo& info = *pkt.info;
  if (w.placed != nullptr) {
    // Placed when it arrived ahead (responder_reorder.cpp); the message must put it there too.
    if (w.dest.dst != w.placed) return RespState::ErrLength;
  } else if (!place_payload(pkt, w.dest, qp.tuning->crc, !w.icrc_known)) {
    return RespState::ErrCorrupted;
  }
  w.icrc_known = true;
  if (info.starts_message()) {
    set_message(OpenMessage::Send);
    msg_offset_ = 0;
    if (!info.ends_message()) qp.hold_receive();  // SRQ: no other QP's message may take it now
  }
  msg_offset_ += pkt.payload_length;
  w.outcome = ResponderOutcome::Progress;
  if (!info.ends_message()) return RespState::Acknowledge;
  unsigned flags = 0;
  std::uint32_t extra = 0;
  if (info.has_immediate()) {
    flags |= IBV_WC_WITH_IMM;
    std::memcpy(&extra, pkt.ext.imm.bytes.data(), 4);
  }
  if (info.has_invalidate()) {
    extra = pkt.ext.ieth.rkey.get();
    if (!qp.mrs->invalidate(extra, qp.cfg.pd, qp.cfg.qpn)) return RespState::ErrInvalidateRkey;
    flags |= IBV_WC_WITH_INV;
  }
  msn_ = psn_next(msn_);
  complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV, msg_offset_, flags, extra, 0);
  set_message(OpenMessage::None);
  return RespState::Acknowledge;
}

RespState Responder::execute_write(QpContext& qp, Walk& w) {
  const Packet& pkt = w.pkt;
  const OpcodeInfo& info = *pkt.info;
  if (w.placed != nullptr) {
    // Placed when it arrived ahead, from what its PSN said of the message; in sequence now, the
    // message must put it at the same place. Only a requester whose packets contradict each
    // other gets here otherwise: its request is invalid.
    if (w.dest.dst != w.placed) return RespState::ErrLength;
  } else if (pkt.payload_length && !place_payload(pkt, w.dest, qp.tuning->crc, !w.icrc_known)) {
    return RespState::ErrCorrupted;
  }
  w.icrc_known = true;
  const bool first = info.starts_message();
  const bool ended = advance_write(info, first ? pkt.ext.reth.va.get() : 0, first ? pkt.ext.reth.rkey.get() : 0,
                                   first ? pkt.ext.reth.dma_length.get() : 0, pkt.payload_length);
  w.outcome = ResponderOutcome::Progress;
  if (ended && info.has_immediate()) {
    std::uint32_t imm = 0;
    std::memcpy(&imm, pkt.ext.imm.bytes.data(), 4);
    complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, write_length_, IBV_WC_WITH_IMM, imm, 0);
  }
  return RespState::Acknowledge;
}

RespState Responder::execute_ud(QpContext& qp, Walk& w) {
  const Packet& pkt = w.pkt;
  const RecvWqe& r = *w.recv;
  // The first 40 bytes hold the GRH; for IPv4 its last 20 bytes are the IPv4 header, as rxe does.
  std::byte grh[kGrhBytes] = {};
  if (pkt.ip_version == IpVersion::V6)
    std::memcpy(grh, w.frame.data() + pkt.l3_offset, kGrhBytes);
  else
    std::memcpy(grh + 20, w.frame.data() + pkt.l3_offset, 20);
  copy_to_segments(qp.recv_segs(r), r.num_seg, 0, grh, kGrhBytes);
  place_payload(pkt, w.dest, qp.tuning->crc, false);
  std::uint32_t imm = 0;
  unsigned flags = IBV_WC_GRH;
  if (pkt.info->has_immediate()) {
    std::memcpy(&imm, pkt.ext.imm.bytes.data(), 4);
    flags |= IBV_WC_WITH_IMM;
  }
  complete_receive(qp, IBV_WC_SUCCESS, IBV_WC_RECV, kGrhBytes + pkt.payload_length, flags, imm, pkt.ext.deth.source_qp());
  w.outcome = ResponderOutcome::Progress;
  return RespState::Done;
}

RespState Responder::execute_read(QpContext& qp, Walk& w) {
  const Packet& pkt = w.pkt;
  drop_stale_replays();
  const std::uint64_t va = pkt.ext.reth.va.get();
  const std::uint32_t len = pkt.ext.reth.dma_length.get();
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
  seq_ = SequenceState::Normal;
  w.outcome = ResponderOutcome::Progress;
  return RespState::Done;  // the responses acknowledge it
}

RespState Responder::execute_atomic(Walk& w) {
  const Packet& pkt = w.pkt;
  drop_stale_replays();
  // Host memory may be shared with the application's threads: operate atomically.
  std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(w.target));
  std::uint64_t original;
  if (pkt.info->operation == Operation::CmpSwap) {
    original = pkt.ext.atomic.compare.get();
    word.compare_exchange_strong(original, pkt.ext.atomic.swap_add.get());
  } else {
    original = word.fetch_add(pkt.ext.atomic.swap_add.get());
  }
  msn_ = psn_next(msn_);
  Resource& r = next_resource();
  r = Resource{Resource::Kind::Atomic, pkt.psn(), 1, pkt.ext.atomic.va.get(), pkt.ext.atomic.rkey.get(), 8, original};
  Item& it = push_item();
  it.kind = Item::Kind::AtomicAck;
  it.psn = pkt.psn();
  it.msn = msn_;
  it.original = original;
  epsn_ = psn_next(pkt.psn());
  seq_ = SequenceState::Normal;
  w.outcome = ResponderOutcome::Progress;
  return RespState::Done;  // the atomic ACK acknowledges it
}

RespState Responder::acknowledge(QpContext& qp, Walk& w) {
  epsn_ = psn_next(w.pkt.psn());
  if (qp.is_rc()) {
    seq_ = SequenceState::Normal;
    if (w.pkt.bth.ack_requested()) queue_ack(qp, w.pkt.psn());
  }
  return RespState::Done;
}

RespState Responder::on_error(QpContext& qp, Walk& w, RespState error) {
  const ErrorPolicy& p = error_policy(qp.cfg.type, error);
  const Packet& pkt = w.pkt;
  if (p.counter != Counter::Count) qp.counters.inc(p.counter);
  if (p.recv_status != IBV_WC_SUCCESS && w.recv) {
    // What the receive holds: a SEND with invalidate failed after its last bytes landed.
    const bool placed = error == RespState::ErrInvalidateRkey || (!pkt.info->starts_message() && qp.cfg.type != IBV_QPT_UD);
    complete_receive(qp, p.recv_status, IBV_WC_RECV, placed ? msg_offset_ : 0, 0, 0, 0);
    w.outcome = ResponderOutcome::Progress;
  }
  switch (p.action) {
    case ErrorAction::Drop: return RespState::Done;
    case ErrorAction::Complete: return RespState::Done;
    case ErrorAction::NakSequence:
      if (seq_ == SequenceState::Normal) {
        queue_nak(qp, epsn_, Syndrome::nak(NakCode::PsnSequenceError));
        seq_ = SequenceState::NakSent;
      }
      return RespState::Done;
    case ErrorAction::NakRnr:
      queue_nak(qp, pkt.psn(), Syndrome::rnr_nak(qp.cfg.min_rnr_timer));
      seq_ = SequenceState::NakSent;
      w.outcome = ResponderOutcome::Progress;
      return RespState::Done;
    case ErrorAction::NakFatal:
      queue_nak(qp, pkt.psn(), Syndrome::nak(p.nak));
      set_message(OpenMessage::None);
      w.outcome = ResponderOutcome::Fatal;
      return RespState::Done;
    case ErrorAction::AbandonOpen:
      // The open message never got its end; a FIRST/ONLY starts the next one.
      set_message(OpenMessage::None);
      if (pkt.info->starts_message()) return RespState::CheckOpValid;
      drop_msg_ = true;
      return RespState::Done;
    case ErrorAction::DropMessage:
      // UC: the message this packet belongs to is lost; wait for the next FIRST/ONLY.
      if (msg_ != OpenMessage::None || pkt.info->starts_message()) qp.counters.inc(Counter::UcMessagesDropped);
      set_message(OpenMessage::None);
      drop_msg_ = !pkt.info->ends_message();
      return RespState::Done;
  }
  return RespState::Done;
}

void Responder::complete_receive(QpContext& qp, ibv_wc_status status, ibv_wc_opcode opcode, std::uint32_t byte_len,
                                 unsigned flags, std::uint32_t imm_or_rkey, std::uint32_t src_qp) {
  const RecvWqe& r = *qp.next_receive();
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
  qp.pop_receive();
  qp.counters.inc(Counter::RdmaRecvs);
}

std::string to_string(ResponderOutcome o) {
  switch (o) {
    case ResponderOutcome::Nothing: return "nothing";
    case ResponderOutcome::Progress: return "progress";
    case ResponderOutcome::Fatal: return "fatal";
    case ResponderOutcome::Corrupted: return "corrupted";
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

}  // namespace roce::rdma
