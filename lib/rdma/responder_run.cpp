// A run of requests: the frames of one QP that follow each other in one RX burst (the worker
// brackets each burst with Engine::begin_receive_burst/end_receive_burst). What does not depend
// on the frame is found out once per run (begin_run): whether the QP takes WRITEs on the straight
// path below (RC, remote write allowed: check_op_valid's answer for every WRITE without
// immediate; nothing held in a selective repeat reorder buffer, whose drain takes its held WRITEs
// here too), its path MTU, and the memory region the last R_Key named. An
// in-sequence WRITE without immediate then takes write_in_run: the checks that depend on the
// frame (room for an answer, PSN, opcode sequence, lengths, R_Key still valid, bounds) in one
// line instead of the walk's state by state, then what execute_write and acknowledge do, an
// ICRC the parser deferred (payloads from 1 KiB) settled as the walk settles it (place_deferred).
// Anything else, and a WRITE one of those checks refuses, takes the walk with nothing changed,
// which finds the same answer as frame by frame (docs/perf-changes.md sections 42 and 51;
// tests/lib/rdma/responder_run_test.cpp compares the two).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

#include "lib/rdma/responder.hpp"
#include "lib/rdma/responder_write_only.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace detail {

[[gnu::noinline]] bool copy_run_payload(std::byte* dst, const std::byte* src, std::size_t len) {
  std::memcpy(dst, src, len);
  return true;
}

}  // namespace detail

// The last run ended (end_run): the engine ends each before the next frame of another QP, any
// other call, and the next burst. The region the last run found is kept if its key still names
// it (RememberedRegion::renew: published, no registration in its slot since), so a lone WRITE
// at queue depth 1, a run of its own each time, is not checked whole each time (a QP's
// protection domain does not change; its access flags are the run's `writes`). What the run
// found out about the QP (`writes`, `pmtu`) holds until QP modify or a stopped reorder buffer
// (forget_run): found out again only then. Renewed in place: a lone WRITE begins a run at every
// round trip.
void Responder::begin_run(const QpContext& qp) {
  run_.region.renew();
  run_.ack_tail = false;  // (end_run left both so: nothing of the last run's ACK is owed)
  run_.acks_deferred = 0;
  if (run_.known) return;
  run_.known = true;
  // Selective repeat: only while the reorder buffer holds nothing (a request that fills a hole
  // must drain what it held; hold_ahead and drain forget the run when that changes). The drain
  // itself takes its held WRITEs straight (responder_reorder.cpp).
  run_.writes = writes_straight(qp) && reorder_.held() == 0;
  run_.pmtu = qp.cfg.pmtu;
}

void Responder::settle_run_ack(QpContext& qp) {
  Item& tail = out_[slot(out_count_ - 1)];
  tail.psn = run_.ack_psn;
  tail.msn = run_.ack_msn;
  tail.prompt = tail.prompt || ack_due(run_.ack_psn);
  qp.counters.inc(Counter::AckDeferred, run_.acks_deferred);
  run_.acks_deferred = 0;
}

// run_target (responder.hpp): the region was found valid for this QP's protection domain and
// remote write earlier, in this run or one before it (begin_run renews it), so only whether the
// key still names it and the bounds are checked again (RememberedRegion, memory.hpp). Otherwise
// here: the full check, and a region (never a window, which also hangs on its region) remembered.
std::byte* Responder::run_target_checked(const QpContext& qp, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) {
  std::byte* out = nullptr;
  if (qp.mrs->check_remote(rkey, qp.cfg.pd, qp.cfg.qpn, va, len, IBV_ACCESS_REMOTE_WRITE, &out) != AccessResult::Ok)
    return nullptr;
  if (const MemoryRegion* mr = qp.mrs->find(rkey); mr != nullptr) run_.region.remember(*qp.mrs, rkey, *mr);
  return out;
}

// The ACK a run's WRITE owes: the one already queued covers this PSN too, as queue_ack would
// decide (room was checked before; selective repeat's prompt rule, ack_due, here for the run's
// first ACK and again at the run's end, settle_run_ack). Once it is this run's
// (the output's last item), coalesce_ack's work waits for the run's end: the ACK goes out after
// it (Engine::transmit ends the run first), and only its last PSN and MSN count.
[[gnu::always_inline]] inline void Responder::owe_run_ack(QpContext& qp, std::uint32_t psn) {
  if (run_.ack_tail) {
    defer_run_ack(psn);
  } else {
    const bool prompt = ack_due(psn);
    if (!coalesce_ack(qp, psn, prompt)) push_ack(psn, prompt);
    run_.ack_tail = true;
  }
}

// The walk's checks for such a WRITE, in its order of effect: check_psn (room for an answer, the
// expected PSN: a duplicate or a gap goes to the walk), check_op_seq, check_op_valid (the run's),
// check_resource (nothing without immediate), check_length, check_rkey; then execute_write and
// acknowledge. A payload known good is copied last (the bookkeeping before it changes nothing
// the copy reads), so that in the lean version no value lives across the call.
template <bool kLean>
[[gnu::always_inline]] inline Responder::RunStep Responder::write_in_run(QpContext& qp, const Packet& pkt, const std::byte* placed) {
  const OpcodeInfo& info = *pkt.info;
  if (info.operation != Operation::Write || info.transport != Transport::Rc || info.has_immediate()) return RunStep::Walk;
  const std::uint32_t psn = pkt.psn();
  if (output_full() || psn != epsn_) return RunStep::Walk;
  const bool first = info.starts_message();
  if (msg_ != (first ? OpenMessage::None : OpenMessage::Write)) return RunStep::Walk;
  const std::uint32_t len = pkt.payload_length;
  // FIRST/ONLY: the message's range from the RETH, checked whole; later packets: their own range
  // of the open WRITE, checked again (the region may have gone since).
  const std::uint64_t va = first ? pkt.ext.reth.va.get() : write_va_;
  const std::uint32_t rkey = first ? pkt.ext.reth.rkey.get() : write_rkey_;
  const std::uint32_t rest = first ? pkt.ext.reth.dma_length.get() : write_remaining_;
  if (!fits_pmtu(info, len, run_.pmtu) || !fits_write(info, len, rest, write_remaining_)) return RunStep::Walk;
  const std::uint64_t range = first ? rest : len;
  const bool deferred = pkt.icrc_status == IcrcStatus::Deferred;
  std::byte* dst = nullptr;
  if constexpr (kLean) {
    if (deferred || (range != 0 && !run_.region.holds(rkey))) return RunStep::Again;
    if (range != 0 && (dst = run_.region.translate(va, range)) == nullptr) return RunStep::Walk;
  } else {
    if (range != 0 && (dst = run_target(qp, rkey, va, range)) == nullptr) return RunStep::Walk;
    // A held MIDDLE placed when it arrived (the drain's): in sequence, its message must put it
    // at the same place (else the walk finds the request invalid, as execute_write does).
    if (placed != nullptr && dst != placed) return RunStep::Walk;
  }
  // Nothing refused it: from here on it acts, once its ICRC holds.
  const WriteAhead next =
      len == 0 || info.ends_message() ? WriteAhead{} : WriteAhead{dst + len, std::min<std::uint64_t>(len, rest - len)};
  if (!kLean && deferred && len != 0 && !place_deferred(pkt, dst, next, qp.tuning->crc))
    return RunStep::Corrupted;  // as the walk's ErrCorrupted: nothing changed (bytes placed ahead aside)
  // (the parser defers no empty payload's ICRC)
  if (first) drop_msg_ = false;
  advance_write(info, va, rkey, rest, len);
  epsn_ = psn_next(psn);
  seq_ = SequenceState::Normal;
  if (pkt.bth.ack_requested()) owe_run_ack(qp, psn);
  ++run_writes_;
  if (len != 0 && !deferred && (kLean || placed == nullptr)) {
    prefetch_for_write(next);  // the next packet's lines, asked before this one's copy
    std::memcpy(dst, pkt.payload.data(), len);
  }
  return RunStep::Done;
}

// The run is known only if a frame of it went through on_request since the QP last changed
// (begin_run; forget_run at QP modify). Engine::receive offers only frames whose ICRC the parser
// checked, so Corrupted does not come here; were it to, on_packet's walk drops the frame again.
// A WRITE ONLY takes its own lean path, any other opcode the general one, each out of line: with
// both inline in one function gcc saved six registers at every call, whichever path it took.
bool Responder::take_run_write(QpContext& qp, const Packet& pkt) {
  if (pkt.bth.opcode == raw(Opcode::RcWriteOnly)) return take_run_write_only(qp, pkt);
  return run_.writes && take_run_write_other(qp, pkt);  // (forget_run clears `writes` with `known`)
}

// Out of line for take_run_write (the walk's side of the run); Engine::receive's straight path
// has the same code inline (responder_write_only.hpp). Every call in it is a tail call (a short
// payload's copy is inline), so that it saves fewer registers: a call after which it still
// returned a value made gcc save four.
[[gnu::noinline]] bool Responder::take_run_write_only(QpContext& qp, const Packet& pkt) { return take_straight_write_only(qp, pkt); }

[[gnu::noinline]] bool Responder::take_run_write_other(QpContext& qp, const Packet& pkt) {
  const RunStep step = write_in_run<true>(qp, pkt);
  if (step == RunStep::Again) return take_run_write_whole(qp, pkt);
  if (step != RunStep::Done) return false;
  qp.counters.inc(Counter::RcvdPkts);
  return true;
}

// The lean version's Again (nothing changed): the same frame with the full checks. Out of line,
// so that its calls do not make take_run_write save registers.
[[gnu::noinline]] bool Responder::take_run_write_whole(QpContext& qp, const Packet& pkt) {
  if (write_in_run<false>(qp, pkt) != RunStep::Done) return false;
  qp.counters.inc(Counter::RcvdPkts);
  return true;
}

// The drain's (responder_reorder.cpp): a held request in its turn, as parsed when it arrived
// (its ICRC known good; a placed MIDDLE's payload at `placed`), straight when it is a WRITE
// write_in_run takes; false, with nothing changed, for the walk.
bool Responder::take_held_write(QpContext& qp, const Packet& pkt, const std::byte* placed) {
  return write_in_run<false>(qp, pkt, placed) == RunStep::Done;
}

ResponderOutcome Responder::on_request(QpContext& qp, const Packet& pkt, ByteSpan frame, bool continues_run) {
  if (!continues_run || !run_.known) begin_run(qp);
  if (run_.writes) {
    const RunStep step = write_in_run<false>(qp, pkt);
    if (step != RunStep::Walk) return step == RunStep::Done ? ResponderOutcome::Progress : ResponderOutcome::Corrupted;
  }
  end_run(qp);  // the walk reads and changes the output
  if (!reorder_.enabled()) return walk(qp, pkt, frame);
  // Selective repeat: the run's straight path is taken only while nothing is held, so each
  // change of that forgets the run (begin_run asks again).
  if (classify_request_psn(pkt.psn(), epsn_) == RequestPsnClass::Ahead) {
    const ResponderOutcome o = hold_ahead(qp, pkt, frame);
    if (reorder_.held() != 0 && run_.writes) forget_run();
    return o;
  }
  const std::uint32_t before = epsn_;
  const ResponderOutcome o = walk(qp, pkt, frame);
  if (epsn_ == before || reorder_.held() == 0) return o;
  const ResponderOutcome drained = drain(qp, o);
  if (reorder_.held() == 0) forget_run();
  return drained;
}

}  // namespace roce::rdma
