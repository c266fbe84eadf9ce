// A queue pair: its shared context plus its requester, responder and completer. modify()
// and enter_error() are the only places its state changes.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <memory>
#include <span>

#include "lib/rdma/address.hpp"
#include "lib/rdma/completer.hpp"
#include "lib/rdma/qp_context.hpp"
#include "lib/rdma/requester.hpp"
#include "lib/rdma/responder.hpp"
#include "lib/status.hpp"
#include "protocol/ack_template.hpp"
#include "protocol/packet.hpp"
#include "protocol/pkey.hpp"
#include "protocol/udp_sport.hpp"

namespace roce::rdma {

// What ibv_create_ah gives back: a UD destination. The ibv_ah comes first so the pointer a
// work request carries converts back.
struct AddressHandle {
  ibv_ah base{};
  PdHandle pd = 0;
  UdDestination dest{};
};

struct PathConfig {
  LocalAddress local{};
  MacResolver resolve_mac;
  proto::SportScheme sport_scheme = proto::SportScheme::FlowLabel;
  std::uint8_t ttl = 64;  // rxe sends 64 whatever hop_limit the AV asks for
};

class QueuePair {
 public:
  QueuePair(const QpConfig& cfg, const TransportTuning* tuning, MrTable* mrs, CompletionQueue* send_cq,
            CompletionQueue* recv_cq);

  std::uint32_t qpn() const { return ctx_.cfg.qpn; }
  QpState state() const { return ctx_.state; }
  ibv_qp_type type() const { return ctx_.cfg.type; }
  PdHandle pd() const { return ctx_.cfg.pd; }
  const QpConfig& config() const { return ctx_.cfg; }
  const Counters& counters() const { return ctx_.counters; }

  Status modify(const ibv_qp_attr& attr, int mask, const PathConfig& path);
  // Selective repeat with a reorder window of `window` PSNs (0: go-back-N), before RTR; only
  // when the peer agreed at connection set-up (docs/loss.md, part 2).
  Status set_selective_repeat(std::uint32_t window);
  bool selective_repeat() const { return ctx_.cfg.selective_repeat != 0; }
  void query(ibv_qp_attr* attr, ibv_qp_init_attr* init) const;
  int post_send(const ibv_send_wr* wr, ibv_send_wr** bad);
  int post_recv(const ibv_recv_wr* wr, ibv_recv_wr** bad);
  // Receives come from `srq` (set once, at creation, by the engine).
  void attach_srq(SharedReceiveQueue* srq);
  void use_icrc_cache(proto::IcrcHeaderCache* cache) { ctx_.icrc_cache = cache; }
  // The engine's Engine::note_stall record (set once, at creation).
  void use_stall_clock(const OwnStall* stall) { ctx_.own_stall = stall; }
  // Selective repeat's reorder slots come from `pool` (the engine's; set once, at creation).
  void use_reorder_pool(ReorderPool* pool) { resp_.use_reorder_pool(pool); }
  SharedReceiveQueue* srq() const { return ctx_.srq; }
  // IBV_EVENT_QP_LAST_WQE_REACHED is due (an SRQ QP entered ERR); reported once.
  bool take_last_wqe_reached() {
    const bool e = last_wqe_reached_;
    last_wqe_reached_ = false;
    return e;
  }

  // Data path. A packet whose ICRC the parser deferred is settled on its way through the
  // responder or completer; false if it failed (the caller counts it as corrupted).
  // `continues_run`: the frame before it in this RX burst was this QP's too (Responder::on_request).
  bool on_packet(const proto::Packet& pkt, proto::ByteSpan frame, Nanos now, bool continues_run = false);
  // A frame that continues this QP's run in an RX burst (Engine::receive, after the frame's own
  // checks), taken on the run's straight path: a WRITE the responder's run takes whole
  // (Responder::take_run_write) and what on_packet and the engine would do after it (RcvdPkts,
  // which the responder counts, so that no value here lives across its call; nothing else
  // changes: no state, no timer). False, with nothing changed, for any frame that needs more (a
  // CE mark, another P_Key, a state that takes no requests, anything the run refuses, a CNP or
  // another transport among them): on_packet then takes it.
  bool receive_in_run(const proto::Packet& pkt) {
    return pkt.ecn() != proto::Ecn::Ce && proto::pkey_matches(pkt.bth.pkey.get(), ctx_.cfg.pkey) && ctx_.accepts_requests() &&
           resp_.take_run_write(ctx_, pkt);
  }
  // An RC WRITE ONLY that Engine::receive found to continue this QP's run with nothing else to
  // check at the QP (Engine::straight: no CE mark, a P_Key this QP accepted, a state that takes
  // requests): receive_in_run without those tests, the responder's code inline (its caller
  // includes lib/rdma/responder_write_only.hpp).
  // `Frame`: the parsed packet, or the frame the run's template matched (proto::MatchedWriteOnly;
  // false then also when the responder needs the frame parsed).
  template <class Frame>
  [[gnu::always_inline]] bool receive_write_only_in_run(const Frame& frame) { return resp_.take_straight_write_only(ctx_, frame); }
  // The run of this QP's frames in an RX burst ended (Engine): what the responder kept for the
  // run's end is settled (Responder::end_run).
  void end_receive_run() { resp_.end_run(ctx_); }
  // Asks for the cache lines a received frame of this QP reads (a request's, the ACK it owes, an
  // ACK's: the lines queue_pair_layout.cpp pins), ahead of the frame (Engine::
  // prefetch_receive_state). Changes nothing.
  void prefetch_receive_state() const {
    const auto* at = reinterpret_cast<const char*>(this);
    for (unsigned l = 0; l < 3; ++l) __builtin_prefetch(at + 64 * l, 1, 3);  // flags, state, config, send queue
    __builtin_prefetch(&ctx_.counters, 1, 3);  // SentPkts, RcvdPkts, AckDeferred
    const auto* resp = reinterpret_cast<const char*>(&resp_);
    for (unsigned l = 0; l < 3; ++l) __builtin_prefetch(resp + 64 * l, 1, 3);
    __builtin_prefetch(&comp_, 1, 3);  // the timers: deadline
  }
  // Where the payload of `pkt` would be placed if it came now (a request's per the responder's
  // checks, a READ response's if it is the one the oldest READ expects): for tests.
  PayloadDest payload_dest(const proto::Packet& pkt) const;
  void on_cnp(Nanos now);
  bool has_tx_work() const;
  // Surely no send work (has_tx_work would be false), in O(1): asked after each frame of a
  // transmit turn; false says only that there may be some.
  bool nothing_left() const { return !cnp_pending_ && !resp_.has_output() && req_.nothing_left(ctx_); }
  // Its only send work is a plain ACK (Responder::only_plain_ack): no request, CNP or other
  // response is waiting behind it.
  bool only_plain_ack_pending() const;
  bool build_next(TxFrame& frame, Nanos now);
  // A run of request frames into `frames` (Engine::transmit, TransportTuning::tx_runs): the
  // frames build_next would write one call at a time for consecutive WQEs that each go as one
  // packet (Requester::build_run), with the per-call checks that cannot change within the
  // run asked once. Returns how many; 0 where no run applies (nothing written): a CNP or a
  // response owed, the pacer or a send window below one packet, congestion control, or the next
  // WQE not fitting.
  std::size_t build_run(std::span<TxFrame> frames, Nanos now);
  // Frames this QP may build in one transmit call (Requester::turn_limit; TransportTuning::
  // split_small_window, WindowTuning::bdp_cap_split): no limit while responses are owed.
  std::uint32_t turn_limit() const { return resp_.has_output() ? UINT32_MAX : req_.turn_limit(ctx_); }
  // The same, as a transmit turn begins (Requester::note_turn counts the turns).
  // Neither split switched on (the default): note_turn counts nothing and turn_limit has no
  // limit, so neither is called (two calls a turn, each turn of every QP).
  std::uint32_t begin_turn() {
    if (!ctx_.tuning->split_small_window && !ctx_.tuning->window.bdp_cap_split) return UINT32_MAX;
    req_.note_turn(ctx_);
    return turn_limit();
  }
  // After the build_next calls of one transmit turn, all at `now`: per-turn timer work.
  void end_send_turn(Nanos now) { comp_.end_send_turn(ctx_, now); }
  void on_timer(Nanos now);
  // Inline: the engine asks after every transmit turn and every refresh.
  Nanos deadline() const {
    if (ctx_.state == QpState::Err || ctx_.state == QpState::Reset) return kNever;
    Nanos d = std::min(comp_.deadline(), pacer_wake_);
    if (cc_) d = std::min(d, cc_->next_deadline());
    return d;
  }

  const Requester& requester() const { return req_; }
  const Responder& responder() const { return resp_; }
  const Completer& completer() const { return comp_; }
  const QpContext& context() const { return ctx_; }
  const proto::AckTemplate* ack_frame() const { return ack_frame_.get(); }
  const QpCongestion* congestion() const { return cc_.get(); }

  // The send window shared with the engine's other QPs toward the same peer (set once the QP is
  // in RTS; the engine owns it), and keeping this QP counted among its sharers while it has
  // send work.
  void share_window(SendWindow* w);
  SendWindow* shared_window() const { return shared_window_; }
  // Joins or leaves the window as the QP has send work or not; true if that changed. Inline: the
  // engine asks after every transmit turn, post and received burst, and it rarely changes.
  bool sync_window_share() {
    const bool active = ctx_.is_rc() && ctx_.sends_requests() && !ctx_.sq.empty();
    if (active == window_joined_) return false;
    change_window_share(active);
    return true;
  }

  // The QP's state is declared in the order of use (docs/perf-changes.md section 78): the
  // scheduler's flags, the pacer, and the context's state, tuning and memory table in the first
  // cache line; each of the responder, completer and requester from a line of its own, its hot
  // fields first. queue_pair_layout.cpp pins the lines a received frame and an ACK touch.
  bool in_active_list = false;  // owned by the engine's scheduler
  std::uint32_t slot = 0;       // index in the engine's QP table

 private:
  void change_window_share(bool active);
  void enter_error();
  void set_state(QpState s);
  void flush_receives();
  Status build_path(const ibv_qp_attr& attr, const PathConfig& path);
  void apply(const ibv_qp_attr& attr, int mask);
  void after_completer(CompleterOutcome o);
  // Once the packet is known good (a corrupted one must not trigger a CNP either). Inline: a
  // call per packet for a rare mark.
  void on_ecn(const proto::Packet& pkt, Nanos now) {
    if (pkt.ecn() == proto::Ecn::Ce) on_ce_mark(pkt, now);
  }
  void on_ce_mark(const proto::Packet& pkt, Nanos now);
  bool build_cnp(TxFrame& frame);
  // Whether the pacer lets a data frame go now; if not, the QP sleeps until it does.
  bool paced_out(Nanos now);
  // Whether a send window below one packet holds the next request back (until srtt / window
  // after the previous one); build_next then has the QP sleep until then.
  bool window_pace_due(Nanos now) const;
  // The wake time of a QP held back by the pacer is where its next frame may leave at the current
  // rate; after a rate change (an increase above all: a 4 KB frame at 1 Mb/s waits 33 ms) it moves.
  void repace(Nanos now);
  std::uint32_t max_frame_bytes() const;

  bool cnp_pending_ = false;
  bool window_joined_ = false;
  Nanos pacer_wake_ = kNever;  // set while the pacer (or the send window) holds the QP back
  std::unique_ptr<QpCongestion> cc_;
  // An RC QP's ACK on ctx_.path, built with it (protocol/ack_template.hpp); null for other QPs
  // and with TransportTuning::ack_template off.
  std::unique_ptr<proto::AckTemplate> ack_frame_;
  QpContext ctx_;
  alignas(64) Responder resp_;
  alignas(64) Completer comp_;
  alignas(64) Requester req_;
  bool last_wqe_reached_ = false;
  Nanos last_request_at_ = kNever;
  SendWindow* shared_window_ = nullptr;
  // The region post_send's last SGE named (post_send tests that it still holds at each call).
  LocalKeyCache post_lkeys_;

  friend struct QueuePairLayout;  // queue_pair_layout.cpp
};

}  // namespace roce::rdma
