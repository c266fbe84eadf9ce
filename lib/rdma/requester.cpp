#include "lib/rdma/requester.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "lib/rdma/local_ops.hpp"
#include "lib/rdma/short_copy.hpp"
#include "protocol/psn.hpp"
#include "protocol/request_template.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

// The request opcode for packet `index` of `npackets` of a work request on a QP type.
Opcode request_opcode(ibv_qp_type type, const SendWqe& w, std::uint32_t index) {
  const bool first = index == 0;
  const bool last = index + 1 == w.npackets;
  const bool uc = type == IBV_QPT_UC;
  auto pick = [&](Opcode f, Opcode m, Opcode l, Opcode o) { return first ? (last ? o : f) : (last ? l : m); };
  if (w.is_flush()) return Opcode::RcFlush;  // IBV_WR_FLUSH is not in Debian 12's enum
  switch (w.opcode) {
    case IBV_WR_SEND:
      if (type == IBV_QPT_UD) return Opcode::UdSendOnly;
      return uc ? pick(Opcode::UcSendFirst, Opcode::UcSendMiddle, Opcode::UcSendLast, Opcode::UcSendOnly)
                : pick(Opcode::RcSendFirst, Opcode::RcSendMiddle, Opcode::RcSendLast, Opcode::RcSendOnly);
    case IBV_WR_SEND_WITH_IMM:
      if (type == IBV_QPT_UD) return Opcode::UdSendOnlyImm;
      return uc ? pick(Opcode::UcSendFirst, Opcode::UcSendMiddle, Opcode::UcSendLastImm, Opcode::UcSendOnlyImm)
                : pick(Opcode::RcSendFirst, Opcode::RcSendMiddle, Opcode::RcSendLastImm, Opcode::RcSendOnlyImm);
    case IBV_WR_SEND_WITH_INV:
      return pick(Opcode::RcSendFirst, Opcode::RcSendMiddle, Opcode::RcSendLastInv, Opcode::RcSendOnlyInv);
    case IBV_WR_RDMA_WRITE:
      return uc ? pick(Opcode::UcWriteFirst, Opcode::UcWriteMiddle, Opcode::UcWriteLast, Opcode::UcWriteOnly)
                : pick(Opcode::RcWriteFirst, Opcode::RcWriteMiddle, Opcode::RcWriteLast, Opcode::RcWriteOnly);
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return uc ? pick(Opcode::UcWriteFirst, Opcode::UcWriteMiddle, Opcode::UcWriteLastImm, Opcode::UcWriteOnlyImm)
                : pick(Opcode::RcWriteFirst, Opcode::RcWriteMiddle, Opcode::RcWriteLastImm, Opcode::RcWriteOnlyImm);
    case IBV_WR_RDMA_READ: return Opcode::RcReadRequest;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return Opcode::RcCmpSwap;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return Opcode::RcFetchAdd;
    case IBV_WR_ATOMIC_WRITE: return Opcode::RcAtomicWrite;
    default: return Opcode::RcSendOnly;  // post_send refuses other opcodes
  }
}

// The frame's headers from the builder: the connection's path with this frame's fields (and a
// UD datagram's address), where no request template applies.
FrameSpec request_spec(const QpContext& qp, const SendWqe& w, const RequestFields& f, const ExtHeaders& ext) {
  FrameSpec spec = qp.path;
  spec.ext = ext;
  spec.bth.opcode = f.opcode;
  spec.bth.psn.set(f.psn);
  if (f.solicited) spec.bth.set_se(true);
  if (qp.cfg.type == IBV_QPT_UD) {
    spec.bth.dest_qp.set(w.ud.remote_qpn);
    spec.eth.dst = w.ud.mac;
    if (w.ud.ipv6) spec.ipv6.dst = w.ud.ipv6_addr; else spec.ipv4.dst = w.ud.ipv4;
    // The AH's traffic class and flow label (an RC QP takes its own from the path at RTR).
    const auto ecn = static_cast<std::uint8_t>(spec.ipv4.tos & 3u);
    spec.ipv4.tos = static_cast<std::uint8_t>((w.ud.traffic_class & ~3u) | ecn);
    spec.ipv6.traffic_class = spec.ipv4.tos;
    spec.ipv6.flow_label = w.ud.flow_label;
  }
  if (qp.is_rc()) spec.bth.set_ack_requested(f.ack_requested);
  return spec;
}

FrameLayout write_frame_headers(const RequestTemplate& t, const RequestFields& f, const ExtHeaders& ext, MutableByteSpan out) {
  return t.write_headers(f, ext, out);
}
FrameLayout write_frame_headers(const FrameSpec& spec, const RequestFields& f, const ExtHeaders&, MutableByteSpan out) {
  return write_headers(spec, f.payload_length, out);
}
void place_and_seal_frame(const RequestTemplate& t, const QpContext& qp, const FrameLayout& l, MutableByteSpan out,
                          const std::byte* src) {
  t.place_and_seal(l, out, qp.tuning->crc, src);
}
void place_and_seal_frame(const FrameSpec& spec, const QpContext& qp, const FrameLayout& l, MutableByteSpan out,
                          const std::byte* src) {
  place_and_seal(spec, l, out, qp.tuning->crc, src, qp.icrc_cache);
}
void seal_frame(const RequestTemplate& t, const QpContext& qp, const FrameLayout& l, MutableByteSpan out) {
  t.seal(l, out, qp.tuning->crc);
}
void seal_frame(const FrameSpec& spec, const QpContext& qp, const FrameLayout& l, MutableByteSpan out) {
  seal(spec, l, out, qp.tuning->crc, qp.icrc_cache);
}

// Headers, payload from the WQE's segments, ICRC; `how` is the QP's request template or a
// FrameSpec for the builder. Inline: a call cost about 25 instructions.
template <typename How>
[[gnu::always_inline]] inline FrameLayout emit(QpContext& qp, const SendWqe& w, std::uint64_t offset, const RequestFields& f,
                                               const ExtHeaders& ext, MutableByteSpan out, const How& how) {
  const FrameLayout l = write_frame_headers(how, f, ext, out);
  if (!l.ok()) return l;
  const std::uint32_t payload = f.payload_length;
  const LocalSegment* segs = qp.send_segs(w);
  // A WR of one SGE without the segment walk's call.
  const std::byte* src = w.num_seg == 1 && offset < segs[0].length && payload <= segs[0].length - offset
                             ? segs[0].ptr + offset
                             : contiguous_in_segments(segs, w.num_seg, offset, payload);
  if (src || !payload) {
    place_and_seal_frame(how, qp, l, out, src);
  } else {  // the payload spans segments
    copy_from_segments(qp.send_segs(w), w.num_seg, offset, out.data() + l.payload_offset, payload);
    seal_frame(how, qp, l, out);
  }
  return l;
}

// emit() through the QP's request template, or the builder where it has none (which always
// seals at once).
[[gnu::always_inline]] inline FrameLayout emit_request(QpContext& qp, const SendWqe& w, std::uint64_t offset, const RequestFields& f,
                                                       const ExtHeaders& ext, TxFrame& frame) {
  const MutableByteSpan out{frame.data, frame.capacity};
  return qp.request_template.ready() ? emit(qp, w, offset, f, ext, out, qp.request_template)
                                     : emit(qp, w, offset, f, ext, out, request_spec(qp, w, f, ext));
}

// A run's frame (build_run: its WQE's one packet, the whole payload at offset 0) with its headers
// from the request template's image (RequestTemplate::Image; `image` fits the frame's fields),
// the payload from the WQE's segments, and the ICRC, or with `seal_later` the frame put in the
// run's batch as emit() does. False where write_headers() refuses the frame (nothing counted).
[[gnu::always_inline]] inline bool emit_from_image(QpContext& qp, const SendWqe& w, std::uint32_t psn, const ExtHeaders& ext,
                                                   TxFrame& frame, const RequestTemplate::Image& image,
                                                   IcrcSealBatch* seal_later) {
  const RequestTemplate& t = qp.request_template;
  const MutableByteSpan out{frame.data, frame.capacity};
  if (t.write_from_image(image, psn, ext, out) != BuildError::None) return false;
  const FrameLayout& l = image.layout();
  const std::uint32_t payload = l.payload_length;
  const LocalSegment* segs = qp.send_segs(w);
  const std::byte* src =
      w.num_seg == 1 && payload <= segs[0].length ? segs[0].ptr : contiguous_in_segments(segs, w.num_seg, 0, payload);
  if (src || !payload) {
    if (seal_later && payload < kSealCopyingFrom) {
      // A short payload (64 B: every frame of the rate case) by a few moves, not libc's memcpy,
      // whose call made the loop save and restore registers around it.
      if (payload <= kShortCopyMax) {
        copy_short(out.data() + l.payload_offset, src, payload);
        seal_later->add(pad_unsealed(l, out));
      } else {
        seal_later->add(place_unsealed(l, out, src));
      }
      return true;
    }
    t.place_and_seal(l, out, qp.tuning->crc, src);
  } else {  // the payload spans segments
    copy_from_segments(segs, w.num_seg, 0, out.data() + l.payload_offset, payload);
    t.seal(l, out, qp.tuning->crc);
  }
  return true;
}

}  // namespace

void Requester::start(const QpContext& qp) {
  next_psn_ = qp.cfg.sq_psn & kPsnMask;
  sent_end_psn_ = next_psn_;
  send_pos_ = next_psn_;
  una_hint_ = next_psn_;
  cursor_ = qp.sq.head();
  state_ = State::Ready;
  rnr_until_ = kNever;
  inflight_rd_atomic_ = 0;
  packets_since_ack_req_ = 0;
  in_step_turns_ = whole_turns_ = 0;
  parts_idle_ = false;
  probing_ = false;
  sr_window_ = qp.is_rc() ? qp.cfg.selective_repeat : 0;
  sr_pending_ = 0;
  sack_epsn_ = next_psn_;
  sack_held_ = {};
  held_ahead_ = 0;
  probed_ = false;
  tx_seq_ = 0;
  sr_.fill(PsnSlot{});
  rd_.fill(PsnSlot{});
  rd_pending_ = 0;
  read_hole_count_ = 0;
}

bool Requester::window_allows(const QpContext& qp, const SendWqe& w) const {
  if (qp.cfg.type == IBV_QPT_UD || qp.cfg.type == IBV_QPT_UC) return true;
  const std::uint32_t psn = w.state == WqeState::Posted ? next_psn_ : psn_add(w.first_psn, w.next_packet);
  const std::int32_t reach = psn_diff(psn, una_hint_);
  const std::int32_t inflight = reach - static_cast<std::int32_t>(held_ahead());  // in the network
  if (inflight >= static_cast<std::int32_t>(qp.tuning->max_inflight_packets)) return false;
  // The window's limit is at least one packet: with none in flight it holds nothing back (and
  // SendWindow::limit is not asked, at queue depth 1 on every check).
  if (inflight > 0 && static_cast<std::int64_t>(inflight) >= static_cast<std::int64_t>(window_limit())) return false;
  // Selective repeat: no further ahead than the responder's reorder buffer reaches.
  if (sr_window_ != 0 && reach >= static_cast<std::int32_t>(sr_window_)) return false;
  // A READ whose responses are tracked one by one starts only when all of them fall within
  // kSackSpan of una (requester_read_holes.cpp keeps them in a slot per PSN modulo that).
  if (sr_window_ != 0 && w.state == WqeState::Posted && w.is_read()) {
    const std::uint32_t n = packets_for(w.length, qp.cfg.pmtu);
    if (n <= kSackSpan && reach > 0 && static_cast<std::uint32_t>(reach) + n > kSackSpan) return false;
  }
  if (qp.tuning->max_inflight_bytes != 0 && inflight > 0 &&
      static_cast<std::uint64_t>(inflight) * qp.cfg.pmtu >= qp.tuning->max_inflight_bytes)
    return false;
  if (w.state == WqeState::Posted) {
    const std::uint32_t limit = std::max<std::uint32_t>(qp.cfg.max_rd_atomic, 1);
    if (w.needs_response_data() && inflight_rd_atomic_ >= limit) return false;
    // A fenced WQE waits for every earlier READ and atomic to finish.
    if ((w.send_flags & IBV_SEND_FENCE) && inflight_rd_atomic_ > 0) return false;
  }
  return true;
}

std::uint32_t Requester::turn_limit(const QpContext& qp) const {
  if (!qp.is_rc() || sr_window_ != 0) return UINT32_MAX;
  std::uint64_t cap = 0;
  std::uint64_t parts = qp.tuning->small_window_parts;
  if (qp.tuning->split_small_window) {
    // Any small cap: the static caps, the send window, the BDP cap.
    cap = std::min<std::uint64_t>(qp.tuning->max_inflight_packets, std::max<std::uint32_t>(window_limit(), 1));
    if (const std::uint64_t bytes = qp.tuning->max_inflight_bytes; bytes != 0) cap = std::min<std::uint64_t>(cap, (bytes + qp.cfg.pmtu - 1) / qp.cfg.pmtu);
  } else if (qp.tuning->window.bdp_cap_split && window_ != nullptr && !parts_idle_) {
    cap = window_->bdp_split_cap();  // only while the BDP cap bounds the QP (after losses)
    if (cap == 0) return UINT32_MAX;
    parts = qp.tuning->window.bdp_cap_parts;
  } else {
    return UINT32_MAX;
  }
  parts = std::max<std::uint64_t>(parts, 1);
  const std::uint64_t part = (cap + parts - 1) / parts;
  return part < qp.tuning->tx_quantum ? static_cast<std::uint32_t>(part) : UINT32_MAX;
}

void Requester::note_turn(const QpContext& qp) {
  // A peer that keeps in step answers each part before this QP's next turn: every turn then
  // begins with nothing in flight. Where the parts pay, the turn after a part begins with that
  // part still in flight (the next call comes at once, the answer a round trip later).
  constexpr std::uint16_t kInStepTurns = 4;
  constexpr std::uint16_t kWholeTurns = 256;
  if (!qp.tuning->window.bdp_cap_split_adaptive || !qp.tuning->window.bdp_cap_split || qp.tuning->split_small_window ||
      window_ == nullptr || sr_window_ != 0 || window_->bdp_split_cap() == 0)
    return;
  if (parts_idle_) {
    if (++whole_turns_ >= kWholeTurns) {  // try the parts again: the peer may have fallen behind
      parts_idle_ = false;
      in_step_turns_ = 0;
    }
    return;
  }
  const std::int32_t inflight = psn_diff(send_pos_, una_hint_);  // go-back-N: nothing held ahead
  in_step_turns_ = inflight <= 0 ? static_cast<std::uint16_t>(in_step_turns_ + 1) : 0;
  if (in_step_turns_ >= kInStepTurns) {
    parts_idle_ = true;
    whole_turns_ = 0;
  }
}

bool Requester::can_send_walk(const QpContext& qp) const {
  if (!qp.sends_requests() || state_ != State::Ready) return false;
  if (sr_pending_ != 0 || rd_pending_ != 0) return true;  // a resend replaces a lost packet: no window holds it back
  for (std::uint64_t i = cursor_; i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (!all_sent(w)) return window_allows(qp, w);
  }
  return false;
}

bool Requester::drained(const QpContext& qp) const {
  // Every WQE in flight, not only those before the cursor: the cursor may rest on a WQE whose
  // last packet went (nothing_left), and after a rewind it stands before WQEs sent already.
  // WQEs start in order, so the first not yet started ends the search.
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const WqeState st = qp.sq.at(i).state;
    if (st == WqeState::InFlight) return false;
    if (st == WqeState::Posted) break;
  }
  return true;
}

bool Requester::build_next(QpContext& qp, TxFrame& frame, bool* local_error) {
  *local_error = false;
  if (!qp.sends_requests() || state_ != State::Ready) return false;
  if (sr_pending_ != 0 && build_selective(qp, frame)) return true;
  if (rd_pending_ != 0 && build_read_hole(qp, frame)) return true;
  while (SendWqe* next = skip_sent(qp)) {
    SendWqe& w = *next;
    if (!window_allows(qp, w)) return false;
    if (w.state == WqeState::Posted) {
      if (qp.state == QpState::Sqd) return false;  // draining: finish what is in flight, start nothing
      if (w.local_error) {
        w.state = WqeState::Done;
        w.status = IBV_WC_LOC_PROT_ERR;
        *local_error = true;
        return false;
      }
      if (w.is_local_op()) {  // LOCAL_INV, BIND_MW: done here, in send queue order
        w.state = WqeState::Done;
        w.status = execute_local_op(qp, w);
        local_done_ = true;
        if (w.status != IBV_WC_SUCCESS) {
          *local_error = true;
          return false;
        }
        ++cursor_;
        continue;
      }
      start_wqe(qp, w);
    }
    write_packet(qp, w, frame);
    return true;
  }
  return false;
}

void Requester::start_wqe(QpContext& qp, SendWqe& w) {
  w.npackets = w.is_atomic() ? 1 : packets_for(w.length, qp.cfg.pmtu);
  w.first_psn = next_psn_;
  w.next_packet = 0;
  // post_send leaves the progress of a READ's responses as the slot's previous WQE had it: only
  // a READ reads it (and rd_credit_held is false since post_send).
  if (w.is_read()) {
    w.read_packets_received = 0;
    w.read_expect_first = true;
    w.read_high = 0;
    w.read_in_order = sr_window_ != 0 && overlaps_earlier_read(qp, cursor_);
  }
  next_psn_ = psn_add(next_psn_, w.npackets);
  w.state = WqeState::InFlight;
  if (w.needs_response_data()) ++inflight_rd_atomic_;
}

std::uint32_t Requester::run_room(const QpContext& qp) const {
  if (!qp.is_rc() || qp.state != QpState::Rts || state_ != State::Ready || sr_pending_ != 0 || rd_pending_ != 0) return 0;
  // window_allows() for a WQE not yet started, k frames into the run: its PSN is next_psn_ + k,
  // so the packets in flight and the reach grow by k, and each bound below is where it stops.
  const std::int64_t reach = psn_diff(next_psn_, una_hint_);
  const std::int64_t inflight = reach - static_cast<std::int64_t>(held_ahead());
  std::int64_t room = std::int64_t{qp.tuning->max_inflight_packets} - inflight;
  // The window's limit holds nothing back with nothing in flight: a limit below one is one.
  // So with nothing in flight and at most one WQE from the cursor on (queue depth 1, every
  // round trip) the window allows that one and the room is one: SendWindow::limit (about 60
  // instructions) is not asked, as window_allows does not ask it then.
  if (inflight <= 0 && qp.sq.tail() - cursor_ <= 1) room = std::min<std::int64_t>(room, 1);
  else room = std::min(room, std::max<std::int64_t>(window_limit(), 1) - inflight);
  if (sr_window_ != 0) room = std::min(room, std::int64_t{sr_window_} - reach);
  if (const std::uint64_t bytes = qp.tuning->max_inflight_bytes; bytes != 0) {
    // inflight x pmtu >= bytes stops a packet: inflight below bytes / pmtu rounded up goes.
    const auto packets = static_cast<std::int64_t>((bytes + qp.cfg.pmtu - 1) / qp.cfg.pmtu);
    room = std::min(room, packets - inflight);
  }
  return room > 0 ? static_cast<std::uint32_t>(std::min<std::int64_t>(room, UINT32_MAX)) : 0;
}

// Inline: build_run's per frame.
template <bool kTemplate>
[[gnu::always_inline]] inline bool Requester::write_run_packet(QpContext& qp, const SendWqe& w, TxFrame& frame,
                                                                std::uint32_t psn, ExtHeaders& ext, IcrcSealBatch* seal) {
  // write_packet() for a WQE run_fits() took: its one packet (index 0, an ONLY opcode, the whole
  // payload at offset 0), the extension headers that opcode has, SE as its flags say.
  Opcode op = Opcode::RcSendOnly;
  switch (w.opcode) {
    case IBV_WR_RDMA_WRITE:
      op = Opcode::RcWriteOnly;
      ext.reth = Reth{Be64::of(w.remote_addr), Be32::of(w.rkey), Be32::of(w.length)};
      break;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      op = Opcode::RcWriteOnlyImm;
      ext.reth = Reth{Be64::of(w.remote_addr), Be32::of(w.rkey), Be32::of(w.length)};
      std::memcpy(ext.imm.bytes.data(), &w.imm_or_rkey, 4);
      break;
    case IBV_WR_SEND_WITH_IMM:
      op = Opcode::RcSendOnlyImm;
      std::memcpy(ext.imm.bytes.data(), &w.imm_or_rkey, 4);
      break;
    case IBV_WR_SEND_WITH_INV:
      op = Opcode::RcSendOnlyInv;
      ext.ieth.rkey.set(w.imm_or_rkey);
      break;
    default: break;  // IBV_WR_SEND
  }
  const bool solicited = (w.send_flags & IBV_SEND_SOLICITED) != 0;
  if (run_seal_.full()) seal_run(qp);
  bool ok;
  std::size_t length;
  if constexpr (kTemplate) {
    // A frame whose opcode, SE or length differs from the last one's has its headers' image made
    // again (out of line; at 64 B once for the QP's life).
    const RequestTemplate::Image& image = qp.request_template.image_for(raw(op), solicited, true, w.length);
    ok = emit_from_image(qp, w, psn, ext, frame, image, seal);
    length = image.layout().length;
  } else {
    const FrameLayout l = emit_request(qp, w, 0, RequestFields{raw(op), psn, solicited, true, w.length}, ext, frame);
    ok = l.ok();
    length = l.length;
  }
  if (!ok) {  // the engine sizes frames for pmtu + headers; this is a configuration bug
    frame.length = 0;
    qp.counters.inc(Counter::SendErr);
    return false;
  }
  frame.length = static_cast<std::uint32_t>(length);
  return true;
}

// Inline: asked per frame of a run.
[[gnu::always_inline]] inline bool Requester::run_fits(const QpContext& qp, const SendWqe& w) const {
  if (w.state != WqeState::Posted || w.local_error || w.length > qp.cfg.pmtu) return false;
  switch (w.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: break;
    default: return false;  // READ, atomics, FLUSH, local operations: the frame-at-a-time path
  }
  return !((w.send_flags & IBV_SEND_FENCE) && inflight_rd_atomic_ > 0);
}

// The run with the request template inline in build_run (the name the hot path's link order,
// scripts/hot-text.order, lists), the builder's out of line.
template <bool kTemplate>
[[gnu::always_inline]] inline std::size_t Requester::build_run_as(QpContext& qp, std::span<TxFrame> frames) {
  // What write_packet and send_packet decide per frame is the same for every frame of a run: the
  // ONLY opcode asks for an ACK (so does every packet ending a message), a new PSN is never a
  // resend, and nothing in between reads the bookkeeping, which is done once after the last.
  ExtHeaders ext = qp.path.ext;
  IcrcSealBatch* const seal = kTemplate && qp.tuning->seal_runs ? &run_seal_ : nullptr;
  const std::uint32_t first = next_psn_;
  std::uint32_t sends = 0;
  std::size_t n = 0;
  for (; n < frames.size(); ++n) {
    SendWqe* w = skip_sent(qp);
    if (w == nullptr || !run_fits(qp, *w)) break;
    // start_wqe for one packet (run_fits: at most one path MTU, no response data), sent at once.
    const std::uint32_t psn = next_psn_;
    w->npackets = 1;
    w->first_psn = psn;
    w->next_packet = 1;
    w->state = WqeState::InFlight;
    next_psn_ = psn_next(psn);
    ++cursor_;
    if (!write_run_packet<kTemplate>(qp, *w, frames[n], psn, ext, seal)) break;
    constexpr unsigned kSends = 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM | 1u << IBV_WR_SEND_WITH_INV;
    sends += (kSends >> w->opcode) & 1u;  // run_fits: a SEND or WRITE opcode, below 16
    if (sr_window_ != 0) sr_slot(psn).tx = ++tx_seq_;
  }
  if (next_psn_ != first) {  // a WQE started (the last one's frame may have failed)
    packets_since_ack_req_ = 0;
    probing_ = false;
    last_asked_ack_ = true;
  }
  if (n != 0) {
    const std::uint32_t end = psn_add(first, static_cast<std::uint32_t>(n));
    qp.counters.inc(Counter::SentPkts, n);
    qp.counters.inc(Counter::RdmaSends, sends);
    sent_end_psn_ = end;  // a run's PSNs are new: past every PSN sent and the resend position
    send_pos_ = end;
    last_end_psn_ = end;
  }
  return n;
}

[[gnu::noinline]] std::size_t Requester::build_run_with_builder(QpContext& qp, std::span<TxFrame> frames) {
  return build_run_as<false>(qp, frames);
}

std::size_t Requester::build_run(QpContext& qp, std::span<TxFrame> frames) {
  // With the request template (the default), each frame's headers from its image; without, the
  // builder's, each frame sealed at once.
  if (!qp.request_template.ready()) [[unlikely]]
    return build_run_with_builder(qp, frames);
  return build_run_as<true>(qp, frames);
}

void Requester::write_packet(QpContext& qp, SendWqe& w, TxFrame& frame) {
  const std::uint32_t pmtu = qp.cfg.pmtu;
  // What this frame has of its own; the rest is the connection's (qp.path, or its prebuilt
  // request template).
  ExtHeaders ext = qp.path.ext;
  bool solicited = false;
  std::uint32_t index = w.next_packet;
  std::uint32_t psn = psn_add(w.first_psn, index);
  std::uint64_t offset = std::uint64_t{index} * pmtu;
  std::uint32_t payload = 0;
  Opcode op;

  std::uint32_t read_end = w.npackets;  // READ: one past the last response packet asked for
  if (w.is_read()) {
    // One request covers every response packet still missing, or (selective repeat) one hole.
    index = read_hole_count_ ? read_hole_first_ : w.read_packets_received;
    read_end = read_hole_count_ ? index + read_hole_count_ : w.npackets;
    psn = psn_add(w.first_psn, index);
    offset = std::uint64_t{index} * pmtu;
    const std::uint64_t end_byte = std::min<std::uint64_t>(std::uint64_t{read_end} * pmtu, w.length);
    op = Opcode::RcReadRequest;
    ext.reth = Reth{Be64::of(w.remote_addr + offset), Be32::of(w.rkey), Be32::of(static_cast<std::uint32_t>(end_byte - offset))};
    w.next_packet = w.npackets;
    if (read_hole_count_ == 0) w.read_expect_first = true;
  } else if (w.is_atomic()) {
    op = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? Opcode::RcCmpSwap : Opcode::RcFetchAdd;
    ext.atomic = AtomicEth{Be64::of(w.remote_addr), Be32::of(w.rkey),
                           Be64::of(w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w.swap : w.compare_add),
                           Be64::of(w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w.compare_add : 0)};
    w.next_packet = 1;
  } else {
    op = request_opcode(qp.cfg.type, w, index);
    payload = static_cast<std::uint32_t>(std::min<std::uint64_t>(pmtu, w.length - std::min<std::uint64_t>(offset, w.length)));
    const OpcodeInfo& info = opcode_info(op);
    if (info.has(ExtHeader::Reth))
      ext.reth = Reth{Be64::of(w.remote_addr), Be32::of(w.rkey), Be32::of(w.is_flush() ? w.flush_length : w.length)};
    if (info.has(ExtHeader::Feth)) ext.feth.bits.set(w.flush_feth);
    if (info.has(ExtHeader::ImmDt)) std::memcpy(ext.imm.bytes.data(), &w.imm_or_rkey, 4);
    if (info.has(ExtHeader::Ieth)) ext.ieth.rkey.set(w.imm_or_rkey);
    if (info.has(ExtHeader::Deth)) {
      ext.deth.qkey.set(w.ud.remote_qkey);
      ext.deth.src_qp.set(qp.cfg.qpn & kPsnMask);
    }
    if (info.ends_message() && (w.send_flags & IBV_SEND_SOLICITED)) solicited = true;
    ++w.next_packet;
    // UC and UD expect no acknowledgement: the WQE is done once its last packet is out.
    if (!qp.is_rc() && w.next_packet >= w.npackets) w.state = WqeState::Done;
  }

  send_packet(qp, w, frame, op, psn, offset, payload, ext, solicited, w.is_read() ? read_end - index : 1);
}

// The AckReq decision, the frame, and the bookkeeping of a request packet at `psn` covering
// `npsns` PSNs (a READ request: the responses it asks for).
void Requester::send_packet(QpContext& qp, const SendWqe& w, TxFrame& frame, Opcode op, std::uint32_t psn,
                            std::uint64_t offset, std::uint32_t payload, const ExtHeaders& ext, bool solicited,
                            std::uint32_t npsns) {
  const std::uint32_t pmtu = qp.cfg.pmtu;
  const OpcodeInfo& info = opcode_info(op);
  bool ask = false;
  if (qp.is_rc()) {
    ++packets_since_ack_req_;
    // Also when this packet fills the go-back-N window: nothing more goes out until an ACK
    // comes, and the responder only ACKs on request.
    const auto fills_window = [&] {
      const std::int32_t reach_after = psn_diff(psn, una_hint_) + 1;
      const std::int32_t inflight_after = reach_after - static_cast<std::int32_t>(held_ahead());
      return inflight_after >= static_cast<std::int32_t>(qp.tuning->max_inflight_packets) ||
             static_cast<std::int64_t>(inflight_after) >= static_cast<std::int64_t>(window_limit()) ||
             (sr_window_ != 0 && reach_after >= static_cast<std::int32_t>(sr_window_)) ||
             (qp.tuning->max_inflight_bytes != 0 &&
              static_cast<std::uint64_t>(std::max(inflight_after, 0)) * pmtu >= qp.tuning->max_inflight_bytes);
    };
    // A selective resend asks too: its answer is what tells the requester the hole (or the
    // probed tail) is filled, and resends are few. The window's figures (floating point) are
    // asked for last: a packet that ends its message asks anyway, and at 64 B every one does.
    ask = info.ends_message() || sr_resending_ || probing_ ||
          packets_since_ack_req_ >= std::min(qp.tuning->ack_req_every, window_ack_spacing()) || fills_window() ||
          ((qp.tuning->split_small_window || qp.tuning->window.bdp_cap_split) && packets_since_ack_req_ >= turn_limit(qp));
    probing_ = false;
    last_asked_ack_ = ask;
    if (ask) packets_since_ack_req_ = 0;
  }

  const RequestFields fields{raw(op), psn, solicited, ask, payload};
  const FrameLayout l = emit_request(qp, w, offset, fields, ext, frame);
  if (!l.ok()) {  // the engine sizes frames for pmtu + headers; this is a configuration bug
    frame.length = 0;
    qp.counters.inc(Counter::SendErr);
    return;
  }
  frame.length = static_cast<std::uint32_t>(l.length);

  qp.counters.inc(Counter::SentPkts);
  if (sr_window_ != 0) sr_slot(psn).tx = ++tx_seq_;
  if (info.ends_message() && info.operation == Operation::Send) qp.counters.inc(Counter::RdmaSends);
  const std::uint32_t end = psn_add(psn, npsns);
  if (psn_before(psn, sent_end_psn_) && qp.cfg.type == IBV_QPT_RC) qp.counters.inc(Counter::RetransmittedPkts);
  if (psn_after(end, sent_end_psn_)) sent_end_psn_ = end;
  if (psn_after(end, send_pos_)) send_pos_ = end;
  last_end_psn_ = end;
}

void Requester::rewind(QpContext& qp, std::uint32_t psn) {
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::InFlight) continue;
    const std::int32_t d = psn_diff(psn, w.first_psn);
    if (d >= static_cast<std::int32_t>(w.npackets)) continue;  // wholly before the rewind point
    // The WQE containing the rewind point resumes there; later ones start over.
    w.next_packet = d > 0 ? static_cast<std::uint32_t>(d) : 0;
    if (w.is_read()) {
      w.next_packet = 0;
      w.read_expect_first = true;
    }
    for (std::uint64_t j = i + 1; j < qp.sq.tail(); ++j) {
      SendWqe& later = qp.sq.at(j);
      if (later.state != WqeState::InFlight) continue;
      later.next_packet = 0;
      later.read_expect_first = true;
      // A tracked READ keeps what it placed: its request goes again, the answers it has are duplicates.
      if (!(tracks_read(later) && later.read_high != 0)) later.read_packets_received = 0;
    }
    cursor_ = i;
    packets_since_ack_req_ = 0;
    send_pos_ = psn;
    sr_pending_ = 0;  // everything from here goes again anyway
    probing_ = false;
    return;
  }
}

bool Requester::probe_newest(QpContext& qp) {
  if (send_pos_ != sent_end_psn_) return false;
  const std::uint32_t psn = psn_add(sent_end_psn_, -1);
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::InFlight) continue;
    const std::int32_t d = psn_diff(psn, w.first_psn);
    if (d < 0) return false;
    if (d >= static_cast<std::int32_t>(w.npackets)) continue;
    if (w.needs_response_data()) return false;
    rewind(qp, psn);
    probing_ = true;
    return true;
  }
  return false;
}

bool Requester::probe_oldest(QpContext& qp, std::uint32_t psn) {
  if (selective()) return false;
  for (std::uint64_t i = qp.sq.head(); i < qp.sq.tail(); ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (w.state != WqeState::InFlight) continue;
    const std::int32_t d = psn_diff(psn, w.first_psn);
    if (d < 0 || w.needs_response_data()) return false;
    if (d >= static_cast<std::int32_t>(w.next_packet)) continue;  // not sent yet (or wholly before)
    // Built as a selective resend is (build_selective): the packet as it first went out, with
    // AckReq, and the cursor where it was.
    // (A flag a rewind left behind is set again: the rewind cleared the count, not the slots.)
    sr_slot(psn).flags |= kPending;
    sr_pending_ = std::max<std::uint32_t>(sr_pending_, 1);
    return true;
  }
  return false;
}

std::string to_string(Requester::State s) {
  switch (s) {
    case Requester::State::Ready: return "ready";
    case Requester::State::RnrWait: return "rnr-wait";
  }
  return "unknown";
}

}  // namespace roce::rdma
