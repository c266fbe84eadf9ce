#include "lib/rdma/queue_pair.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "lib/rdma/send_wr_rules.hpp"
#include "protocol/icrc_deferred.hpp"
#include "protocol/mtu.hpp"
#include "protocol/psn.hpp"
#include "protocol/sack.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

constexpr std::uint32_t kMaxMessage = 1u << 31;  // a receive's capacity is capped here

}  // namespace

QueuePair::QueuePair(const QpConfig& cfg, const TransportTuning* tuning, MrTable* mrs, CompletionQueue* send_cq,
                     CompletionQueue* recv_cq) {
  ctx_.cfg = cfg;
  ctx_.tuning = tuning;
  ctx_.mrs = mrs;
  ctx_.send_cq = send_cq;
  ctx_.recv_cq = recv_cq;
  const ibv_qp_cap& cap = cfg.cap;
  ctx_.sq = WorkQueue<SendWqe>(cap.max_send_wr);
  ctx_.rq = WorkQueue<RecvWqe>(cap.max_recv_wr);
  // Per slot (WorkQueue::slots: the depth rounded up to a power of two).
  ctx_.send_segments.resize(std::size_t{ctx_.sq.slots()} * std::max<std::uint32_t>(cap.max_send_sge, 1));
  ctx_.recv_segments.resize(std::size_t{ctx_.rq.slots()} * std::max<std::uint32_t>(cap.max_recv_sge, 1));
  ctx_.inline_data.resize(std::size_t{ctx_.sq.slots()} * cap.max_inline_data);
  if (tuning->congestion.enabled && cfg.type != IBV_QPT_UD) cc_ = std::make_unique<QpCongestion>(tuning->congestion, 0);
}

void QueuePair::set_state(QpState s) { ctx_.state = s; }

void QueuePair::attach_srq(SharedReceiveQueue* srq) {
  ctx_.srq = srq;
  ctx_.srq_held_segs.assign(srq ? srq->max_sge() : 0, LocalSegment{});
}

void QueuePair::flush_receives() {
  // With an SRQ only the receive this QP holds is its own; the rest stay for the other QPs.
  if (ctx_.srq && ctx_.srq_holding) {
    ibv_wc wc{};
    wc.wr_id = ctx_.srq_held.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = ctx_.cfg.qpn;
    ctx_.counters.inc(Counter::WcErrors);
    if (ctx_.recv_cq) ctx_.recv_cq->push(wc);
    ctx_.srq_holding = false;
  }
  while (!ctx_.rq.empty()) {
    const RecvWqe& r = ctx_.rq.at(ctx_.rq.head());
    ibv_wc wc{};
    wc.wr_id = r.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = ctx_.cfg.qpn;
    ctx_.counters.inc(Counter::WcErrors);
    if (ctx_.recv_cq) ctx_.recv_cq->push(wc);
    ctx_.rq.pop();
  }
}

void QueuePair::enter_error() {
  // IBA 11.6.3: a QP on an SRQ that enters ERR raises IBV_EVENT_QP_LAST_WQE_REACHED once the
  // last receive it holds is flushed (below).
  if (ctx_.srq && ctx_.state != QpState::Err) last_wqe_reached_ = true;
  set_state(QpState::Err);
  comp_.flush(ctx_, req_);
  flush_receives();
  resp_.stop_reorder();  // held requests never run now: their chunks go back to the pool
}

Status QueuePair::build_path(const ibv_qp_attr& attr, const PathConfig& path) {
  FrameSpec& t = ctx_.path;
  ctx_.request_template.clear();  // until the new path is complete
  t = FrameSpec{};
  if (ack_frame_) ack_frame_->clear();  // until the path is whole
  t.eth.src = path.local.mac;
  t.ip_version = path.local.ip.version;
  t.ipv4.src = path.local.ip.v4;
  t.ipv6.src = path.local.ip.v6;
  t.ipv4.ttl = path.ttl;
  t.ipv6.hop_limit = path.ttl;
  t.bth.pkey.set(ctx_.cfg.pkey);
  std::uint32_t flow_label = 0;
  if (ctx_.cfg.type != IBV_QPT_UD) {
    if (!attr.ah_attr.is_global)
      return make_error(EINVAL, "RoCE needs a global address: set ah_attr.is_global and grh.dgid");
    const IpAddress peer = ip_from_gid(attr.ah_attr.grh.dgid);
    if (peer.version != path.local.ip.version)
      return make_error(EINVAL, "peer " + to_string(peer) + " is not of the local address family");
    std::optional<MacAddr> mac = path.resolve_mac ? path.resolve_mac(peer) : std::nullopt;
    if (!mac) return make_error(EHOSTUNREACH, "no MAC address known for peer " + to_string(peer));
    t.eth.dst = *mac;
    t.ipv4.dst = peer.v4;
    t.ipv6.dst = peer.v6;
    t.ipv4.tos = attr.ah_attr.grh.traffic_class;
    t.ipv6.traffic_class = attr.ah_attr.grh.traffic_class;
    flow_label = attr.ah_attr.grh.flow_label & 0xFFFFF;
    t.ipv6.flow_label = flow_label;
  }
  t.set_ecn(ctx_.tuning->data_ecn);
  t.bth.dest_qp.set(ctx_.cfg.dest_qpn);
  t.udp_src_port = udp_sport(path.sport_scheme, ctx_.cfg.qpn, ctx_.cfg.dest_qpn, flow_label);
  if (ctx_.cfg.type != IBV_QPT_UD && ctx_.tuning->request_template)
    ctx_.request_template.build(t, ctx_.tuning->crc, ctx_.tuning->icrc_linear);
  if (ctx_.is_rc() && ctx_.tuning->ack_template) {
    if (!ack_frame_) ack_frame_ = std::make_unique<proto::AckTemplate>();
    ack_frame_->build(t, ctx_.tuning->crc);
  }
  return {};
}

void QueuePair::apply(const ibv_qp_attr& a, int mask) {
  QpConfig& c = ctx_.cfg;
  if (mask & IBV_QP_ACCESS_FLAGS) c.access = static_cast<int>(a.qp_access_flags);
  if (mask & IBV_QP_QKEY) c.qkey = a.qkey;
  if (mask & IBV_QP_PATH_MTU) c.pmtu = mtu_bytes(static_cast<PathMtu>(a.path_mtu));
  if (mask & IBV_QP_DEST_QPN) c.dest_qpn = a.dest_qp_num & kPsnMask;
  if (mask & IBV_QP_RQ_PSN) c.rq_psn = a.rq_psn & kPsnMask;
  if (mask & IBV_QP_SQ_PSN) c.sq_psn = a.sq_psn & kPsnMask;
  if (mask & IBV_QP_TIMEOUT) c.timeout = a.timeout;
  if (mask & IBV_QP_RETRY_CNT) c.retry_cnt = a.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) c.rnr_retry = a.rnr_retry;
  if (mask & IBV_QP_MIN_RNR_TIMER) c.min_rnr_timer = a.min_rnr_timer;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) c.max_rd_atomic = a.max_rd_atomic;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) c.max_dest_rd_atomic = a.max_dest_rd_atomic;
}

Status QueuePair::set_selective_repeat(std::uint32_t window) {
  if (ctx_.cfg.type != IBV_QPT_RC) return make_error(EINVAL, "selective repeat is for RC QPs");
  if (ctx_.state != QpState::Reset && ctx_.state != QpState::Init)
    return make_error(EINVAL, "selective repeat is set before RTR, the QP is in " + to_string(ctx_.state));
  if (window != 0 && (window < 8 || window > proto::kSackSpan || !std::has_single_bit(window)))
    return make_error(EINVAL, "selective repeat window " + std::to_string(window) + " is not a power of two in 8.." +
                                  std::to_string(proto::kSackSpan));
  ctx_.cfg.selective_repeat = window;
  return {};
}

Status QueuePair::modify(const ibv_qp_attr& attr, int mask, const PathConfig& path) {
  const QpState cur = ctx_.state;
  if ((mask & IBV_QP_CUR_STATE) && from_ibv(attr.cur_qp_state) != cur)
    return make_error(EINVAL, "cur_qp_state is " + to_string(from_ibv(attr.cur_qp_state)) + " but the QP is in " +
                                  to_string(cur));
  const QpState to = (mask & IBV_QP_STATE) ? from_ibv(attr.qp_state) : cur;
  if (const TransitionCheck chk = check_transition(ctx_.cfg.type, cur, to, mask); !chk.ok)
    return make_error(EINVAL, "QP " + std::to_string(qpn()) + ": " + chk.reason);
  if ((mask & IBV_QP_PATH_MTU) && !mtu_from_enum(attr.path_mtu))
    return make_error(EINVAL, "path_mtu " + std::to_string(attr.path_mtu) + " is not an IBV_MTU_* value (1..5)");
  if ((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) return make_error(EINVAL, "timeout above 31");
  if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) return make_error(EINVAL, "retry_cnt above 7");
  if ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) return make_error(EINVAL, "rnr_retry above 7");
  if ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31) return make_error(EINVAL, "min_rnr_timer above 31");
  if ((mask & IBV_QP_PORT) && attr.port_num != 1) return make_error(EINVAL, "port_num must be 1");
  if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index != 0) return make_error(EINVAL, "pkey_index must be 0");
  if ((mask & IBV_QP_DEST_QPN) && attr.dest_qp_num > kPsnMask) return make_error(EINVAL, "dest_qp_num above 2^24");
  if ((mask & IBV_QP_ACCESS_FLAGS) &&
      (attr.qp_access_flags & ~static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                                     kAccessFlushGlobal | kAccessFlushPersistent)))
    return make_error(EINVAL, "unsupported qp_access_flags");

  const QpConfig saved = ctx_.cfg;
  apply(attr, mask);
  resp_.end_run(ctx_);
  resp_.forget_run();  // access flags or the path MTU may have changed
  if ((mask & IBV_QP_AV) || (to == QpState::Init && cur == QpState::Reset && ctx_.cfg.type == IBV_QPT_UD)) {
    if (Status s = build_path(attr, path); !s) {
      ctx_.cfg = saved;
      return s;
    }
  }
  if (to == cur) return {};
  switch (to) {
    case QpState::Reset:
      while (!ctx_.sq.empty()) ctx_.sq.pop();
      while (!ctx_.rq.empty()) ctx_.rq.pop();
      ctx_.srq_holding = false;
      resp_.clear_output();
      resp_.stop_reorder();
      if (window_joined_) comp_.window().leave();
      window_joined_ = false;
      req_ = Requester{};
      comp_ = Completer{};
      break;
    case QpState::Rtr: resp_.start(ctx_); break;
    case QpState::Rts:
      if (cur == QpState::Rtr) {
        req_.start(ctx_);
        comp_.share_window(shared_window_);
        comp_.start(ctx_);
        req_.use_window(&comp_.window());
      }
      break;
    case QpState::Err:
      enter_error();
      return {};
    default: break;
  }
  set_state(to);
  return {};
}

void QueuePair::query(ibv_qp_attr* a, ibv_qp_init_attr* init) const {
  const QpConfig& c = ctx_.cfg;
  if (a) {
    *a = ibv_qp_attr{};
    a->qp_state = to_ibv(ctx_.state);
    a->cur_qp_state = a->qp_state;
    a->path_mtu = static_cast<ibv_mtu>(*mtu_from_bytes(c.pmtu));
    a->qkey = c.qkey;
    a->rq_psn = resp_.expected_psn();
    a->sq_psn = req_.next_psn();
    a->dest_qp_num = c.dest_qpn;
    a->qp_access_flags = static_cast<unsigned>(c.access);
    a->cap = c.cap;
    a->timeout = c.timeout;
    a->retry_cnt = c.retry_cnt;
    a->rnr_retry = c.rnr_retry;
    a->min_rnr_timer = c.min_rnr_timer;
    a->max_rd_atomic = c.max_rd_atomic;
    a->max_dest_rd_atomic = c.max_dest_rd_atomic;
    a->port_num = 1;
    a->sq_draining = ctx_.state == QpState::Sqd && !req_.drained(ctx_);
  }
  if (init) {
    *init = ibv_qp_init_attr{};
    init->qp_type = c.type;
    init->cap = c.cap;
    init->sq_sig_all = c.sq_sig_all;
  }
}

int QueuePair::post_send(const ibv_send_wr* wr, ibv_send_wr** bad) {
  if (wr == nullptr) return 0;
  // What every WR of the list is checked against, read once: nothing a post does changes the
  // QP's state or configuration (the stores into the WQEs below would otherwise have the
  // compiler load them again per WR). Every check the verbs ABI asks of a WR stays per WR; its
  // opcode's are one row of send_wr_rules.hpp's table. A QP that does not send yet refuses the
  // list at its first WR, whatever the WR (as the per-WR test it was, whose first answer it was).
  const QpState s = ctx_.state;
  if (s == QpState::Reset || s == QpState::Init || s == QpState::Rtr) {
    if (bad) *bad = const_cast<ibv_send_wr*>(wr);
    return EINVAL;
  }
  const QpConfig& cfg = ctx_.cfg;
  const ibv_qp_type type = cfg.type;
  const std::uint8_t type_bit = send_wr_type_bit(type);
  const std::uint32_t max_sge = cfg.cap.max_send_sge;
  const SendWrLimits limits{cfg.cap.max_inline_data, cfg.pmtu, type == IBV_QPT_UD};
  const std::uint32_t seg_stride = std::max<std::uint32_t>(max_sge, 1);
  const PdHandle pd = cfg.pd;
  const bool sig_all = cfg.sq_sig_all;
  const bool flushing = s == QpState::Err;
  const MrTable& mrs = *ctx_.mrs;
  // The region the last SGE named, in this call or an earlier one (still_holds: not if it went
  // or its slot was registered again since). At queue depth 1 every post names the region the
  // last one did, and its look-up was a sixth of a lone post's instructions.
  LocalKeyCache& lkeys = post_lkeys_;
  if (!mrs.still_holds(lkeys)) lkeys = LocalKeyCache{};
  // A drained send queue (queue depth 1: every post) starts again at its first slot: the WQE and
  // its segments go where the last lone post wrote them, lines still in cache, instead of into
  // the next of a ring the post had left (64 WQEs of 176 bytes: four D1 write misses a
  // post, callgrind; docs/perf-changes.md section 83). The cursor stands at the tail of an empty
  // queue (retire moves it past every WQE it pops); only then.
  if (ctx_.sq.empty() && req_.cursor() == ctx_.sq.tail()) {
    ctx_.sq.restart_at_first_slot();
    req_.follow_restarted_queue(ctx_);
  }
  // The send queue's free slots, counted here: the queue's indices are read once, not again
  // after each WQE's stores. Only the flush of a QP in error (below) gives slots back.
  std::uint64_t room = ctx_.sq.depth() - ctx_.sq.size();
  for (; wr != nullptr; wr = wr->next) {
    const SendWrRule rule = send_wr_rule(*wr);
    int err = 0;
    if (room == 0) err = ENOMEM;
    else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > max_sge) err = EINVAL;
    else if ((rule.qp_types & type_bit) == 0) err = EINVAL;
    std::uint64_t total = 0;
    if (err == 0) {
      if (wr->num_sge == 1) total = wr->sg_list[0].length;
      else
        for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
      err = send_wr_error(*wr, rule, total, limits);
    }
    if (err) {
      if (bad) *bad = const_cast<ibv_send_wr*>(wr);
      return err;
    }

    const ibv_wr_opcode op = wr->opcode;  // a valid enumerator: its row took it
    std::uint32_t slot = 0;
    SendWqe& w = ctx_.sq.push(&slot);
    --room;
    // The fields every WQE has, and its progress as post_send leaves it (Posted, successful, no
    // READ/atomic credit: a QP reset pops WQEs without retiring them). Nothing else is reset:
    // the rest is written below for the opcodes that read it, or by start_wqe (a WQE's PSNs and
    // progress). A whole-WQE reset was about 150 bytes of copying per WR.
    w.wr_id = wr->wr_id;
    w.opcode = op;
    w.send_flags = wr->send_flags;
    w.signaled = sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    w.local_error = false;
    w.length = static_cast<std::uint32_t>(total);
    w.seg_begin = slot * seg_stride;
    // The immediate (a *_WITH_IMM) and the key to invalidate (a *_INV) share the WR's word
    // (a union in verbs.h): one copy serves both.
    w.imm_or_rkey = wr->imm_data;
    w.state = WqeState::Posted;
    w.status = IBV_WC_SUCCESS;
    w.rd_credit_held = false;
    if (rule.fields == SendWrRule::kRdmaFields) [[likely]] {
      w.remote_addr = wr->wr.rdma.remote_addr;
      w.rkey = wr->wr.rdma.rkey;
    } else if (rule.fields == SendWrRule::kFlushFields) {
      w.remote_addr = wr->wr.atomic.remote_addr;
      w.rkey = wr->wr.atomic.rkey;
      w.flush_length = static_cast<std::uint32_t>(wr->wr.atomic.compare_add);
      w.flush_feth = static_cast<std::uint8_t>(wr->wr.atomic.swap & 0x3F);
    } else if (rule.fields == SendWrRule::kBindFields) {
      const ibv_mw_bind_info& b = wr->bind_mw.bind_info;
      w.imm_or_rkey = wr->bind_mw.mw->rkey;
      w.rkey = wr->bind_mw.rkey;
      w.bind_mr_key = b.mr ? b.mr->lkey : 0;
      w.remote_addr = b.addr;
      w.bind_length = b.length;
      w.bind_access = static_cast<int>(b.mw_access_flags);
    } else {
      w.remote_addr = wr->wr.atomic.remote_addr;
      w.rkey = wr->wr.atomic.rkey;
      w.compare_add = wr->wr.atomic.compare_add;
      w.swap = wr->wr.atomic.swap;
    }
    if (limits.ud) {
      const auto* ah = reinterpret_cast<const AddressHandle*>(wr->wr.ud.ah);
      w.ud = ah->dest;
      w.ud.remote_qpn = wr->wr.ud.remote_qpn & kPsnMask;
      // IBA: a Q_Key with the high bit set means "use the QP's own Q_Key".
      w.ud.remote_qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ? cfg.qkey : wr->wr.ud.remote_qkey;
    }
    LocalSegment* segs = ctx_.send_segs(w);
    if ((wr->send_flags & IBV_SEND_INLINE) && op == IBV_WR_ATOMIC_WRITE) {
      std::uint32_t at = 0;
      auto* word = reinterpret_cast<std::byte*>(&w.swap);
      for (int i = 0; i < wr->num_sge; ++i) {
        std::memcpy(word + at, reinterpret_cast<const void*>(wr->sg_list[i].addr), wr->sg_list[i].length);
        at += wr->sg_list[i].length;
      }
      segs[0] = LocalSegment{word, 8};
      w.num_seg = 1;
    } else if (wr->send_flags & IBV_SEND_INLINE) {
      // Inline data is copied now; the caller's buffers are free once post_send returns.
      std::byte* buf = ctx_.inline_data.data() + std::size_t{slot} * limits.max_inline;
      std::uint32_t at = 0;
      for (int i = 0; i < wr->num_sge; ++i) {
        std::memcpy(buf + at, reinterpret_cast<const void*>(wr->sg_list[i].addr), wr->sg_list[i].length);
        at += wr->sg_list[i].length;
      }
      segs[0] = LocalSegment{buf, at};
      w.num_seg = 1;
    } else {
      // Reads and atomics write into local memory: they need IBV_ACCESS_LOCAL_WRITE.
      const int need = (rule.checks & SendWrRule::kWritesLocal) ? IBV_ACCESS_LOCAL_WRITE : 0;
      const auto translate = [&](const ibv_sge& g) {
        std::byte* p = nullptr;
        if (g.length && mrs.check_local(lkeys, g.lkey, pd, g.addr, g.length, need, &p) != AccessResult::Ok)
          w.local_error = true;
        return LocalSegment{p, g.length};
      };
      w.num_seg = static_cast<std::uint32_t>(wr->num_sge);
      if (wr->num_sge == 1) segs[0] = translate(wr->sg_list[0]);
      else
        for (int i = 0; i < wr->num_sge; ++i) segs[i] = translate(wr->sg_list[i]);
    }
    if (flushing) {
      w.state = WqeState::Done;
      w.status = IBV_WC_WR_FLUSH_ERR;
      comp_.retire(ctx_, req_);
      room = ctx_.sq.depth() - ctx_.sq.size();
    }
  }
  return 0;
}

int QueuePair::post_recv(const ibv_recv_wr* wr, ibv_recv_wr** bad) {
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (ctx_.state == QpState::Reset || ctx_.srq != nullptr) err = EINVAL;  // an SRQ QP takes ibv_post_srq_recv
    else if (ctx_.rq.full()) err = ENOMEM;
    else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > ctx_.cfg.cap.max_recv_sge) err = EINVAL;
    if (err) {
      if (bad) *bad = const_cast<ibv_recv_wr*>(wr);
      return err;
    }
    const std::uint64_t index = ctx_.rq.tail();
    RecvWqe& r = ctx_.rq.push();
    r = RecvWqe{};
    r.wr_id = wr->wr_id;
    r.seg_begin = ctx_.rq.slot_of(index) * std::max<std::uint32_t>(ctx_.cfg.cap.max_recv_sge, 1);
    r.num_seg = static_cast<std::uint32_t>(wr->num_sge);
    LocalSegment* segs = ctx_.recv_segs(r);
    std::uint64_t total = 0;
    for (int i = 0; i < wr->num_sge; ++i) {
      const ibv_sge& g = wr->sg_list[i];
      std::byte* p = nullptr;
      if (g.length && ctx_.mrs->check_local(g.lkey, ctx_.cfg.pd, g.addr, g.length, IBV_ACCESS_LOCAL_WRITE, &p) !=
                          AccessResult::Ok)
        r.local_error = true;
      segs[i] = LocalSegment{p, g.length};
      total += g.length;
    }
    r.length = static_cast<std::uint32_t>(std::min<std::uint64_t>(total, kMaxMessage));
    if (ctx_.state == QpState::Err) flush_receives();
  }
  return 0;
}

void QueuePair::after_completer(CompleterOutcome o) {
  if (o == CompleterOutcome::Fatal) [[unlikely]] {
    enter_error();
    return;
  }
  comp_.retire(ctx_, req_);
}

bool QueuePair::on_packet(const Packet& pkt, ByteSpan frame, Nanos now, bool continues_run) {
  const bool request = pkt.info->is_request;
  if (request ? !ctx_.accepts_requests() : !ctx_.is_rc() || !ctx_.sends_requests()) [[unlikely]] {
    if (pkt.icrc_status == IcrcStatus::Deferred && !settle_icrc(pkt, ctx_.tuning->crc)) return false;
    ctx_.counters.inc(Counter::RcvdPkts);
    ctx_.counters.inc(Counter::BadStateDrops);
    on_ecn(pkt, now);
    return true;
  }
  if (request) {
    const ResponderOutcome o = resp_.on_request(ctx_, pkt, frame, continues_run);
    if (o == ResponderOutcome::Corrupted) return false;
    ctx_.counters.inc(Counter::RcvdPkts);
    on_ecn(pkt, now);
    if (o == ResponderOutcome::Fatal) enter_error();
    return true;
  }
  // The QP's first frame in this burst is a response: requests after it continue the run
  // (receive_in_run), so the run starts again at the next request (begin_run renews the region
  // it kept from an earlier burst, as every worker iteration must: memory.hpp).
  if (!continues_run) resp_.forget_run();
  const CompleterOutcome o = comp_.on_response(ctx_, req_, pkt, now);
  if (o == CompleterOutcome::Corrupted) [[unlikely]]
    return false;
  ctx_.counters.inc(Counter::RcvdPkts);
  on_ecn(pkt, now);
  after_completer(o);
  return true;
}

PayloadDest QueuePair::payload_dest(const Packet& pkt) const {
  PayloadDest d;
  if (pkt.info->is_request) return ctx_.accepts_requests() ? resp_.destination(ctx_, pkt) : d;
  if (ctx_.is_rc() && ctx_.sends_requests()) comp_.read_destination(ctx_, pkt, &d);
  return d;
}

void QueuePair::on_ce_mark(const Packet& pkt, Nanos now) {
  ctx_.counters.inc(Counter::EcnCeReceived);
  if (cc_ && cc::triggers_cnp(pkt) && ctx_.accepts_requests() && cc_->on_ce(now)) cnp_pending_ = true;
}

void QueuePair::on_cnp(Nanos now) {
  ctx_.counters.inc(Counter::RcvdPkts);  // as sent_pkts counts the CNPs we send
  ctx_.counters.inc(Counter::CnpReceived);
  if (!cc_ || ctx_.state == QpState::Reset || ctx_.state == QpState::Err) {
    ctx_.counters.inc(Counter::CnpIgnored);  // no reaction point on this QP
    return;
  }
  cc_->on_cnp(now);
  repace(now);
}

void QueuePair::repace(Nanos now) {
  if (pacer_wake_ == kNever || !cc_) return;
  const Nanos t = cc_->earliest_departure(max_frame_bytes());
  pacer_wake_ = t <= now ? kNever : t;
}

bool QueuePair::has_tx_work() const {
  if (cnp_pending_) return true;
  if (pacer_wake_ != kNever) return false;
  return resp_.has_output() || req_.can_send(ctx_);
}

bool QueuePair::only_plain_ack_pending() const {
  return !cnp_pending_ && pacer_wake_ == kNever && resp_.only_plain_ack() && !req_.can_send(ctx_);
}

std::uint32_t QueuePair::max_frame_bytes() const {
  // Ethernet + IPv6 + UDP + BTH + the largest extension headers + ICRC, around one path MTU.
  return 14 + 8 + 40 + 8 + 12 + 28 + ctx_.cfg.pmtu + 4;
}

bool QueuePair::paced_out(Nanos now) {
  if (!cc_ || cc_->may_send(now, max_frame_bytes())) return false;
  pacer_wake_ = cc_->earliest_departure(max_frame_bytes());
  if (pacer_wake_ <= now) pacer_wake_ = now + 1;
  return true;
}

void QueuePair::share_window(SendWindow* w) {
  if (window_joined_) {
    comp_.window().leave();
    window_joined_ = false;
  }
  shared_window_ = w;
  comp_.share_window(w);
  req_.use_window(&comp_.window());
  sync_window_share();
}

void QueuePair::change_window_share(bool active) {
  window_joined_ = active;
  if (active) comp_.window().join(); else comp_.window().leave();
}

bool QueuePair::window_pace_due(Nanos now) const {
  const Nanos gap = comp_.window_spacing();
  return gap > 0 && last_request_at_ != kNever && now < last_request_at_ + gap;
}

bool QueuePair::build_cnp(TxFrame& frame) {
  cnp_pending_ = false;
  const FrameSpec& p = ctx_.path;
  cc::CnpEndpoints ep;
  ep.ip_version = p.ip_version;
  ep.src4 = p.ipv4.src;
  ep.dst4 = p.ipv4.dst;
  ep.src6 = p.ipv6.src;
  ep.dst6 = p.ipv6.dst;
  FrameSpec spec = cc::cnp_frame_spec(ep, ctx_.cfg.dest_qpn, ctx_.tuning->congestion.cnp);
  spec.with_ethernet = true;
  spec.eth.src = p.eth.src;
  spec.eth.dst = p.eth.dst;
  const FrameLayout l = build_frame(spec, {}, MutableByteSpan{frame.data, frame.capacity}, ctx_.tuning->crc);
  if (!l.ok()) {
    ctx_.counters.inc(Counter::SendErr);
    return false;
  }
  frame.length = static_cast<std::uint32_t>(l.length);
  ctx_.counters.inc(Counter::CnpSent);
  ctx_.counters.inc(Counter::SentPkts);
  return true;
}

bool QueuePair::build_next(TxFrame& frame, Nanos now) {
  if (cnp_pending_) return build_cnp(frame);
  if (pacer_wake_ != kNever) return false;
  // Responses first: they release the peer's requester.
  if (resp_.has_output()) {
    if (resp_.next_is_data() && paced_out(now)) return false;
    const bool data = resp_.next_is_data();
    const bool built = resp_.build_next(ctx_, frame, ack_frame_.get());
    if (resp_.take_fatal()) {
      enter_error();
      return built;
    }
    if (built && data && cc_) cc_->on_data_sent(now, frame.length);
    return built;
  }
  if (cc_ && req_.can_send(ctx_) && paced_out(now)) return false;
  // The spacing first: it is 0 unless the window is below one packet, and can_send walks the
  // send queue and the window's limit, which req_.build_next does again.
  if (ctx_.is_rc() && window_pace_due(now) && req_.can_send(ctx_)) {
    pacer_wake_ = last_request_at_ + comp_.window_spacing();
    return false;
  }
  bool local_error = false;
  const bool built = req_.build_next(ctx_, frame, &local_error);
  if (req_.take_local_done() && !local_error) comp_.retire(ctx_, req_);
  if (local_error) {
    ctx_.counters.inc(Counter::SendErr);
    enter_error();
    return false;
  }
  if (!built) return false;
  last_request_at_ = now;
  if (cc_) cc_->on_data_sent(now, frame.length);
  if (ctx_.is_rc()) comp_.on_request_sent(ctx_, req_, now);
  else comp_.retire(ctx_, req_);
  return frame.length != 0;
}

std::size_t QueuePair::build_run(std::span<TxFrame> frames, Nanos now) {
  // build_next's order: a CNP, the pacer, responses first; congestion control paces frame by
  // frame. A send window below one packet spaces requests (window_pace_due): one per call.
  if (!ctx_.tuning->tx_runs || cnp_pending_ || pacer_wake_ != kNever || resp_.has_output() || cc_ ||
      comp_.window_spacing() > 0)
    return 0;
  const std::size_t room = std::min<std::size_t>(frames.size(), req_.run_room(ctx_));
  if (room == 0) return 0;
  const std::uint32_t first = req_.next_psn();
  const std::size_t n = req_.build_run(ctx_, frames.first(room));
  if (req_.next_psn() != first) {  // n frames, and one more started whose frame failed (counted)
    last_request_at_ = now;
    // What on_request_sent would have done frame by frame: the first frame's sent end starts
    // the RTT sample, the last one's end is the ACK asked for.
    comp_.on_run_sent(ctx_, n != 0 ? psn_next(first) : req_.sent_end_psn(), req_.last_end_psn(), now);
  }
  req_.seal_run(ctx_);
  return n;
}

void QueuePair::on_timer(Nanos now) {
  if (ctx_.state == QpState::Err || ctx_.state == QpState::Reset) return;
  if (pacer_wake_ <= now) pacer_wake_ = kNever;
  if (cc_ && cc_->advance(now)) cnp_pending_ = true;
  repace(now);
  after_completer(comp_.on_timer(ctx_, req_, now));
}

}  // namespace roce::rdma
