// Pins which cache lines of a QueuePair a received frame and an ACK touch (docs/perf-changes.md
// section 78): a member declared in the wrong place, or one that grows, spreads the hot fields
// over more lines again, and nothing else would say so (the per-QP state is 6.8 KB; with 16 QPs
// a worker's L1 cannot hold every QP's lines beside the frames). Offsets, not timings: a change
// that moves a line boundary fails to compile here, and the declarations' comments say why.
#include <cstddef>

#include "lib/rdma/queue_pair.hpp"

namespace roce::rdma {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"  // QueuePair and its parts are not standard-layout

namespace {

constexpr std::size_t kLine = 64;
constexpr std::size_t line(std::size_t offset) { return offset / kLine; }
constexpr bool one_line(std::size_t offset, std::size_t bytes) { return line(offset) == line(offset + bytes - 1); }

}  // namespace

struct QueuePairLayout {
  static constexpr std::size_t kCtx = offsetof(QueuePair, ctx_);
  static constexpr std::size_t kCfg = kCtx + offsetof(QpContext, cfg);

  static_assert(alignof(QueuePair) == kLine, "QPs start on a cache line: the offsets below are lines");
  // Line 0: the scheduler's flags (in_active_list, slot), the CNP and pacer flags, congestion
  // control and the ACK template's pointers (deadline, has_tx_work, build_next), and the
  // context's state, tuning and memory table (every frame's checks).
  static_assert(offsetof(QueuePair, ack_frame_) < kCtx && kCtx + offsetof(QpContext, mrs) + sizeof(MrTable*) <= kLine);
  static_assert(offsetof(QueuePair, in_active_list) < kCtx && offsetof(QueuePair, slot) < kCtx &&
                offsetof(QueuePair, cnp_pending_) < kCtx && offsetof(QueuePair, pacer_wake_) < kCtx &&
                offsetof(QueuePair, cc_) < kCtx && offsetof(QueuePair, window_joined_) < kCtx);
  static_assert(offsetof(QpContext, state) < offsetof(QpContext, mrs) && offsetof(QpContext, tuning) < offsetof(QpContext, mrs));
  // Line 1: the configuration a frame or an ACK reads (type, qpn, pd, pmtu, access, pkey, the
  // retry counts), declared first in QpConfig.
  static_assert(line(kCfg) == 1 && one_line(kCfg, offsetof(QpConfig, sq_sig_all) + 1));
  static_assert(offsetof(QpConfig, pkey) < offsetof(QpConfig, sq_sig_all) && offsetof(QpConfig, access) < offsetof(QpConfig, sq_sig_all) &&
                offsetof(QpConfig, pmtu) < offsetof(QpConfig, sq_sig_all) && offsetof(QpConfig, retry_cnt) < offsetof(QpConfig, sq_sig_all));
  // Line 2: the send queue's indices (sync_window_share, can_send, an ACK's walk).
  static_assert(one_line(kCtx + offsetof(QpContext, sq), sizeof(WorkQueue<SendWqe>)) &&
                line(kCtx + offsetof(QpContext, sq)) == 2);
  // The counters from a line boundary: SentPkts, RcvdPkts and AckDeferred in one line.
  static_assert((kCtx + offsetof(QpContext, counters)) % kLine == 0 && static_cast<std::size_t>(Counter::AckDeferred) < 8 &&
                static_cast<std::size_t>(Counter::SentPkts) < 8 && static_cast<std::size_t>(Counter::RcvdPkts) < 8);

  // The responder's: the request and run state, the output queue's indices and pointer, the run,
  // and the reorder buffer's window (its first member: ack_due) in three lines from its own.
  static_assert(offsetof(QueuePair, resp_) % kLine == 0);
  static_assert(offsetof(Responder, reorder_) + 2 * sizeof(std::uint32_t) <= 3 * kLine);
  static_assert(offsetof(Responder, out_mask_) < offsetof(Responder, run_) && offsetof(Responder, out_) < offsetof(Responder, run_) &&
                offsetof(Responder, write_length_) < offsetof(Responder, run_) && offsetof(Responder, fatal_) < offsetof(Responder, run_));
  // The completer's: the timers every transmit turn reads (deadline, end_send_turn) in its first
  // line, what an ACK reads or changes in the next two, the send window after them.
  static_assert(offsetof(QueuePair, comp_) % kLine == 0);
  static_assert(offsetof(Completer, early_at_) + sizeof(Nanos) <= kLine && offsetof(Completer, early_rearm_) < kLine &&
                offsetof(Completer, rnr_at_) < kLine && offsetof(Completer, retransmit_at_) < kLine);
  static_assert(offsetof(Completer, own_window_) <= 3 * kLine);
  // The requester's: can_send's and nothing_left's fields in its first line (a responder's QP
  // asks them at every transmit turn), set_una's in the next, before the run's seal batch and
  // the PSN rings.
  static_assert(offsetof(QueuePair, req_) % kLine == 0);
  static_assert(offsetof(Requester, sr_pending_) < kLine && offsetof(Requester, rd_pending_) < kLine &&
                offsetof(Requester, cursor_) < kLine && offsetof(Requester, next_psn_) < kLine &&
                offsetof(Requester, una_hint_) < kLine && offsetof(Requester, inflight_rd_atomic_) < kLine &&
                offsetof(Requester, state_) < kLine);
  static_assert(offsetof(Requester, sack_held_) <= 2 * kLine && offsetof(Requester, held_ahead_) < offsetof(Requester, sack_held_));
};

#pragma GCC diagnostic pop

}  // namespace roce::rdma
