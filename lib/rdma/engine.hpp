// One transport shard: the QPs one worker owns, with their CQs, the receive dispatcher
// (requests to responders, responses to completers), the transmit scheduler and the timers.
// Single-threaded by design: the dataplane gives each worker lcore its own Engine and shards
// QPs by QPN; the memory region table may be shared.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/rdma/gsi_port.hpp"
#include "lib/rdma/memory_window.hpp"
#include "lib/rdma/qpn_shards.hpp"
#include "lib/rdma/queue_pair.hpp"
#include "lib/rdma/reorder_pool.hpp"
#include "lib/rdma/timer_heap.hpp"
#include "lib/status.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/parser.hpp"
#include "protocol/write_only_match.hpp"

namespace roce::rdma {

// What create_qp takes: ibv_qp_init_attr's fields, with this library's CQ type.
struct QpInit {
  ibv_qp_type type = IBV_QPT_RC;
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  SharedReceiveQueue* srq = nullptr;  // receives come from it (cap.max_recv_wr/sge are then ignored)
};

// What ibv_get_async_event reports: IBV_EVENT_SRQ_LIMIT_REACHED (srq set) or
// IBV_EVENT_QP_LAST_WQE_REACHED (qp set).
struct AsyncEvent {
  ibv_event_type type = IBV_EVENT_SRQ_LIMIT_REACHED;
  SharedReceiveQueue* srq = nullptr;
  QueuePair* qp = nullptr;
};

struct EngineConfig {
  PathConfig path;                 // our addresses and how to find peers' MACs
  TransportTuning tuning;
  // Resource limits: a request beyond one fails with a clear error and is counted
  // (Engine::limit_hits), so a misbehaving client cannot take the whole shard.
  std::uint32_t max_qps = 1024;
  QpnShards qpns;                  // the QPN rule the dataplane steers by (qpn_shards.hpp)
  unsigned shard = 0;              // this engine is qpns' shard `shard`: its QPNs are qpns.qpn(shard, k)
  std::uint32_t max_qp_wr = 16384;
  std::uint32_t max_sge = 32;
  std::uint32_t max_inline = 256;
  std::uint32_t max_cqe = 1u << 20;
  std::uint8_t max_rd_atomic = 16; // outstanding READ/atomic requests per QP, each direction
  // Largest UD datagram: the port's MTU as verbs reports it (UD QPs have no path MTU; rxe takes
  // the netdev MTU rounded down to an IB MTU, 4096 on a jumbo link).
  std::uint32_t ud_mtu = 4096;
  bool check_dest_ip = true;       // drop packets addressed to another IP
  // Selective repeat's reorder slots (reorder_pool.hpp): the pool grows by a window's chunks
  // as each selective repeat QP enters RTR, up to this; a hole finding it empty drops the request
  // as go-back-N would (reorder_pool_exhausted). 4 MiB: whole windows of 128 PSNs at a 4 KiB
  // MTU for 7 QPs with holes at once.
  std::size_t reorder_pool_bytes = 4u << 20;
  GsiConfig gsi;                   // QP1: its P_Key and ring sizes
  // Each QP's ACKs and WRITE ONLYs matched against its flow's header image instead of parsed
  // (docs/perf-changes.md section 87): the same Packet either way. false: every frame parsed
  // (the tests' reference).
  bool match_flows = true;
};

// Drops the engine counts before a packet reaches a QP.
enum class EngineDrop : std::uint8_t {
  IcrcBad,
  UnknownQp,
  NotForUs,
  WrongTransport,
  Ipv4ChecksumBad,  // the ICRC masks the IPv4 checksum, so it is checked on its own
  PkeyMismatch,     // BTH P_Key does not match the QP's partition (IBA 10.9.3)
  Ipv4Options,      // an IPv4 header with options: its ICRC cannot be checked
  Count,
};
std::string to_string(EngineDrop d);

// Resource limits an application ran into (each one also returned an error).
enum class EngineLimit : std::uint8_t {
  Qps,            // create_qp beyond max_qps
  QueueCaps,      // create_qp/create_cq asking for more WRs, SGEs, inline bytes or CQEs than allowed
  RdAtomic,       // modify_qp asking for more outstanding READ/atomics than max_rd_atomic
  SendQueueFull,  // post_send with max_send_wr requests already outstanding
  RecvQueueFull,  // post_recv with max_recv_wr receives already posted
  Count,
};
std::string to_string(EngineLimit l);

// Payload bytes from which the parser leaves the payload's share of a packet's ICRC to the QP
// (ParseOptions::defer_icrc_from), so that the packets a QP places before their ICRC is known
// (payload.hpp) are read once, on their way to where they belong. See docs/perf-changes.md.
inline constexpr std::uint32_t kDeferIcrcFrom = 1024;

class Engine {
 public:
  Engine(EngineConfig cfg, MrTable& mrs);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Control path (may allocate).
  PdHandle alloc_pd() { return mrs_.alloc_pd(); }
  Result<CompletionQueue*> create_cq(std::uint32_t depth);
  Status destroy_cq(CompletionQueue* cq);
  Result<QueuePair*> create_qp(PdHandle pd, const QpInit& attr);
  Status destroy_qp(QueuePair* qp);
  Status modify_qp(QueuePair* qp, const ibv_qp_attr& attr, int mask);
  Result<AddressHandle*> create_ah(PdHandle pd, const ibv_ah_attr& attr);
  Status destroy_ah(AddressHandle* ah);
  // Memory windows (engine_objects.cpp). bind_mw is ibv_bind_mw (type 1 only): it posts the
  // bind on `qp`'s send queue with the window's next key and, once posted, the handle's rkey is
  // that key. A type 2 window is bound by posting IBV_WR_BIND_MW with post_send.
  Result<MemoryWindow*> alloc_mw(PdHandle pd, ibv_mw_type type);
  Status dealloc_mw(MemoryWindow* mw);
  int bind_mw(QueuePair* qp, MemoryWindow* mw, const ibv_mw_bind& bind);
  // Shared receive queues (engine_objects.cpp): ibv_create_srq's attr (max_wr, max_sge within
  // the engine's limits; srq_limit arms the limit event), ibv_modify_srq, ibv_destroy_srq
  // (EBUSY while a QP uses it), ibv_post_srq_recv.
  Result<SharedReceiveQueue*> create_srq(PdHandle pd, const ibv_srq_attr& attr);
  Status modify_srq(SharedReceiveQueue* srq, const ibv_srq_attr& attr, int mask);
  Status destroy_srq(SharedReceiveQueue* srq);
  int post_srq_recv(SharedReceiveQueue* srq, const ibv_recv_wr* wr, ibv_recv_wr** bad) { return srq->post_recv(wr, bad); }
  // ibv_get_async_event without blocking: false when none is pending.
  bool get_async_event(AsyncEvent* ev);

  // Verbs data path: same return conventions as libibverbs.
  int post_send(QueuePair* qp, const ibv_send_wr* wr, ibv_send_wr** bad);
  int post_recv(QueuePair* qp, const ibv_recv_wr* wr, ibv_recv_wr** bad);
  int poll_cq(CompletionQueue* cq, int n, ibv_wc* wc) { return cq->poll(n, wc); }

  // Packet path.
  void receive(proto::ByteSpan frame, Nanos now);
  // receive() for each of `frames` in order, in one call (a worker's RX burst, between
  // begin_receive_burst and end_receive_burst): one prologue for the burst, not one a frame, and
  // each frame's lines asked for a few frames ahead (docs/perf-changes.md section 77). Stops at
  // the first frame that is not IPv4 over Ethernet (an ARP or NDP frame is the caller's; an IPv6
  // one goes to receive() after the caller's look): returns how many it took.
  std::size_t receive_frames(std::span<const proto::ByteSpan> frames, Nanos now);
  // The frames of one RX burst go to receive() between these two: the refresh after each frame
  // (the QP's timer, the active ring) is then done once per run of frames for one QP, when the
  // next frame is another QP's or at end_receive_burst, which must come before any other call.
  void begin_receive_burst() { in_burst_ = true; }
  void end_receive_burst() {
    in_burst_ = false;
    refresh_deferred();
  }
  // `busy_iteration`: the caller's receive queue stays full and it calls again in about this
  // long (its last iteration's length), so a plain ACK may wait for a later call and cover what
  // arrives meanwhile (TransportTuning::ack_hold). kNever: every ACK owed goes now.
  std::size_t transmit(std::span<TxFrame> frames, Nanos now, Nanos busy_iteration = kNever);
  void advance(Nanos now);
  // The caller (a worker's poll loop) was not running from `since` (its previous iteration) to
  // `now`, longer than its stall threshold, and is about to read what arrived meanwhile: an RTT
  // sample of a packet sent before `now` measured that stall too, not the path, and is not taken
  // (the lcore descheduled by a busy host: such samples lifted srtt from microseconds to
  // milliseconds, and with it every probe's wait; docs/loss.md part 1, "Session 19 (gbn19)");
  // and a local ACK timer that expired in it moves on by the time it stood still, once
  // (Completer::on_timer; "Session 20 (gbn20)").
  void note_stall(Nanos since, Nanos now) { own_stall_ = OwnStall{since, now}; }
  // Whether advance(now) has anything to do: a QP's deadline has come, or a burst left open
  // owes its refresh. A poll loop asks this every iteration instead of calling advance.
  bool timers_pending(Nanos now) const { return timers_.earliest() <= now || unrefreshed_ != nullptr; }
  Nanos next_deadline() const { return timers_.earliest(); }
  bool has_tx_work() const { return active_count_ > 0 || gsi_.has_tx_work(); }
  // QPs the last transmit() passed over, each with a plain ACK waiting (ack_hold).
  std::size_t acks_held() const { return held_now_.size(); }
  // QP1: MADs received and to send (the CM agent's side of it).
  GsiPort& gsi() { return gsi_; }
  const GsiPort& gsi() const { return gsi_; }

  QueuePair* find_qp(std::uint32_t qpn) const;
  // The per-QP state a frame to `qpn` will read, asked for ahead of it (a worker that knows the
  // QPN of a later run in its RX burst); nothing for a QPN no QP of this engine has. Changes nothing.
  void prefetch_receive_state(std::uint32_t qpn) const {
    if (const QueuePair* qp = find_qp(qpn)) qp->prefetch_receive_state();
  }
  const EngineConfig& config() const { return cfg_; }
  // How often the ICRC's header share needed a new flow template (0 with icrc_linear off).
  std::uint64_t icrc_template_misses() const { return icrc_cache_ ? icrc_cache_->misses() : 0; }
  MrTable& memory() { return mrs_; }
  const ReorderPool& reorder_pool() const { return *reorder_pool_; }
  std::uint64_t parse_drops(proto::ParseError e) const { return parse_drops_[static_cast<std::size_t>(e)]; }
  std::uint64_t drops(EngineDrop d) const { return drops_[static_cast<std::size_t>(d)]; }
  std::uint64_t received() const { return received_; }
  // Of those, the frames parse_frame read: all but the run's WRITE ONLYs its template matched and
  // the run took, and the ACKs and WRITE ONLYs a QP's flow template matched (engine.cpp,
  // receive_inline; docs/perf-changes.md sections 82 and 87).
  std::uint64_t parsed() const { return parsed_; }
  // Of those not parsed, the ones a QP's flow template matched (section 87; the rest are the run's).
  std::uint64_t flow_matched() const { return flow_matched_; }
  std::uint64_t limit_hits(EngineLimit l) const { return limit_hits_[static_cast<std::size_t>(l)]; }
  // Sum of every QP's counters (including destroyed ones).
  Counters total_counters() const;
  template <typename Fn>
  void for_each_qp(Fn&& fn) const {
    for (const auto& q : qps_)
      if (q) fn(*q);
  }

 private:
  void activate(QueuePair& qp);
  void refresh(QueuePair& qp, bool idle = false);
  // After requests alone (no CE mark, no change of state): only what the responder owes is new,
  // none of the QP's timers moved (docs/perf-changes.md section 36). A QP already in the active
  // ring stays there, so has_tx_work (the send queue walk and the window's limit) is not asked.
  void refresh_requests(QueuePair& qp) {
    if (!qp.in_active_list && qp.has_tx_work()) activate(qp);
  }
  void refresh_deferred() {
    if (unrefreshed_ != nullptr) {
      unrefreshed_->end_receive_run();  // the responder's output and counters settled first
      unrefreshed_timers_ ? refresh(*unrefreshed_) : refresh_requests(*unrefreshed_);
    }
    unrefreshed_ = nullptr;
    unrefreshed_timers_ = false;
    stop_straight_run();
  }
  // No frame continues a run on the straight path (straight_bth_, run_template_) until a frame
  // that continued one starts it again (engine.cpp, start_straight_run).
  void stop_straight_run() {
    straight_bth_ = kNoStraightRun;
    run_template_.suspend();
  }
  // `of_flow`: the frame is one of the flow `qp`'s WRITE ONLY template holds (it matched it, or taught it).
  void start_straight_run(const QueuePair& qp, proto::ByteSpan frame, const proto::Packet& pkt, bool of_flow);
  // After parse_frame (engine.cpp): the frame, if it needs no check beyond the run's, goes to
  // the run's WRITE ONLY path; anything else to receive_checked.
  bool straight(const proto::Packet& pkt) const;
  // `matched`: pkt is a flow template's (match_flow), not parse_frame's.
  void receive_checked(proto::ByteSpan frame, Nanos now, proto::Packet& pkt, proto::ParseError err, bool run_tried,
                       bool matched);
  void receive_inline(proto::ByteSpan frame, Nanos now);  // receive()'s body (receive_frames' too)
  bool for_us(const proto::Packet& pkt) const;
  // What straight_bth_ becomes once `qp` is the burst's unrefreshed QP, `pkt` its last frame.
  static std::uint64_t straight_bth(const QueuePair& qp, const proto::Packet& pkt);
  bool owns_srq(const SharedReceiveQueue* srq) const;
  // The send window of the RC QPs toward `qp`'s peer address, made on first use.
  SendWindow* path_window(const QueuePair& qp);

  EngineConfig cfg_;
  MrTable& mrs_;
  std::vector<std::unique_ptr<QueuePair>> qps_;
  std::vector<std::unique_ptr<CompletionQueue>> cqs_;
  std::vector<std::unique_ptr<AddressHandle>> ahs_;
  std::vector<std::unique_ptr<MemoryWindow>> mws_;
  std::vector<std::unique_ptr<SharedReceiveQueue>> srqs_;
  TimerHeap timers_;
  GsiPort gsi_;
  struct PathWindow {
    IpAddress peer;
    std::unique_ptr<SendWindow> window;
  };
  std::vector<PathWindow> path_windows_;  // control path only (modify_qp)
  // The ICRC's header share of the frames it seals and receives, by flow (icrc_linear.hpp);
  // null with TransportTuning::icrc_linear off.
  std::unique_ptr<proto::IcrcHeaderCache> icrc_cache_;
  std::vector<std::uint32_t> active_;  // ring of QP slots with something to send
  // Index `i` of the ring, for i below twice its size (head + count, head + 1): a compare, not
  // the 64-bit division of `%` (three or four a round trip at queue depth 1).
  std::size_t ring_slot(std::size_t i) const { return i < active_.size() ? i : i - active_.size(); }
  std::size_t active_head_ = 0;
  std::size_t active_count_ = 0;
  Counters retired_;  // counters of destroyed QPs
  std::array<std::uint64_t, static_cast<std::size_t>(proto::ParseError::Count)> parse_drops_{};
  std::array<std::uint64_t, static_cast<std::size_t>(EngineDrop::Count)> drops_{};
  std::uint64_t received_ = 0;
  std::uint64_t parsed_ = 0;
  std::uint64_t flow_matched_ = 0;
  // parse_frame's options, the same for every frame (a ParseOptions built per frame was 9
  // instructions of a 64 B WRITE's; docs/perf-changes.md section 75).
  proto::ParseOptions parse_opts_;
  bool in_burst_ = false;
  QueuePair* unrefreshed_ = nullptr;  // received into during a burst, not refreshed since
  bool unrefreshed_timers_ = false;   // ... by a frame that may have moved its timers
  // The first 8 bytes of the BTH (the flags byte, SE | M | PadCnt | TVer, masked to zero) of a
  // frame that continues unrefreshed_'s run as an RC WRITE ONLY with nothing else to check at
  // the QP: its QPN, a P_Key it accepted, the reserved byte clear; set by a frame that continued
  // the run, only while the QP is RC, takes requests and is no GSI QP, and reset with
  // unrefreshed_ (refresh_deferred) and at QP modify. One compare of the frame's bytes then stands for the run test, the GSI test, the
  // P_Key's and the QP state's (engine.cpp, straight). kNoStraightRun matches no masked BTH.
  static constexpr std::uint64_t kNoStraightRun = ~std::uint64_t{0};
  std::uint64_t straight_bth_ = kNoStraightRun;
  // The frames straight_bth_ lets through, recognised by their bytes without parse_frame: the run's
  // flow's header image, taken from the frame that set straight_bth_ (its BTH the one straight_bth_
  // expects), active exactly while straight_bth_ is set, unless that frame could not stand for the
  // flow (WriteOnlyTemplate::set). docs/perf-changes.md section 82.
  proto::WriteOnlyTemplate run_template_;
  // Per QP slot (null: no QP), the flows of the frames it receives most, matched by their header
  // image instead of parsed (proto::FlowTemplate): its ACKs (a requester's) and its peer's WRITE
  // ONLYs (a responder's, the frames before a run has its template), each learnt from a frame
  // parse_frame accepted and kept across bursts; suspended at modify_qp, gone with the QP
  // (engine.cpp, match_flow and learn_flow; docs/perf-changes.md section 87).
  struct FlowTemplates {
    proto::FlowTemplate ack;
    proto::FlowTemplate write_only;
  };
  std::vector<std::unique_ptr<FlowTemplates>> flow_templates_;
  FlowTemplates* flow_templates(std::uint32_t qpn) const {
    const auto slot = cfg_.qpns.slot(cfg_.shard, qpn);
    return slot && *slot < flow_templates_.size() ? flow_templates_[*slot].get() : nullptr;
  }
  bool match_flow(proto::ByteSpan frame, proto::Packet& pkt) const;
  bool learn_flow(const QueuePair& qp, proto::ByteSpan frame, const proto::Packet& pkt);
  OwnStall own_stall_{};              // note_stall's latest stall (QpContext::own_stall points here)
  std::array<std::uint64_t, static_cast<std::size_t>(EngineLimit::Count)> limit_hits_{};
  void hit(EngineLimit l) { ++limit_hits_[static_cast<std::size_t>(l)]; }
  // Last, so that the members the receive path reads keep their places.
  // Per slot: since when, and for how many transmit calls, its plain ACK has been held (ack_hold).
  struct HeldAck {
    Nanos since = kNever;
    std::uint32_t turns = 0;
  };
  std::vector<HeldAck> held_acks_;
  std::vector<std::uint32_t> held_now_;  // slots passed over by the current transmit call
  bool hold_ack(std::uint32_t slot, const QueuePair& qp, Nanos now, Nanos gap);
  // The QPs' reorder slots; outlives them (~Engine destroys the QPs first).
  std::unique_ptr<ReorderPool> reorder_pool_;
};

// Whether QueuePair::build_run would surely build nothing and change nothing for `qp` now (the
// WQE under its requester's cursor is one no run takes): Engine::transmit then does not try it.
// false: perhaps a run. engine.cpp; docs/perf-changes.md section 89.
bool no_run_at_cursor(const QueuePair& qp);

}  // namespace roce::rdma
