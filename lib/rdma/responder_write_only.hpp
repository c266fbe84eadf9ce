// The run's RC WRITE ONLY (every 64 B WRITE that continues a run), inline: Engine::receive takes
// it on its straight path without a call (docs/perf-changes.md section 77), and
// Responder::take_run_write_only (responder_run.cpp, out of line) is the same code for the walk's
// side of the run (take_run_write). Include it only where one of the two is compiled.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/rdma/responder.hpp"
#include "lib/rdma/short_copy.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

namespace detail {

// The PSN from one 4-byte load (the A bit's byte and the PSN) where Be24's get is three loads
// and shifts: the BTH's last word, inside the header's own bytes.
[[gnu::always_inline]] inline std::uint32_t bth_psn(const proto::Bth& bth) {
  static_assert(offsetof(proto::Bth, psn) == offsetof(proto::Bth, ack_req) + 1 &&
                sizeof(proto::Bth) == offsetof(proto::Bth, ack_req) + 4);
  std::uint32_t word;
  std::memcpy(&word, reinterpret_cast<const std::byte*>(&bth) + offsetof(proto::Bth, ack_req), sizeof word);
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap32(word);
  return word & 0xFFFFFF;
}

// A payload above kShortCopyMax, copied by libc as the run's last act (a tail call from
// take_run_write_only, which then keeps no value of its own across a call). responder_run.cpp.
bool copy_run_payload(std::byte* dst, const std::byte* src, std::size_t len);

}  // namespace detail

// The ACK a run's WRITE owes, folded into the run's ACK already queued: only its last PSN and
// MSN count (settle_run_ack at the run's end).
[[gnu::always_inline]] inline void Responder::defer_run_ack(std::uint32_t psn) {
  run_.ack_psn = psn;
  run_.ack_msn = msn_;
  ++run_.acks_deferred;
}

// An RC WRITE ONLY without immediate: write_in_run<true> with the opcode known, the same checks
// in the same order with the same answers. The RETH carries the whole message: no message may be
// open, the payload is the RETH's length (so within 2^31 bytes: it fits the path MTU) and its
// range, and none stays open (advance_write_only). No position tests and no open-message
// arithmetic; the copy is the caller's (take_straight_write_only).
[[gnu::always_inline]] inline Responder::RunStep Responder::write_only_in_run(QpContext& qp, const proto::Packet& pkt, std::byte*& dst) {
  const std::uint32_t psn = detail::bth_psn(pkt.bth);
  if (output_full() || psn != epsn_ || msg_ != OpenMessage::None) return RunStep::Walk;
  const std::uint32_t len = pkt.payload_length;
  if (len > run_.pmtu || pkt.ext.reth.dma_length.get() != len) return RunStep::Walk;
  const std::uint64_t va = pkt.ext.reth.va.get();
  const std::uint32_t rkey = pkt.ext.reth.rkey.get();
  // The run's first ACK (none of its WRITEs asked for one yet) is queued by the full version:
  // its calls and the queue's slot would make this one save registers (and it is rare: the run's
  // first frame, on_request's, asks for it whenever the requester asks at every WRITE).
  const bool ack = pkt.bth.ack_requested();
  if (pkt.icrc_status == proto::IcrcStatus::Deferred || (ack && !run_.ack_tail)) return RunStep::Again;
  if (len != 0) {
    if (!run_.region.holds(rkey)) return RunStep::Again;
    if ((dst = run_.region.translate(va, len)) == nullptr) return RunStep::Walk;
  }
  // Nothing refused it: from here on it acts (its ICRC was checked by the parser).
  drop_msg_ = false;
  advance_write_only(va, rkey, len);
  epsn_ = proto::psn_next(psn);
  seq_ = SequenceState::Normal;
  if (ack) defer_run_ack(psn);  // owe_run_ack with the run's ACK queued
  ++run_writes_;
  qp.counters.inc(Counter::RcvdPkts);  // (take_run_write's)
  return RunStep::Done;  // the caller copies the payload to dst
}

// take_run_write_only's body: true when the run took the frame (placed, acknowledged, counted);
// false, with nothing changed, for the walk. The payload's copy is its last act; a longer
// payload's copy and the full version (Again) are calls after which nothing is left to do.
[[gnu::always_inline]] inline bool Responder::take_straight_write_only(QpContext& qp, const proto::Packet& pkt) {
  if (!run_.writes) return false;
  std::byte* dst = nullptr;
  const RunStep step = write_only_in_run(qp, pkt, dst);
  if (step == RunStep::Again) return take_run_write_whole(qp, pkt);
  if (step != RunStep::Done) return false;
  const std::uint32_t len = pkt.payload_length;
  if (len > kShortCopyMax) return detail::copy_run_payload(dst, pkt.payload.data(), len);
  copy_short(dst, pkt.payload.data(), len);
  return true;
}

}  // namespace roce::rdma
