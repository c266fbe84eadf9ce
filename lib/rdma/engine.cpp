#include "lib/rdma/engine.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

#include "lib/rdma/responder_write_only.hpp"
#include "protocol/be.hpp"
#include "protocol/gsi.hpp"
#include "protocol/headers.hpp"
#include "protocol/icrc_deferred.hpp"
#include "protocol/pkey.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

// An address compared as whole words: std::array's == called memcmp for these 4 or 16 bytes on
// every packet (gcc 12).
template <std::size_t N>
bool same_address(const std::array<std::uint8_t, N>& a, const std::array<std::uint8_t, N>& b) noexcept {
  static_assert(N % 4 == 0);
  std::uint32_t diff = 0;
  for (std::size_t i = 0; i < N; i += 4) {
    std::uint32_t x, y;
    std::memcpy(&x, a.data() + i, 4);
    std::memcpy(&y, b.data() + i, 4);
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace

Engine::Engine(EngineConfig cfg, MrTable& mrs)
    : cfg_(std::move(cfg)), mrs_(mrs), qps_(cfg_.max_qps), timers_(cfg_.max_qps), gsi_(cfg_.gsi), active_(cfg_.max_qps),
      flow_templates_(cfg_.max_qps), held_acks_(cfg_.max_qps), reorder_pool_(std::make_unique<ReorderPool>(cfg_.reorder_pool_bytes)) {
  held_now_.reserve(cfg_.max_qps);
  if (cfg_.tuning.icrc_linear) icrc_cache_ = std::make_unique<proto::IcrcHeaderCache>();
  parse_opts_.crc = cfg_.tuning.crc;
  parse_opts_.defer_icrc_from = kDeferIcrcFrom;
  parse_opts_.mtu_rules = false;  // sizes against the path MTU are the QP's to check: a NAK, not a silent drop
  parse_opts_.icrc_cache = icrc_cache_.get();
}


Result<CompletionQueue*> Engine::create_cq(std::uint32_t depth) {
  if (depth == 0 || depth > cfg_.max_cqe) {
    if (depth != 0) hit(EngineLimit::QueueCaps);
    return make_error(EINVAL, "CQ depth " + std::to_string(depth) + " outside 1.." + std::to_string(cfg_.max_cqe));
  }
  cqs_.push_back(std::make_unique<CompletionQueue>(depth));
  return cqs_.back().get();
}

Status Engine::destroy_cq(CompletionQueue* cq) {
  for (const auto& q : qps_)
    if (q && (q->context().send_cq == cq || q->context().recv_cq == cq))
      return make_error(EBUSY, "CQ still used by QP " + std::to_string(q->qpn()));
  const auto it = std::find_if(cqs_.begin(), cqs_.end(), [cq](const auto& p) { return p.get() == cq; });
  if (it == cqs_.end()) return make_error(EINVAL, "unknown CQ");
  cqs_.erase(it);
  return {};
}

Result<QueuePair*> Engine::create_qp(PdHandle pd, const QpInit& attr) {
  if (attr.type != IBV_QPT_RC && attr.type != IBV_QPT_UC && attr.type != IBV_QPT_UD)
    return make_error(EINVAL, "QP type must be RC, UC or UD");
  if (!mrs_.pd_exists(pd)) return make_error(EINVAL, "unknown protection domain");
  if (attr.send_cq == nullptr || attr.recv_cq == nullptr) return make_error(EINVAL, "send_cq and recv_cq are required");
  if (attr.srq && !owns_srq(attr.srq)) return make_error(EINVAL, "unknown shared receive queue");
  ibv_qp_cap c = attr.cap;
  if (attr.srq) c.max_recv_wr = c.max_recv_sge = 0;  // as ibv_create_qp: ignored with an SRQ
  if (c.max_send_wr == 0) return make_error(EINVAL, "max_send_wr must be at least 1");
  if (c.max_send_wr > cfg_.max_qp_wr || c.max_recv_wr > cfg_.max_qp_wr) {
    hit(EngineLimit::QueueCaps);
    return make_error(EINVAL, "max_send_wr/max_recv_wr must be 1.." + std::to_string(cfg_.max_qp_wr));
  }
  if (c.max_send_sge > cfg_.max_sge || c.max_recv_sge > cfg_.max_sge) {
    hit(EngineLimit::QueueCaps);
    return make_error(EINVAL, "max_send_sge/max_recv_sge above " + std::to_string(cfg_.max_sge));
  }
  if (c.max_inline_data > cfg_.max_inline) {
    hit(EngineLimit::QueueCaps);
    return make_error(EINVAL, "max_inline_data above " + std::to_string(cfg_.max_inline));
  }
  const auto slot_it = std::find(qps_.begin(), qps_.end(), nullptr);
  if (slot_it == qps_.end()) {
    hit(EngineLimit::Qps);
    return make_error(ENOMEM, "QP limit reached (max_qps " + std::to_string(cfg_.max_qps) + ")");
  }
  const auto slot = static_cast<std::uint32_t>(slot_it - qps_.begin());
  QpConfig qc;
  qc.type = attr.type;
  const std::uint64_t qpn = cfg_.qpns.qpn(cfg_.shard, slot);
  if (qpn > kPsnMask) return make_error(ENOMEM, "QPN space exhausted");
  qc.qpn = static_cast<std::uint32_t>(qpn);
  qc.pd = pd;
  qc.sq_sig_all = attr.sq_sig_all;
  qc.cap = c;
  qc.cap.max_recv_wr = std::max<std::uint32_t>(c.max_recv_wr, 1);
  if (qc.type == IBV_QPT_UD) qc.pmtu = cfg_.ud_mtu;
  *slot_it = std::make_unique<QueuePair>(qc, &cfg_.tuning, &mrs_, attr.send_cq, attr.recv_cq);
  (*slot_it)->slot = slot;
  if (cfg_.match_flows) flow_templates_[slot] = std::make_unique<FlowTemplates>();
  (*slot_it)->use_icrc_cache(icrc_cache_.get());
  (*slot_it)->use_stall_clock(&own_stall_);
  (*slot_it)->use_reorder_pool(reorder_pool_.get());
  if (attr.srq) {
    (*slot_it)->attach_srq(attr.srq);
    ++attr.srq->attached_qps;
  }
  return slot_it->get();
}

Status Engine::destroy_qp(QueuePair* qp) {
  if (qp == nullptr || qp->slot >= qps_.size() || qps_[qp->slot].get() != qp) return make_error(EINVAL, "unknown QP");
  qp->end_receive_run();  // a burst left open: its counters settled before they are kept
  retired_.add(qp->counters());
  timers_.remove(qp->slot);
  if (unrefreshed_ == qp) {
    unrefreshed_ = nullptr;
    unrefreshed_timers_ = false;
    stop_straight_run();
  }
  qp->share_window(nullptr);  // no longer among the path's sharers
  // Drop it from the active ring.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < active_count_; ++i) {
    const std::uint32_t s = active_[(active_head_ + i) % active_.size()];
    if (s != qp->slot) active_[(active_head_ + kept++) % active_.size()] = s;
  }
  active_count_ = kept;
  held_acks_[qp->slot] = HeldAck{};
  if (qp->srq()) --qp->srq()->attached_qps;
  flow_templates_[qp->slot].reset();
  qps_[qp->slot].reset();
  return {};
}

Status Engine::modify_qp(QueuePair* qp, const ibv_qp_attr& attr, int mask) {
  if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > cfg_.max_rd_atomic) ||
      ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > cfg_.max_rd_atomic)) {
    hit(EngineLimit::RdAtomic);
    return make_error(EINVAL, "max_rd_atomic/max_dest_rd_atomic above " + std::to_string(cfg_.max_rd_atomic) +
                                  " outstanding READ/atomic requests");
  }
  stop_straight_run();  // (a control call ends a burst first; its P_Key or state may change)
  if (FlowTemplates* t = flow_templates_[qp->slot].get()) {  // (its path may change: learnt again)
    t->ack.suspend();
    t->write_only.suspend();
  }
  Status s = qp->modify(attr, mask, cfg_.path);
  if (s && qp->type() == IBV_QPT_RC && qp->state() == QpState::Rts && qp->shared_window() == nullptr)
    qp->share_window(path_window(*qp));
  refresh(*qp);
  return s;
}

Result<AddressHandle*> Engine::create_ah(PdHandle pd, const ibv_ah_attr& attr) {
  if (!attr.is_global) return make_error(EINVAL, "RoCE address handles need is_global and grh.dgid");
  const IpAddress peer = ip_from_gid(attr.grh.dgid);
  if (peer.version != cfg_.path.local.ip.version)
    return make_error(EINVAL, "peer " + to_string(peer) + " is not of the local address family");
  std::optional<MacAddr> mac = cfg_.path.resolve_mac ? cfg_.path.resolve_mac(peer) : std::nullopt;
  if (!mac) return make_error(EHOSTUNREACH, "no MAC address known for peer " + to_string(peer));
  auto ah = std::make_unique<AddressHandle>();
  ah->pd = pd;
  ah->dest.mac = *mac;
  ah->dest.ipv6 = peer.version == IpVersion::V6;
  ah->dest.ipv4 = peer.v4;
  ah->dest.ipv6_addr = peer.v6;
  ah->dest.traffic_class = attr.grh.traffic_class;
  ah->dest.flow_label = attr.grh.flow_label & 0xFFFFF;
  ahs_.push_back(std::move(ah));
  return ahs_.back().get();
}

Status Engine::destroy_ah(AddressHandle* ah) {
  const auto it = std::find_if(ahs_.begin(), ahs_.end(), [ah](const auto& p) { return p.get() == ah; });
  if (it == ahs_.end()) return make_error(EINVAL, "unknown address handle");
  ahs_.erase(it);
  return {};
}

int Engine::post_send(QueuePair* qp, const ibv_send_wr* wr, ibv_send_wr** bad) {
  const int rc = qp->post_send(wr, bad);
  if (rc == ENOMEM) hit(EngineLimit::SendQueueFull);
  // refresh() but for the timer: a post moves none of the QP's deadlines (the completer's
  // timers, the pacer, congestion control), only its send work and its share of the window.
  // Setting the same deadline again was about 60 instructions a post.
  qp->sync_window_share();
  refresh_requests(*qp);
  return rc;
}

int Engine::post_recv(QueuePair* qp, const ibv_recv_wr* wr, ibv_recv_wr** bad) {
  const int rc = qp->post_recv(wr, bad);
  if (rc == ENOMEM) hit(EngineLimit::RecvQueueFull);
  refresh(*qp);
  return rc;
}

QueuePair* Engine::find_qp(std::uint32_t qpn) const {
  const auto slot = cfg_.qpns.slot(cfg_.shard, qpn);
  return slot && *slot < qps_.size() ? qps_[*slot].get() : nullptr;
}

void Engine::activate(QueuePair& qp) {
  if (qp.in_active_list) return;
  qp.in_active_list = true;
  active_[ring_slot(active_head_ + active_count_)] = qp.slot;
  ++active_count_;
}

SendWindow* Engine::path_window(const QueuePair& qp) {
  const proto::FrameSpec& p = qp.context().path;
  const IpAddress peer = p.ip_version == IpVersion::V6 ? IpAddress::ipv6(p.ipv6.dst) : IpAddress::ipv4(p.ipv4.dst);
  // Selective repeat QPs have a window of their own kind (congestion losses only).
  const bool selective = qp.context().cfg.selective_repeat != 0;
  for (PathWindow& w : path_windows_)
    if (w.peer == peer && w.window->selective() == selective) return w.window.get();
  auto w = std::make_unique<SendWindow>();
  const TransportTuning& t = cfg_.tuning;
  double static_cap = t.max_inflight_packets;
  if (t.max_inflight_bytes != 0)
    static_cap = std::min(static_cap, std::max(1.0, static_cast<double>(t.max_inflight_bytes / qp.config().pmtu)));
  w->start(t.window, static_cap, t.congestion.enabled, selective);
  path_windows_.push_back(PathWindow{peer, std::move(w)});
  return path_windows_.back().window.get();
}

void Engine::refresh(QueuePair& qp, bool idle) {
  // `idle`: the caller has just found no send work; of what a refresh does, only a change of the
  // window's sharers could change that (the window's limit), so has_tx_work is not asked again.
  if (qp.sync_window_share() || !idle) refresh_requests(qp);
  // TimerHeap::set is inline: a QP that never has a timer (a responder's that only sends ACKs)
  // or whose deadline stays is a test or two after each of its turns.
  timers_.set(qp.slot, qp.deadline());
}

namespace {

// The BTH's first 8 bytes as one word, the flags byte (SE | M | PadCnt | TVer) masked out: the
// pad count differs with the payload's length; the others are no test of the run's.
static_assert(offsetof(Bth, pkey) == 2 && offsetof(Bth, resv8a) == 4 && offsetof(Bth, dest_qp) == 5 && sizeof(Bth) == 12);
// Byte `at` of the word (memcpy'd from the header) holding `v`.
constexpr std::uint64_t bth_byte(unsigned at, std::uint64_t v) {
  return std::endian::native == std::endian::little ? v << (8 * at) : v << (56 - 8 * at);
}
constexpr std::uint64_t kBthFlagsMask = ~bth_byte(1, 0xFF);
[[gnu::always_inline]] inline std::uint64_t masked_bth(const Bth& bth) {
  std::uint64_t w;
  std::memcpy(&w, &bth, sizeof w);
  return w & kBthFlagsMask;
}

}  // namespace

// Set by a frame that continued the run (receive_checked). The frame's QPN is the QP's (a run's
// frames have its QPN), its P_Key one the QP accepted (checked before on_packet and in
// receive_in_run); its opcode becomes RC WRITE ONLY, the reserved byte clear.
[[gnu::always_inline]] inline std::uint64_t Engine::straight_bth(const QueuePair& qp, const Packet& pkt) {
  if (qp.type() != IBV_QPT_RC || !qp.context().accepts_requests() || qp.qpn() == kGsiQpn) return kNoStraightRun;
  return (masked_bth(pkt.bth) & ~(bth_byte(0, 0xFF) | bth_byte(4, 0xFF))) | bth_byte(0, raw(Opcode::RcWriteOnly));
}

// straight_bth_ for the run's next WRITE ONLYs, and the template of their bytes from the frame
// that set it: the run's flow (its addresses, ports, TOS, TTL, P_Key, QPN), so that a frame that
// matches it is one `straight` passes (its BTH the one straight_bth_ expects, no CE mark, no IPv4
// options, for us as this frame was) and parse_frame accepts with a good ICRC. Set at most once a
// burst for a run (its second frame; again after a frame the straight path left to
// receive_checked), where a new flow's CRC state is computed (WriteOnlyTemplate::set).
inline void Engine::start_straight_run(const QueuePair& qp, ByteSpan frame, const Packet& pkt, bool of_flow) {
  straight_bth_ = straight_bth(qp, pkt);
  // A run of large frames (4 KiB WRITEs come here frame after frame: none passes `straight`) has
  // nothing the template could match: no call.
  if (straight_bth_ == kNoStraightRun || pkt.payload_length > proto::kWriteOnlyMatchMaxPayload) {
    run_template_.suspend();
    return;
  }
  // A WRITE ONLY of the flow the QP's template holds, with the reserved byte clear: that
  // template's image is the one set() would make of this frame (opcode RC WRITE ONLY, the
  // reserved byte clear, the same options), taken as it is, with its flow's CRC state (16 QPs
  // taking turns each set a flow's state again; section 87).
  const FlowTemplates* t = flow_templates_[qp.slot].get();
  if (of_flow && t != nullptr && pkt.bth.opcode == raw(Opcode::RcWriteOnly) && pkt.bth.resv8a == 0) {
    run_template_.adopt(t->write_only.image());
    return;
  }
  if (!run_template_.set(frame, pkt, parse_opts_)) run_template_.suspend();
}

inline bool Engine::for_us(const Packet& pkt) const {
  const IpAddress& me = cfg_.path.local.ip;
  return !cfg_.check_dest_ip ||
         (pkt.ip_version == me.version &&
          (me.version == IpVersion::V4 ? same_address(pkt.ipv4.dst, me.v4) : same_address(pkt.ipv6.dst, me.v6)));
}

// A frame every check of receive_checked would pass on its way to QueuePair::receive_in_run,
// found with fewer tests: the ICRC checked and good, the BTH the one straight_bth_ expects (this
// QP's run, in a burst, an RC WRITE ONLY under a P_Key it accepted, the QP taking requests), no
// CE mark, no IPv4 options, a good IPv4 checksum, for us. Any other frame takes receive_checked,
// which asks everything again in its own order, so the drops are counted as before.
inline bool Engine::straight(const Packet& pkt) const {
  if (masked_bth(pkt.bth) != straight_bth_ || pkt.icrc_status != IcrcStatus::Ok || pkt.ecn() == Ecn::Ce) return false;
  if (pkt.ip_version == IpVersion::V4 && (pkt.l4_offset - pkt.l3_offset != kIpv4HeaderBytes || !pkt.ipv4_checksum_ok))
    return false;
  return for_us(pkt);
}

// Every other frame, and one the run's straight path refused (`run_tried`: it was offered to
// receive_in_run already, which changed nothing). Inline, its one caller's: out of line it was a
// second prologue and call, about 30 instructions a frame at queue depth 1, where no frame
// continues a run.
[[gnu::always_inline]] inline void Engine::receive_checked(ByteSpan frame, Nanos now, Packet& pkt, ParseError err, bool run_tried,
                                                          bool matched) {
  const ParseOptions& opts = parse_opts_;
  // Our selective acknowledgement (protocol/sack.hpp): only a QP that agreed to selective
  // repeat takes one; for any other it stays the unknown opcode it is.
  if (err == ParseError::UnknownOpcode && pkt.bth.opcode == kSackOpcode) {
    const QueuePair* q = find_qp(pkt.dest_qp());
    if (q != nullptr && q->selective_repeat()) err = parse_sack(frame, opts, pkt);
  }
  if (err != ParseError::None) {
    ++parse_drops_[static_cast<std::size_t>(err)];
    return;
  }
  // A packet dropped here has its deferred ICRC settled first, so a corrupted packet is counted
  // as corrupted whatever else it would fail.
  const auto corrupted = [&] {
    if (pkt.icrc_status != IcrcStatus::Deferred || settle_icrc(pkt, opts.crc)) return false;
    ++drops_[static_cast<std::size_t>(EngineDrop::IcrcBad)];
    return true;
  };
  const auto drop = [&](EngineDrop d) {
    if (!corrupted()) ++drops_[static_cast<std::size_t>(d)];
  };
  // IPv4 options: no RoCEv2 sender uses them and the parser leaves the ICRC of such a packet
  // unchecked (IcrcStatus::NotCheckable); it is dropped and counted as what it is, not as corrupted.
  if (pkt.ip_version == IpVersion::V4 && pkt.l4_offset - pkt.l3_offset != kIpv4HeaderBytes) {
    ++drops_[static_cast<std::size_t>(EngineDrop::Ipv4Options)];
    return;
  }
  if (pkt.icrc_status != IcrcStatus::Ok && pkt.icrc_status != IcrcStatus::Deferred) {
    ++drops_[static_cast<std::size_t>(EngineDrop::IcrcBad)];
    return;
  }
  if (pkt.ip_version == IpVersion::V4 && !pkt.ipv4_checksum_ok) return drop(EngineDrop::Ipv4ChecksumBad);
  if (!for_us(pkt)) return drop(EngineDrop::NotForUs);
  // QP1 is no data QP: its MADs go to the CM agent (GsiPort counts what it refuses).
  if (pkt.dest_qp() == kGsiQpn && gsi_.attached()) {
    refresh_deferred();
    if (!corrupted()) gsi_.on_packet(pkt, frame);
    return;
  }
  // A run of one QP's frames in a burst: the QP looked up once, refreshed once at the run's end
  // (a refresh per 64 B WRITE was 108 instructions of about 4200 a message; docs/perf-changes.md
  // section 35), and its responder's checks of the QP itself made once (section 41).
  const bool continues_run = unrefreshed_ != nullptr && unrefreshed_->qpn() == pkt.dest_qp();
  // A WRITE the run takes whole needs nothing else here: it is a request (no timer moves), has
  // no CE mark and leaves the QP's state alone, so the QP stays the burst's unrefreshed one as
  // it is (docs/perf-changes.md section 50). in_burst_: a frame outside a burst is refreshed at
  // once, so none continues a run; asked anyway, as the rule below is the burst's. A frame whose
  // ICRC the parser deferred (1 KiB payloads and more) is the walk's: not offered (4 KiB: 65
  // instructions a packet when it was).
  if (!run_tried && continues_run && in_burst_ && pkt.icrc_status != IcrcStatus::Deferred && unrefreshed_->receive_in_run(pkt)) {
    // the run's next WRITE ONLYs: Engine::straight
    start_straight_run(*unrefreshed_, frame, pkt, matched || learn_flow(*unrefreshed_, frame, pkt));
    return;
  }
  QueuePair* qp = continues_run ? unrefreshed_ : find_qp(pkt.dest_qp());
  if (qp == nullptr) return drop(EngineDrop::UnknownQp);
  if (!continues_run) refresh_deferred();
  const Transport t = pkt.info->transport;
  if (t == Transport::Cnp) {
    qp->on_cnp(now);
    refresh(*qp);
    return;
  }
  // CNPs carry the default P_Key whatever the QP's partition (as ConnectX sends them), so only
  // transport packets are checked.
  if (!pkey_matches(pkt.bth.pkey.get(), qp->context().cfg.pkey)) return drop(EngineDrop::PkeyMismatch);
  const bool match = (t == Transport::Rc && qp->type() == IBV_QPT_RC) || (t == Transport::Uc && qp->type() == IBV_QPT_UC) ||
                     (t == Transport::Ud && qp->type() == IBV_QPT_UD);
  if (!match) return drop(EngineDrop::WrongTransport);
  const QpState before = qp->state();
  bool of_flow = matched;
  if (!qp->on_packet(pkt, frame, now, continues_run)) ++drops_[static_cast<std::size_t>(EngineDrop::IcrcBad)];
  else if (!matched) of_flow = learn_flow(*qp, frame, pkt);
  // A request moves none of the QP's timers (the completer's, the pacer's; congestion control's
  // only on a CE mark) and leaves its send queue alone, unless it put the QP in error: only what
  // the responder now owes is new. The deferred refresh (section 35) still comes once per frame
  // when QPs take turns frame by frame, as 16 QPs do (docs/perf-changes.md section 36).
  const bool timers_may_move = !pkt.info->is_request || pkt.ecn() == Ecn::Ce || qp->state() != before;
  unrefreshed_ = qp;
  // Only a run's second frame on sets it (a new run's first was reset by refresh_deferred): at
  // queue depth 1 no frame continues a run, and none pays for it.
  if (continues_run) start_straight_run(*qp, frame, pkt, of_flow);
  unrefreshed_timers_ = unrefreshed_timers_ || timers_may_move;
  if (!in_burst_) refresh_deferred();
}

// The frame's QP's template of its opcode (an RC ACKNOWLEDGE or RC WRITE ONLY; the QPN and opcode
// read where an untagged IPv4 frame has them: any other frame's bytes then fail the image's
// compare), and the Packet it makes.
[[gnu::always_inline]] inline bool Engine::match_flow(ByteSpan frame, Packet& pkt) const {
  namespace wo = write_only_frame;
  if (frame.size() < wo::kCompared) return false;
  Be24 qpn;
  std::memcpy(&qpn, frame.data() + wo::kBth + offsetof(Bth, dest_qp), sizeof qpn);
  const FlowTemplates* t = flow_templates(qpn.get());
  if (t == nullptr) return false;
  const auto opcode = static_cast<std::uint8_t>(frame[wo::kBth + offsetof(Bth, opcode)]);
  return (opcode == raw(Opcode::RcAck) ? t->ack : t->write_only).match(frame, pkt);
}

// A frame parse_frame accepted and `qp` took (every check of receive_checked passed: for us,
// its P_Key, its transport) that its template could have matched (an RC ACKNOWLEDGE or RC WRITE
// ONLY with a good ICRC) but did not: its flow is the QP's now (the first of the flow, or the
// flow changed). A frame of a flow it refuses (a CE mark, VLAN, IPv6, a payload above
// kWriteOnlyMatchMaxPayload) leaves the template suspended. Whether the template holds the
// frame's flow now.
inline bool Engine::learn_flow(const QueuePair& qp, ByteSpan frame, const Packet& pkt) {
  const bool ack = pkt.bth.opcode == raw(Opcode::RcAck);
  if ((!ack && pkt.bth.opcode != raw(Opcode::RcWriteOnly)) || pkt.icrc_status != IcrcStatus::Ok) return false;
  FlowTemplates* t = flow_templates_[qp.slot].get();
  return t != nullptr && (ack ? t->ack : t->write_only).learn(frame, pkt, parse_opts_);
}

[[gnu::always_inline]] inline void Engine::receive_inline(ByteSpan frame, Nanos now) {
  ++received_;
  // parse_frame resets the packet from a constant first; `Packet pkt;` zeroed it as well (rep
  // stos over 300 bytes, a third of this function's samples; docs/perf-changes.md section 31).
  // An array of bytes implicitly creates the (implicit-lifetime, trivially copyable) Packet.
  static_assert(std::is_trivially_copyable_v<Packet> && std::is_aggregate_v<Packet>);
  // A WRITE ONLY of the run's flow that its template matches (the header bytes the run's frames
  // share, the lengths, the IPv4 checksum and the ICRC from the flow's CRC state) needs no parse:
  // it is a frame `straight` below would pass. The run takes it, or leaves it (nothing changed) to
  // the parse and the tests below, which find the same answer as without the match
  // (docs/perf-changes.md section 82). An active template has the run's QP in unrefreshed_.
  MatchedWriteOnly in_run;
  if (run_template_.match(frame, in_run) && unrefreshed_->receive_write_only_in_run(in_run)) return;
  alignas(Packet) std::byte storage[sizeof(Packet)];
  Packet& pkt = *std::launder(reinterpret_cast<Packet*>(storage));
  // An ACK or WRITE ONLY of a flow a QP learnt: the Packet parse_frame would make, from the
  // flow's image (docs/perf-changes.md section 87). Every other frame is parsed.
  ParseError err = ParseError::None;
  const bool matched = match_flow(frame, pkt);
  if (matched) {
    ++flow_matched_;
  } else {
    ++parsed_;
    err = parse_frame(frame, parse_opts_, pkt);
  }
  // A WRITE ONLY that continues a run with nothing else to check (most frames of a burst of
  // 64 B WRITEs): the run takes it here, without the walk's tests (docs/perf-changes.md section 75).
  const bool run_tried = err == ParseError::None && straight(pkt);
  if (run_tried && unrefreshed_->receive_write_only_in_run(pkt)) return;
  receive_checked(frame, now, pkt, err, run_tried, matched);
}

void Engine::receive(ByteSpan frame, Nanos now) { receive_inline(frame, now); }

namespace {

constexpr std::size_t kLine = 64;

// What a frame's first reads need, a few frames ahead of its turn: its first two lines (the
// headers; a WRITE's RETH straddles the first line's end) and its last (the ICRC, which the
// parser reads before the payload).
[[gnu::always_inline]] inline void prefetch_head(ByteSpan f) {
  const std::byte* p = f.data();
  __builtin_prefetch(p);
  if (f.size() > kLine) __builtin_prefetch(p + kLine);
  if (f.size() > 2 * kLine) __builtin_prefetch(p + f.size() - 1);
}

// The lines after the first two, one frame ahead: the ICRC's check reads every byte before the
// payload is placed. Only as far as a frame whose ICRC the parser checks whole reaches: a longer
// one's payload is read by the copy that places it, which asks for its own lines (crc32_copy;
// docs/perf-changes.md section 91).
[[gnu::always_inline]] inline void prefetch_rest(ByteSpan f) {
  if (f.size() <= 2 * kLine) return;
  const std::byte* p = f.data();
  __builtin_prefetch(p + 2 * kLine);
  const std::size_t upto = std::min<std::size_t>(f.size(), kDeferIcrcFrom + 2 * kLine);
  for (std::size_t at = 3 * kLine; at < upto; at += kLine) __builtin_prefetch(p + at);
}

// An Ethernet frame carrying IPv4 (no VLAN tag): the engine's without a look by the caller.
[[gnu::always_inline]] inline bool ipv4_ethernet(ByteSpan f) {
  return f.size() >= sizeof(EthernetHeader) && load_header<EthernetHeader>(f, 0).ether_type.get() == kEtherTypeIpv4;
}

}  // namespace

// The worker's per-frame loop had these prefetches (dataplane/worker.cpp, prefetch_head and
// prefetch_rest: the same distances); here they come without a call into the engine per frame.
std::size_t Engine::receive_frames(std::span<const ByteSpan> frames, Nanos now) {
  constexpr std::size_t kAhead = 3;
  const std::size_t n = frames.size();
  for (std::size_t i = 0; i < n && i < kAhead; ++i) prefetch_head(frames[i]);
  if (n != 0) prefetch_rest(frames[0]);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) prefetch_head(frames[i + kAhead]);
    if (i + 1 < n) prefetch_rest(frames[i + 1]);
    const ByteSpan f = frames[i];
    if (!ipv4_ethernet(f)) return i;
    receive_inline(f, now);
  }
  return n;
}

// Whether QueuePair::build_run would surely build nothing and change nothing: the WQE under the
// requester's cursor is not one Requester::run_fits takes (a message already under way, its
// first packet sent or a go-back-N rewind into it, or one longer than a packet) and has a packet
// left, so Requester::skip_sent stops at it without moving the cursor. build_run would then take
// its early checks and run_room (neither changes anything), find that WQE unfit at once, and
// seal an empty batch. false: perhaps a run. The length is asked first: a WQE of one packet not
// yet started (every post at queue depth 1) is two compares.
// Inlined into transmit by the compiler (a call would cost as much as the test at queue depth
// 1); the declared function below is its copy for tests. Not always_inline: that code came out
// 16 bytes longer and pushed transmit, and every hot function after it, one line further
// (docs/perf-changes.md section 89: the round trip read 30 ns slower for it).
namespace {
bool no_run_at(const QueuePair& qp) {
  const QpContext& c = qp.context();
  const std::uint64_t at = qp.requester().cursor();
  if (at >= c.sq.tail()) return false;
  const SendWqe& w = c.sq.at(at);
  if (w.length <= c.cfg.pmtu && w.state == WqeState::Posted) return false;
  // Requester::all_sent (private): a WQE with nothing left to send is passed over by skip_sent.
  return !(w.state == WqeState::Done || (w.state == WqeState::InFlight && w.next_packet >= w.npackets));
}
}  // namespace

bool no_run_at_cursor(const QueuePair& qp) { return no_run_at(qp); }

std::size_t Engine::transmit(std::span<TxFrame> frames, Nanos now, Nanos busy_iteration) {
  refresh_deferred();  // a caller that left a burst open
  std::size_t n = 0;
  // MADs first: a handful per connection set-up, and the CM's timers are the peer's too.
  while (n < frames.size() && gsi_.has_tx_work()) {
    frames[n].length = 0;
    if (gsi_.build_next(frames[n], cfg_.path.local, cfg_.path.ttl)) ++n;
  }
  held_now_.clear();
  // hold_ack's answer without a gap or a hold (every call at queue depth 1): no, and the slot's
  // count starts again; no call.
  const bool may_hold = busy_iteration != kNever && cfg_.tuning.ack_hold.turns != 0;
  while (n < frames.size() && active_count_ > 0) {
    const std::uint32_t slot = active_[active_head_];
    active_head_ = ring_slot(active_head_ + 1);
    --active_count_;
    QueuePair& qp = *qps_[slot];
    if (!may_hold) {
      held_acks_[slot] = HeldAck{};
    } else if (hold_ack(slot, qp, now, busy_iteration)) {
      held_now_.push_back(slot);  // stays marked active: back in the ring below
      continue;
    }
    qp.in_active_list = false;
    bool idle = false;  // the turn ended with nothing left to send (end_send_turn does not change that)
    // A run of frames may apply (QueuePair::build_run): tried until one does not. Not with
    // responses owed (a responder's ACK at every round trip): build_run would refuse at once.
    // Nor when the WQE under the requester's cursor is one no run takes (no_run_at_cursor):
    // every turn of a multi-packet message (the loss rig's 64 KiB WRITEs) paid the run's room
    // and its walk, about 210 instructions, to be told so.
    bool run = !qp.responder().has_output() && !no_run_at(qp);
    const std::uint32_t limit = std::min(qp.begin_turn(), cfg_.tuning.tx_quantum);
    for (std::uint32_t k = 0; k < limit && n < frames.size(); ++k) {
      if (run) {
        const std::size_t room = std::min<std::size_t>(frames.size() - n, limit - k);
        if (const std::size_t got = qp.build_run(frames.subspan(n, room), now); got != 0) {
          n += got;
          k += static_cast<std::uint32_t>(got - 1);
          idle = qp.nothing_left();
          if (idle) break;
          continue;
        }
        run = false;
      }
      frames[n].length = 0;
      if (!qp.build_next(frames[n], now)) {
        idle = !qp.has_tx_work();
        if (idle) break;
        continue;  // a WQE finished without a packet (local error); look again
      }
      ++n;
      // The frame was the last the QP had: no build_next to find that out (at queue depth 1,
      // after every request and every ACK).
      idle = qp.nothing_left();
      if (idle) break;
    }
    qp.end_send_turn(now);
    if (!idle && limit < cfg_.tuning.tx_quantum) {
      // Its turn was limited (split_small_window, bdp_cap_split): what is left goes in the next call, after
      // these frames are out.
      qp.sync_window_share();
      timers_.set(qp.slot, qp.deadline());
      qp.in_active_list = true;
      held_now_.push_back(slot);
      continue;
    }
    refresh(qp, idle);
  }
  for (const std::uint32_t slot : held_now_) {
    active_[ring_slot(active_head_ + active_count_)] = slot;
    ++active_count_;
  }
  return n;
}

// Whether the QP in `slot`, taken from the active ring, waits for a later call: only a plain
// ACK, while the caller's receive queue is busy, held fewer than ack_hold.turns calls, and only
// if the next call (`gap` from now: the caller's last iteration) falls within ack_hold.age of
// the first hold. An iteration is the unit of waiting: on a loaded host one can last 100 us or
// more, and holding for a single one would then delay the ACK that long. Anything else the QP
// has to send (a NAK, a response, a request, an answer to a duplicate) lets the ACK go with it
// at once.
bool Engine::hold_ack(std::uint32_t slot, const QueuePair& qp, Nanos now, Nanos gap) {
  HeldAck& h = held_acks_[slot];
  const AckHold& hold = cfg_.tuning.ack_hold;
  if (gap == kNever || hold.turns == 0 || !qp.only_plain_ack_pending()) {
    h = HeldAck{};
    return false;
  }
  if (h.turns == 0) h.since = now;
  if (h.turns >= hold.turns || gap >= hold.age || now - h.since >= hold.age - gap) {
    h = HeldAck{};
    return false;
  }
  ++h.turns;
  return true;
}

void Engine::advance(Nanos now) {
  refresh_deferred();
  while (!timers_.empty() && timers_.earliest() <= now) {
    const std::uint32_t slot = timers_.earliest_owner();
    QueuePair& qp = *qps_[slot];
    qp.on_timer(now);
    qp.sync_window_share();
    const Nanos next = qp.deadline();
    timers_.set(slot, next <= now ? kNever : next);  // a timer that cannot move forward must not spin
    if (qp.has_tx_work()) activate(qp);
  }
}

Counters Engine::total_counters() const {
  Counters c = retired_;
  for (const auto& q : qps_)
    if (q) c.add(q->counters());
  return c;
}

std::string to_string(EngineDrop d) {
  switch (d) {
    case EngineDrop::IcrcBad: return "icrc_bad";
    case EngineDrop::UnknownQp: return "unknown_qp";
    case EngineDrop::NotForUs: return "not_for_us";
    case EngineDrop::WrongTransport: return "wrong_transport";
    case EngineDrop::Ipv4ChecksumBad: return "ipv4_checksum_bad";
    case EngineDrop::PkeyMismatch: return "pkey_mismatch";
    case EngineDrop::Ipv4Options: return "ipv4_options";
    case EngineDrop::Count: break;
  }
  return "unknown";
}

std::string to_string(EngineLimit l) {
  switch (l) {
    case EngineLimit::Qps: return "max_qps";
    case EngineLimit::QueueCaps: return "queue_caps";
    case EngineLimit::RdAtomic: return "max_rd_atomic";
    case EngineLimit::SendQueueFull: return "send_queue_full";
    case EngineLimit::RecvQueueFull: return "recv_queue_full";
    case EngineLimit::Count: break;
  }
  return "unknown";
}

}  // namespace roce::rdma
