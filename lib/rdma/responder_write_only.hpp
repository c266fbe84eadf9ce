// The run's RC WRITE ONLY (every 64 B WRITE that continues a run), inline: Engine::receive takes
// it on its straight path without a call (docs/perf-changes.md section 77), and
// Responder::take_run_write_only (responder_run.cpp, out of line) is the same code for the walk's
// side of the run (take_run_write). Also for a frame the run's template matched without a parse
// (proto::MatchedWriteOnly, docs/perf-changes.md section 82). Include it only where one of the two is compiled.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lib/rdma/responder.hpp"
#include "lib/rdma/short_copy.hpp"
#include "protocol/psn.hpp"
#include "protocol/write_only_match.hpp"

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

// A parsed WRITE ONLY with proto::MatchedWriteOnly's accessors (the frame a template matched
// reads them from its bytes).
struct ParsedWriteOnly {
  const proto::Packet& pkt;
  std::uint32_t psn() const { return bth_psn(pkt.bth); }
  bool ack_requested() const { return pkt.bth.ack_requested(); }
  std::uint32_t payload_length() const { return pkt.payload_length; }
  std::uint64_t va() const { return pkt.ext.reth.va.get(); }
  std::uint32_t rkey() const { return pkt.ext.reth.rkey.get(); }
  std::uint32_t dma_length() const { return pkt.ext.reth.dma_length.get(); }
  bool deferred() const { return pkt.icrc_status == proto::IcrcStatus::Deferred; }
  const std::byte* payload() const { return pkt.payload.data(); }
};

[[gnu::always_inline]] inline ParsedWriteOnly write_only_view(const proto::Packet& pkt) { return {pkt}; }
[[gnu::always_inline]] inline const proto::MatchedWriteOnly& write_only_view(const proto::MatchedWriteOnly& m) { return m; }

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
template <class Frame>
[[gnu::always_inline]] inline Responder::RunStep Responder::write_only_in_run(QpContext& qp, const Frame& f, std::byte*& dst) {
  const std::uint32_t psn = f.psn();
  if (output_full() || psn != epsn_ || msg_ != OpenMessage::None) return RunStep::Walk;
  const std::uint32_t len = f.payload_length();
  if (len > run_.pmtu || f.dma_length() != len) return RunStep::Walk;
  const std::uint64_t va = f.va();
  const std::uint32_t rkey = f.rkey();
  // The run's first ACK (none of its WRITEs asked for one yet) is queued by the full version:
  // its calls and the queue's slot would make this one save registers (and it is rare: the run's
  // first frame, on_request's, asks for it whenever the requester asks at every WRITE).
  const bool ack = f.ack_requested();
  if (f.deferred() || (ack && !run_.ack_tail)) return RunStep::Again;
  if (len != 0) {
    if (!run_.region.holds(rkey)) return RunStep::Again;
    if ((dst = run_.region.translate(va, len)) == nullptr) return RunStep::Walk;
  }
  // Nothing refused it: from here on it acts (its ICRC was checked by the parser or the match).
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
// payload's copy and the full version (Again) are calls after which nothing is left to do. A
// matched frame (not parsed) has no Packet for the full version: false, and its caller parses it.
template <class Frame>
[[gnu::always_inline]] inline bool Responder::take_straight_write_only(QpContext& qp, const Frame& frame) {
  if (!run_.writes) return false;
  const auto& f = detail::write_only_view(frame);
  std::byte* dst = nullptr;
  const RunStep step = write_only_in_run(qp, f, dst);
  if constexpr (std::is_same_v<Frame, proto::Packet>) {
    if (step == RunStep::Again) return take_run_write_whole(qp, frame);
  }
  if (step != RunStep::Done) return false;
  const std::uint32_t len = f.payload_length();
  if (len > kShortCopyMax) return detail::copy_run_payload(dst, f.payload(), len);
  copy_short(dst, f.payload(), len);
  return true;
}

}  // namespace roce::rdma
