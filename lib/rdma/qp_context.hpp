// What the requester, responder and completer of one QP share: its configuration, its work
// queues, its completion queues, the header template of its path and its counters.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/rdma/completion_queue.hpp"
#include "lib/rdma/congestion.hpp"
#include "lib/rdma/counters.hpp"
#include "lib/rdma/memory.hpp"
#include "lib/rdma/qp_state.hpp"
#include "lib/rdma/shared_receive_queue.hpp"
#include "lib/rdma/send_window.hpp"
#include "lib/rdma/work_request.hpp"
#include "lib/time.hpp"
#include "protocol/builder.hpp"
#include "protocol/crc32_copy.hpp"
#include "protocol/request_template.hpp"

namespace roce::rdma {

// A buffer the engine fills with one outgoing frame.
struct TxFrame {
  std::byte* data = nullptr;
  std::uint32_t capacity = 0;
  std::uint32_t length = 0;
};

// Declared in the order of use: what a received frame or an ACK reads (the QP's type and
// number, P_Key, path MTU, access flags, the retry counts the completer restores) in the first
// 32 bytes, which share one cache line of the QP (queue_pair_layout.cpp pins it).
struct QpConfig {
  ibv_qp_type type = IBV_QPT_RC;
  std::uint32_t qpn = 0;
  PdHandle pd = 0;
  // Set by modify_qp.
  std::uint32_t pmtu = 1024;
  int access = 0;  // IBV_ACCESS_REMOTE_* the QP permits as responder
  std::uint16_t pkey = 0xFFFF;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t min_rnr_timer = 12;
  std::uint8_t max_rd_atomic = 1;
  std::uint8_t max_dest_rd_atomic = 1;
  bool sq_sig_all = false;
  std::uint32_t dest_qpn = 0;
  std::uint32_t qkey = 0;
  std::uint32_t sq_psn = 0;
  std::uint32_t rq_psn = 0;

  // Selective repeat (docs/loss.md, part 2): the reorder window in PSNs (a power of two, at
  // most proto::kSackSpan), or 0 for go-back-N. Set before RTR, on both ends, only when both
  // agreed at connection set-up: a standard peer never gets a SACK.
  std::uint32_t selective_repeat = 0;
  ibv_qp_cap cap{};
};

// How long the engine may pass over a QP whose only send work is a plain ACK while the
// worker's receive queue stays full (Engine::transmit), so that the ACK, when it goes, covers
// the requests that arrived meanwhile (an ACK acknowledges every PSN up to its own): at most
// `turns` transmit calls in a row, and only while the next call (one more iteration, as long as
// the last) is due within `age` of the first hold. turns 0: never. docs/perf-changes.md 30.
struct AckHold {
  std::uint32_t turns = 0;
  Nanos age = 0;
};

// Knobs of the transport that verbs does not expose.
struct TransportTuning {
  std::uint32_t max_inflight_packets = 256;   // go-back-N window, in PSNs
  // ... and in bytes (PSNs x path MTU; 0 = no limit). Go-back-N resends everything in flight
  // after a loss, so the window should not exceed the bandwidth-delay product much: 256 KiB is
  // 64 packets at a 4 KiB MTU, still the 256-packet cap at 1 KiB.
  std::uint32_t max_inflight_bytes = 256 * 1024;
  // AIMD window under the two caps above (lib/rdma/send_window.hpp); enabled: false leaves only them.
  WindowTuning window{};
  std::uint32_t ack_req_every = 64;           // also ask for an ACK every N packets of a long message
  // Early retransmission (ConnectX calls its version adaptive retransmission): after no progress
  // for max(this, srtt + 4 rttvar, 2 srtt), doubling on each try, resend from the oldest unacknowledged
  // PSN without using up retry_cnt. Go-back-N has no answer for a lost NAK, a lost
  // retransmission or a lost tail but the local ACK timeout (67 ms at the usual timeout 14);
  // duplicates are always safe for the responder. The local ACK timeout still counts retries
  // and fails the QP. Only after a first RTT sample; 0 disables it. The floor is well above a
  // quiet round trip and above the 200 us after which a worker counts a stall of its own (and
  // holds the timers); lower, the timer would fire on a peer's scheduling jitter.
  Nanos early_retransmit_min = 250 * kMicro;
  // Selective repeat (docs/loss.md, part 2): the early timer waits max(the floor above, twice
  // the standing round trip) instead of srtt's bound (off: a filling tail-drop queue outgrows
  // it, overrun_test.cpp); a held WRITE MIDDLE whose place is known is placed at once, only its
  // headers held (false: copied whole). Switches for measuring each (perf_suite --sr-timer,
  // --sr-placement).
  bool early_retransmit_standing_rtt = false;
  bool reorder_placement = true;
  // Selective repeat's probe after the tail probe's short wait below (max(tail_probe_min,
  // 2 srtt) while no queue shows), and no RTT sample or "early timer" verdict from a probe's
  // answer (docs/loss.md, part 2, "The missing tenth"; perf_suite --sr-probe on|off).
  bool selective_tail_probe = true;
  // Go-back-N's tail loss probe (docs/loss.md, part 1): the early timer's first try after
  // progress resends the newest packet alone, asking for an ACK, after a short wait (TCP's
  // probe timeout) instead of the wait above; the go-back from una follows only if the probe
  // draws no answer. A lost tail (the packet that asked for the ACK) is then refilled and a
  // lost ACK answered again (the probe is a duplicate the responder ACKs), for one packet
  // instead of a window, and soon: a spurious probe costs one duplicate, not a window of them,
  // and at most one goes per progress (the next early timer takes the long wait).
  // On by default since session 8, with the BDP cap while losses are frequent
  // (WindowTuning::bdp_cap): a capped QP has a few packets in flight, and a lost last one has
  // nothing behind it to draw a NAK.
  // The short wait follows the path with tail_probe_floor > 0 (below, session 18): this is then
  // only the switch (0: no probe; the early timer goes back from una at once) and selective
  // repeat's floor. With tail_probe_floor 0 the wait is sessions 7-17's max(this, 2 srtt): on the
  // in-process rig (srtt 3-5 us) this 20 us floor set every wait, and the time a lost tail cost.
  Nanos tail_probe_min = 20 * kMicro;
  // Go-back-N's tail probe waits max(this, 2 srtt, min(srtt + 4 rttvar, 4 srtt)), plus
  // ack_hold.age when the packet that asked for the ACK is the only one unacknowledged
  // (RACK-TLP's PTO: 2 srtt, plus the peer's worst ACK delay for a lone packet; the rttvar term
  // keeps a jittery path, rxe in a guest, from drawing probes its ACKs would have made needless,
  // and a second ACK of a probed packet makes the late round trip a sample: Completer::
  // spurious_probe_answer). 5 us: above a quiet round trip and a poll-mode peer's iteration on a
  // short burst (the rig's lone packet: 1.2-2 us), so a first tiny sample cannot fire it before
  // the peer answers. What a busy peer adds (its ACK hold and TX batching, up to 20 us each, only
  // on full RX bursts) shows in the RTT samples of every QP it serves; our own stalls over 200 us
  // hold the timers (dp::WorkerConfig::stall_ns) and shorter ones find the ACK read before the
  // timers run. A path with srtt above 2.5 us (the rig's 3-5 us; rxe's hundreds) never sees the
  // floor. 5 us is the default since session 20: session 18's extra ACK timeouts at 5 % loss came
  // from RTT samples across our own worker's stalls (none since session 19: Engine::note_stall),
  // and with those filtered it is as good or better than the fixed wait at 0.1-5 % (docs/loss.md
  // part 1, "Session 19 (gbn19)" and "Session 20 (gbn20)"). 0: sessions 7-17's wait, above
  // (perf_suite --tail-probe-floor-us 0).
  Nanos tail_probe_floor = 5 * kMicro;
  // Every timer sends a probe, never a window, while the probe's answer shows no hole (docs/loss.md,
  // "A timer sends one probe"): the early timer whatever the path's queue or the doubled wait,
  // and the local ACK timeout (which still uses a retry and fails the QP when retry_cnt runs
  // out). A peer whose poller was descheduled answers the probe, a duplicate, with an ACK of all
  // it has; what it really lost is resent once the answer shows where. Selective repeat probes
  // the oldest unreported packet when the newest's probe drew no answer. false: session 9's
  // timers (go back N where no probe applied; selective repeat's second timer resends everything
  // unreported). Go-back-N's early timer probes only with tail_probe_min > 0 as well.
  bool timer_probes = true;
  std::uint32_t tx_quantum = 16;              // packets a QP may send before the next QP's turn
  // Go-back-N with a small in-flight cap: at most cap / small_window_parts packets (rounded up,
  // when below tx_quantum) per transmit call, and an ACK asked for as often, so that the
  // responder works on one part while the requester builds the next and its ACK frees room
  // before the cap is reached. A whole small window built in one turn and answered by one ACK
  // leaves each of two poll-mode cores idle while the other works (half the goodput at a cap of
  // 6 on the virtual two-core model). Off by default: on this shared machine it has not been
  // measured on idle cores (docs/loss.md, part 1, "Session 14"). Selective repeat: no effect.
  // Parts: 2 lost least on the model with a short hop between the cores, 3 with a long one.
  bool split_small_window = false;
  std::uint32_t small_window_parts = 2;
  // Consecutive one-packet SENDs and WRITEs of an RC QP built as a run in one call
  // (QueuePair::build_run); the same frames either way (perf_suite --no-tx-runs).
  bool tx_runs = true;
  // A run's frames sealed together once all are written (Requester::seal_run, icrc_batch.hpp);
  // false: each as it is written. The same frames either way (perf_suite --seal-runs on|off).
  bool seal_runs = true;
  // Sealed together, the frames' bytes after the headers by the carry-less kernel where the CPU
  // has it (crc32_short.hpp); false: ISA-L frame by frame. The same frames either way
  // (perf_suite --seal-clmul on|off).
  bool seal_clmul = true;
  bool rnr_exponential_backoff = false;       // double the RNR wait on each consecutive RNR NAK
  proto::Ecn data_ecn = proto::Ecn::Ect0;     // ECN codepoint of everything we send
  proto::CrcBackend crc = proto::CrcBackend::Isal;
  bool icrc_linear = true;                    // the ICRC's header share from flow templates (icrc_linear.hpp)
  // RC and UC requests from a per-QP prebuilt header (request_template.hpp) instead of the
  // builder per frame; the same bytes either way (perf_suite --no-request-template).
  bool request_template = true;
  bool ack_template = true;                   // RC ACKs and NAKs from a prebuilt frame per QP (ack_template.hpp)
  // An RC responder's in-sequence WRITEs without immediate take a straight path with the
  // QP's own checks once per run of its frames in an RX burst (responder_run.cpp); false: every
  // request takes the walk state by state. The same answers either way (perf_suite --write-runs).
  bool write_runs = true;
  // An RC requester's ACK that retires in-flight SENDs and WRITEs from the head of its send
  // queue takes a straight path (Completer::straight_ack); false: every response takes
  // on_response's general path. The same completions, counters and timers either way.
  bool straight_acks = true;
  CongestionConfig congestion{};              // DCQCN on RC and UC QPs
  AckHold ack_hold{4, 20 * kMicro};
};

// The latest stall of the engine's own worker (Engine::note_stall): it was not running from
// `start` to `end` (both 0: none yet).
struct OwnStall {
  Nanos start = 0;
  Nanos end = 0;
};

// Declared in the order of use (docs/perf-changes.md section 78): state, tuning and mrs share the
// QP's first cache line with its scheduler flags; then the configuration, the send queue's
// indices, the CQs, and the counters on a line boundary; what only the control path, the
// requester's build or selective repeat reads after them. queue_pair_layout.cpp pins it.
struct QpContext {
  QpState state = QpState::Reset;
  const TransportTuning* tuning = nullptr;
  MrTable* mrs = nullptr;
  // The engine's worker's latest stall of its own (Engine::note_stall; null: none is ever told):
  // a round trip that began before its end measured the stall too (Completer::take_rtt_sample),
  // and a local ACK timer that ran through it was not waiting for the path (Completer::on_timer).
  const OwnStall* own_stall = nullptr;
  QpConfig cfg;
  WorkQueue<SendWqe> sq;
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  WorkQueue<RecvWqe> rq;
  Counters counters;

  proto::IcrcHeaderCache* icrc_cache = nullptr;  // the engine's flow templates for sealing (icrc_linear.hpp)
  // With a shared receive queue the QP has no receive queue of its own: a message takes the
  // SRQ's head when it starts and holds a copy of it until it ends.
  SharedReceiveQueue* srq = nullptr;
  RecvWqe srq_held{};
  bool srq_holding = false;
  std::vector<LocalSegment> srq_held_segs;
  std::vector<LocalSegment> send_segments;  // cap.max_send_sge per SQ slot
  std::vector<LocalSegment> recv_segments;  // cap.max_recv_sge per RQ slot
  std::vector<std::byte> inline_data;       // cap.max_inline_data per SQ slot

  proto::FrameSpec path;  // addressing of every packet on this QP's connection
  // `path`'s request headers prebuilt, rebuilt whenever path changes (QueuePair::build_path);
  // not ready for UD (each datagram has its own address) or with TransportTuning off.
  proto::RequestTemplate request_template;

  bool accepts_requests() const {
    return state == QpState::Rtr || state == QpState::Rts || state == QpState::Sqd || state == QpState::Sqe;
  }
  bool sends_requests() const { return state == QpState::Rts || state == QpState::Sqd; }
  bool is_rc() const { return cfg.type == IBV_QPT_RC; }

  LocalSegment* send_segs(const SendWqe& w) { return send_segments.data() + w.seg_begin; }
  LocalSegment* recv_segs(const RecvWqe& w) { return const_cast<LocalSegment*>(std::as_const(*this).recv_segs(w)); }
  const LocalSegment* send_segs(const SendWqe& w) const { return send_segments.data() + w.seg_begin; }
  const LocalSegment* recv_segs(const RecvWqe& w) const {
    if (srq) return &w == &srq_held ? srq_held_segs.data() : srq->segments(w);
    return recv_segments.data() + w.seg_begin;
  }
  // The receive the next (or the open) message fills: the QP's own head, the one held from the
  // SRQ, or the SRQ's head; nullptr when none is posted.
  const RecvWqe* next_receive() const;
  // SRQ: a message longer than one packet starts: take the SRQ's head and hold it.
  void hold_receive();
  // The receive next_receive() named is done with (completed).
  void pop_receive();
};

// Copies between a frame and a list of local segments, starting `offset` bytes into the list.
void copy_from_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, std::byte* dst,
                        std::uint32_t len) noexcept;
void copy_to_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, const std::byte* src,
                      std::uint32_t len) noexcept;

// The bytes [offset, offset + len) of a segment list when they lie in one segment, else nullptr.
std::byte* contiguous_in_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset,
                                  std::uint32_t len) noexcept;
// The part of [offset, offset + len) that lies in the segment holding `offset`.
proto::WriteAhead write_ahead_in_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset,
                                          std::uint64_t len) noexcept;

// Packets a message of `length` bytes takes at path MTU `pmtu` (a zero-length message takes one).
constexpr std::uint32_t packets_for(std::uint64_t length, std::uint32_t pmtu) {
  return length == 0 ? 1 : static_cast<std::uint32_t>((length + pmtu - 1) / pmtu);
}

}  // namespace roce::rdma
