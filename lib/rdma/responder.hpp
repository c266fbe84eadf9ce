// Responder: takes each request through the states of responder_checks.hpp (PSN, opcode
// sequence, operation, resources, lengths, R_Key; then execute and acknowledge), executes SEND,
// WRITE, READ and atomics against posted receives and registered memory, and queues the ACKs,
// NAKs, READ responses and atomic ACKs it owes, in PSN order. Duplicates are answered from saved
// responder resources: READs re-executed, atomics replayed, never re-executed.
//
// A request whose ICRC the parser deferred is settled before its first acting state; only a
// packet payload.hpp lets be placed ahead of its verdict (an RC MIDDLE) is settled during its
// copy, in Execute.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/rdma/payload.hpp"
#include "lib/rdma/qp_context.hpp"
#include "lib/rdma/reorder_buffer.hpp"
#include "lib/rdma/responder_checks.hpp"
#include "protocol/ack_template.hpp"
#include "protocol/aeth.hpp"
#include "protocol/packet.hpp"

namespace roce::rdma {

enum class ResponderOutcome : std::uint8_t {
  Nothing,    // dropped or answered without changing state
  Progress,   // executed; the receive CQ or the output queue changed
  Fatal,      // a class C error: the NAK is queued and the QP must enter ERR
  Corrupted,  // the deferred ICRC failed: nothing changed but the bytes of a MIDDLE placed ahead
};

class Responder {
 public:
  enum class SequenceState : std::uint8_t {
    Normal,   // the next request is taken as it comes
    NakSent,  // a NAK sequence error or RNR NAK went out: later PSNs are dropped silently
  };

  void start(const QpContext& qp);  // entering RTR
  // Selective repeat: the engine's pool the reorder buffer's slots come from (set at creation),
  // and the end of what it holds (the QP entered ERR or RESET: nothing held will run).
  void use_reorder_pool(ReorderPool* pool) { reorder_.use_pool(pool); }
  void stop_reorder() {
    reorder_.stop();
    forget_run();  // the run's `writes` asked whether a reorder buffer is on
  }

  // `continues_run`: this request follows one of the same QP's in one RX burst
  // (Engine::begin_receive_burst), so what the run found out about the QP still holds
  // (responder_run.cpp).
  ResponderOutcome on_request(QpContext& qp, const proto::Packet& pkt, proto::ByteSpan frame, bool continues_run = false);
  // A request that continues the run (QueuePair::receive_in_run: the frame before it in this
  // burst was the QP's, which takes requests): an in-sequence WRITE the run's straight path takes
  // whole, executed, acknowledged and counted (RcvdPkts) as on_request and on_packet would;
  // false, with nothing changed, for anything else, which on_request then takes.
  bool take_run_write(QpContext& qp, const proto::Packet& pkt);
  // The same for an RC WRITE ONLY (the caller knows the opcode: Engine::straight).
  bool take_run_write_only(QpContext& qp, const proto::Packet& pkt);
  // take_run_write_only inline, for Engine::receive's straight path (defined in
  // responder_write_only.hpp, which its caller includes; no out-of-line copy exists, so a caller
  // without it fails to link). `Frame`: a proto::Packet, or a proto::MatchedWriteOnly (a frame
  // the run's template matched, not parsed), for which false also stands for the full version's
  // turn (Again): the caller parses the frame and offers it again, nothing having changed.
  template <class Frame>
  bool take_straight_write_only(QpContext& qp, const Frame& frame);
  // The QP's attributes changed (QP modify): the next request starts a run. `writes` too, so
  // that it alone says the run is known and takes WRITEs (take_run_write's one test).
  void forget_run() {
    run_.known = false;
    run_.writes = false;
  }
  // The run ends (Engine: the next frame is another QP's, the burst ends, or anything else is
  // asked; QP modify): the ACK its WRITEs coalesced into gets their last PSN and MSN, and
  // AckDeferred their count, once (responder_run.cpp). Nothing reads the output or the counters
  // before it.
  void end_run(QpContext& qp) {
    if (run_.acks_deferred != 0) settle_run_ack(qp);
    run_.ack_tail = false;
  }
  // WRITEs that took a run's straight path (responder_run.cpp): for tests.
  std::uint64_t run_writes() const { return run_writes_; }

  bool has_output() const { return out_count_ > 0; }
  // All that is owed is one plain ACK of new requests (no NAK, READ or atomic response, SACK, or
  // answer to a duplicate, which tells a requester in recovery where it stands): an ACK that may
  // wait a little and then cover more (Engine::transmit's AckHold).
  bool only_plain_ack() const {
    return out_count_ == 1 && out_[out_head_].kind == Item::Kind::Ack && !out_[out_head_].prompt;
  }
  // The next packet out carries data (a READ response): the pacer governs it.
  bool next_is_data() const { return out_count_ > 0 && out_[out_head_].kind == Item::Kind::ReadResponse; }
  // Writes the next queued response packet.
  // ACKs and NAKs come from `ack` (the QP's prebuilt frame) when there is one and it is built.
  bool build_next(QpContext& qp, TxFrame& frame, const proto::AckTemplate* ack);
  void clear_output() {
    out_count_ = 0;
    replays_queued_ = false;
  }
  // A READ response found its region gone and went out as a NAK: the QP must enter ERR.
  bool take_fatal() {
    const bool f = fatal_;
    fatal_ = false;
    return f;
  }

  // Where the payload of `pkt` would go if it came now: the checks alone, run without acting
  // (no dst if a check fails, or the packet carries nothing to place).
  PayloadDest destination(const QpContext& qp, const proto::Packet& pkt) const;

  std::uint32_t expected_psn() const { return epsn_; }
  // Selective repeat: requests held ahead of the expected PSN.
  std::uint32_t reorder_held() const { return reorder_.held(); }
  // ... and the chunks of the engine's reorder pool it holds them in.
  std::size_t reorder_chunks() const { return reorder_.chunks_held(); }
  std::uint32_t msn() const { return msn_; }
  SequenceState sequence_state() const { return seq_; }
  OpenMessage open_message() const { return msg_; }
  // READ response packets still owed, first answers and replays alike.
  std::uint64_t queued_read_packets() const;

 private:
  // What the checks found out about one request, for the acting states to use.
  struct Walk {
    const proto::Packet& pkt;
    proto::ByteSpan frame;
    bool icrc_known = false;     // the ICRC holds (checked by the parser, or settled here)
    const RecvWqe* recv = nullptr;  // the receive a SEND fills (or a UD datagram, or WRITE with immediate)
    PayloadDest dest{};          // where the payload goes
    std::byte* target = nullptr; // atomic: the word
    std::byte* placed = nullptr; // a held WRITE or SEND MIDDLE whose payload is there already (responder_reorder.cpp)
    ResponderOutcome outcome = ResponderOutcome::Nothing;
  };
  struct Resource {
    enum class Kind : std::uint8_t { Free, Read, Atomic, AtomicWrite, Flush } kind = Kind::Free;
    std::uint32_t first_psn = 0;
    std::uint32_t npackets = 0;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint32_t length = 0;
    std::uint64_t original = 0;
  };
  struct Item {
    // Sack: an ACK for `psn` with the reorder buffer's bitmap as it is when the packet is built
    // (a plain ACK when the buffer is empty by then).
    enum class Kind : std::uint8_t { Ack, Nak, ReadResponse, AtomicAck, Sack } kind = Kind::Ack;
    std::uint32_t psn = 0;  // ACK/NAK/atomic: the PSN; READ: PSN of the first response packet
    std::uint32_t msn = 0;
    proto::Syndrome syndrome{};
    std::uint64_t va = 0;            // READ: where the data starts; the R_Key is checked again
    std::uint32_t rkey = 0;          // for every response packet (the region may be gone by then)
    std::uint32_t length = 0;
    std::uint32_t npackets = 0;
    std::uint32_t sent = 0;
    std::uint64_t original = 0;
    // Queued or restarted for a duplicate request (a retry): dropped when its resource is
    // recycled by a new READ/atomic (see drop_stale_replays).
    bool reexecuted = false;
    bool replay = false;  // a fresh answer to a duplicate: takes no responder resource
    bool prompt = false;  // ACK: it answers a duplicate request, so it is never held back
  };

  // What a run of requests found out once (responder_run.cpp): whether an in-sequence WRITE
  // without immediate may take write_in_run, and the memory region the last R_Key named.
  struct Run {
    bool known = false;   // found out for the QP as it is now (kept from run to run until forget_run)
    bool writes = false;  // RC, remote write allowed, nothing held for selective repeat, TransportTuning::write_runs (only when known)
    std::uint32_t pmtu = 0;
    RememberedRegion region;  // the region the R_Key last found valid named (memory.hpp), renewed by each run
    // The output's last item is an ACK a WRITE of this run queued or coalesced into: the later
    // ones' PSN and MSN are kept here and written to it once, by end_run.
    bool ack_tail = false;
    std::uint32_t ack_psn = 0;
    std::uint32_t ack_msn = 0;
    std::uint32_t acks_deferred = 0;  // coalesced since: AckDeferred owed
  };
  void begin_run(const QpContext& qp);
  // Whether the QP's in-sequence WRITEs without immediate may take write_in_run at all (RC,
  // remote write allowed, TransportTuning::write_runs); a run also asks that nothing is held.
  static bool writes_straight(const QpContext& qp) {
    return qp.is_rc() && (qp.cfg.access & IBV_ACCESS_REMOTE_WRITE) != 0 && qp.tuning != nullptr && qp.tuning->write_runs;
  }
  // One WRITE of a run, executed and acknowledged if it is in sequence and every check holds
  // (Done); Walk, with nothing changed, leaves it to the walk (which then finds what is wrong).
  // A deferred ICRC is settled there as the walk would (place_deferred, payload.hpp); Corrupted
  // when it fails, with nothing changed but the bytes the walk too places ahead of its verdict.
  // Lean (take_run_write, a WRITE that continues a run): only the common case, with no call but
  // the payload's copy, made last so that no value lives across it; Again, with nothing changed,
  // where the full version's cold calls would be needed (the region checked whole: the run's
  // remembered region does not hold the key; a deferred ICRC), and the full version takes it.
  enum class RunStep : std::uint8_t { Walk, Done, Corrupted, Again };
  // `placed` (the full version only): a held MIDDLE's payload is there already (the drain's).
  template <bool kLean>
  RunStep write_in_run(QpContext& qp, const proto::Packet& pkt, const std::byte* placed = nullptr);
  // The lean one for an RC WRITE ONLY; on Done the payload is still to be copied to `dst`.
  // `Frame`'s accessors as proto::MatchedWriteOnly's (responder_write_only.hpp).
  template <class Frame>
  RunStep write_only_in_run(QpContext& qp, const Frame& frame, std::byte*& dst);
  void owe_run_ack(QpContext& qp, std::uint32_t psn);
  void defer_run_ack(std::uint32_t psn);  // a later WRITE's ACK folded into the run's queued one
  bool take_run_write_other(QpContext& qp, const proto::Packet& pkt);  // any other opcode
  bool take_run_write_whole(QpContext& qp, const proto::Packet& pkt);
  bool take_held_write(QpContext& qp, const proto::Packet& pkt, const std::byte* placed);
  // Where [va, va + len) under `rkey` is, for remote write, or nullptr: from the run's region
  // when the key still names it, else from MrTable::check_remote (and then remembered).
  std::byte* run_target(const QpContext& qp, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) {
    return run_.region.holds(rkey) ? run_.region.translate(va, len) : run_target_checked(qp, rkey, va, len);
  }
  std::byte* run_target_checked(const QpContext& qp, std::uint32_t rkey, std::uint64_t va, std::uint64_t len);
  void settle_run_ack(QpContext& qp);

  // One request through the states, in PSN order (on_request adds the reorder buffer around it).
  ResponderOutcome walk(QpContext& qp, const proto::Packet& pkt, proto::ByteSpan frame, std::byte* placed = nullptr);
  // Selective repeat (responder_reorder.cpp): holds a request ahead of the expected PSN; runs
  // the held requests that are now in sequence.
  ResponderOutcome hold_ahead(QpContext& qp, const proto::Packet& pkt, proto::ByteSpan frame);
  ResponderOutcome drain(QpContext& qp, ResponderOutcome so_far);
  // IRN's placement: writes a held WRITE MIDDLE's payload where its message puts it, when that
  // is known (its FIRST ran: the open message); returns where, or nullptr (then it is held whole).
  // With `icrc_pending` the deferred ICRC is settled during the copy: `icrc_good` says how.
  std::byte* place_ahead(QpContext& qp, const proto::Packet& pkt, bool icrc_pending, bool* icrc_good);
  std::byte* place_send_ahead(QpContext& qp, const proto::Packet& pkt, bool icrc_pending, bool* icrc_good);
  void queue_sack();
  bool build_sack_frame(QpContext& qp, Item& it, TxFrame& frame);

  // The checks (responder_checks.hpp): each names the next state and changes nothing.
  RespState check(const QpContext& qp, Walk& w, RespState s) const;
  RespState check_psn(const QpContext& qp, const Walk& w) const;
  RespState check_resource(const QpContext& qp, Walk& w) const;
  RespState check_length(const QpContext& qp, const Walk& w) const;
  RespState check_rkey(const QpContext& qp, Walk& w) const;
  // The acting states.
  RespState execute(QpContext& qp, Walk& w);
  RespState execute_send(QpContext& qp, Walk& w);
  RespState execute_write(QpContext& qp, Walk& w);
  // An executed WRITE packet of `len` bytes moves the open message on (a FIRST/ONLY opens it at
  // the RETH's va, rkey and dma_length); true when it ended the message, which advanced the MSN.
  // The walk (execute_write) and a run (write_in_run) both keep the message's state through it.
  bool advance_write(const proto::OpcodeInfo& info, std::uint64_t va, std::uint32_t rkey, std::uint32_t dma_length,
                     std::uint32_t len) {
    if (info.starts_message()) {
      set_message(OpenMessage::Write);
      write_va_ = va;
      write_rkey_ = rkey;
      write_remaining_ = dma_length;
      write_length_ = dma_length;
    }
    write_va_ += len;
    write_remaining_ -= len;
    if (!info.ends_message()) return false;
    msn_ = proto::psn_next(msn_);
    set_message(OpenMessage::None);
    return true;
  }
  // advance_write for a WRITE ONLY of `len` bytes (the RETH's length) with no message open: the
  // same state after it, without the position tests.
  void advance_write_only(std::uint64_t va, std::uint32_t rkey, std::uint32_t len) {
    write_va_ = va + len;
    write_rkey_ = rkey;
    write_remaining_ = 0;
    write_length_ = len;
    msn_ = proto::psn_next(msn_);
  }
  RespState execute_ud(QpContext& qp, Walk& w);
  RespState execute_read(QpContext& qp, Walk& w);
  RespState execute_atomic(Walk& w);
  // ATOMIC_WRITE and FLUSH (IBA annex A19, memory placement extensions: responder_placement.cpp).
  RespState check_placement_access(const QpContext& qp, const Walk& w) const;
  RespState check_placement_rkey(const QpContext& qp, Walk& w) const;
  RespState execute_atomic_write(Walk& w);
  RespState execute_flush(Walk& w);
  RespState duplicate_placement(QpContext& qp, Walk& w);
  // Queues the zero-length READ response ONLY that answers an ATOMIC_WRITE or FLUSH.
  void queue_empty_read_response(std::uint32_t psn, bool replay);
  RespState acknowledge(QpContext& qp, Walk& w);
  RespState duplicate(QpContext& qp, Walk& w);
  RespState on_error(QpContext& qp, Walk& w, RespState error);
  // Whether this packet's payload may land before its deferred ICRC is settled (payload.hpp).
  bool places_ahead(const QpContext& qp, const Walk& w) const;

  void complete_receive(QpContext& qp, ibv_wc_status status, ibv_wc_opcode opcode, std::uint32_t byte_len,
                        unsigned flags, std::uint32_t imm_or_rkey, std::uint32_t src_qp);
  void set_message(OpenMessage m) { msg_ = m; }

  bool output_full() const { return out_count_ >= out_capacity_; }
  Item& push_item();
  // A plain ACK for `psn` last in the queue (room checked by the caller). Inline: a call would
  // make the run's straight path (take_run_write) save registers around it.
  [[gnu::always_inline]] void push_ack(std::uint32_t psn, bool prompt) {
    // Whole, every other field its default: assigned field by field after `Item{}`, gcc zeroed
    // the rest with `rep stosb`.
    out_[slot(out_count_)] = Item{.kind = Item::Kind::Ack, .psn = psn, .msn = msn_, .syndrome = proto::Syndrome::ack(), .prompt = prompt};
    ++out_count_;
  }
  void queue_ack(QpContext& qp, std::uint32_t psn, bool prompt = false);
  // Selective repeat (queue_ack, and the run's straight path): an ACK for `psn` leaves half the
  // reorder window (or of the in-flight cap) unacknowledged, so it must not be held back.
  bool ack_due(std::uint32_t psn) const {
    return reorder_.enabled() && proto::psn_diff(psn, acked_out_) >= static_cast<std::int32_t>(reorder_.ack_span());
  }
  // An ACK or SACK last in the queue covers `psn` too (one ACK acknowledges every PSN up to its
  // own): false if there is none.
  bool coalesce_ack(QpContext& qp, std::uint32_t psn, bool prompt) {
    if (out_count_ == 0) return false;
    Item& tail = out_[slot(out_count_ - 1)];
    if (tail.kind != Item::Kind::Ack && tail.kind != Item::Kind::Sack) return false;
    tail.psn = psn;
    tail.msn = msn_;
    tail.prompt = tail.prompt || prompt;
    qp.counters.inc(Counter::AckDeferred);
    return true;
  }
  void queue_nak(QpContext& qp, std::uint32_t psn, proto::Syndrome s);
  Resource& next_resource();
  // A re-executed answer for the resource the next new READ/atomic recycles: nobody waits for it.
  bool is_stale(const Item& it) const;
  // First answers to READ/atomic requests still queued and not made stale by a new one: what
  // max_dest_rd_atomic bounds (replays of duplicates take no resource: the requester counted
  // the request once).
  std::uint32_t rd_atomic_in_use() const;
  void drop_stale_replays();
  // Drops queued answers for PSNs at or after `psn`; returns the READ response stream of the
  // request that started at `read_first_psn` if it is among them (kept, for a restart).
  Item* truncate_output_at(std::uint32_t psn, std::uint32_t read_first_psn);
  // A queued response stream of READ `r` that runs to its end (its first answer, or the answer
  // to a request for its rest), if any.
  Item* find_read_stream(const Resource& r);

  // Declared in the order of use (docs/perf-changes.md section 78): what a request, a run's WRITE
  // and the ACK it queues read or change comes first, up to reorder_'s window (ack_due), in three
  // cache lines (queue_pair_layout.cpp pins them); what a SEND, a READ, an atomic or the reorder
  // buffer's slots need comes after.
  std::uint32_t epsn_ = 0;
  // Selective repeat: the PSN the last ACK or SACK sent acknowledged (queue_ack's prompt rule).
  std::uint32_t acked_out_ = 0;
  std::uint32_t msn_ = 0;
  SequenceState seq_ = SequenceState::Normal;
  OpenMessage msg_ = OpenMessage::None;
  bool drop_msg_ = false;         // UC: a packet of the current message was lost; skip to the next FIRST/ONLY
  bool fatal_ = false;
  // WRITE: where the next payload byte goes. Every packet's range is checked against the R_Key
  // again, so a region deregistered or invalidated in the middle of a message is never written.
  std::uint64_t write_va_ = 0;
  std::uint32_t write_rkey_ = 0;
  std::uint32_t write_remaining_ = 0;
  std::uint32_t write_length_ = 0;
  bool replays_queued_ = false;  // some queued item was re-executed for a duplicate (until the queue empties)
  std::size_t out_head_ = 0;
  std::size_t out_count_ = 0;
  std::size_t out_capacity_ = 0;
  // out_.size() - 1, kept: a vector's size is a division by sizeof(Item) (56), at every slot.
  std::size_t out_mask_ = 0;
  std::vector<Item> out_;
  Run run_;
  std::uint64_t run_writes_ = 0;
  ReorderBuffer reorder_;  // its window (first) is the last of the hot lines: ack_due

  std::uint32_t msg_offset_ = 0;  // SEND: bytes placed in the receive WQE so far
  std::vector<Resource> resources_;
  std::size_t next_resource_ = 0;
  std::size_t slot(std::size_t i) const { return (out_head_ + i) & out_mask_; }

  friend struct QueuePairLayout;  // queue_pair_layout.cpp
};

std::string to_string(ResponderOutcome o);
std::string to_string(Responder::SequenceState s);

}  // namespace roce::rdma
