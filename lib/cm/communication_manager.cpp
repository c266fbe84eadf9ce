#include "lib/cm/communication_manager.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>

#include "lib/cm/cm_format.hpp"
#include "lib/cm/cm_timing.hpp"
#include "protocol/cm_disconnect.hpp"

namespace roce::cm {

using namespace proto;

namespace {

constexpr std::size_t slot_of(const Mad& m) {
  const auto id = static_cast<std::uint16_t>(std::to_integer<unsigned>(m[16]) << 8 | std::to_integer<unsigned>(m[17]));
  return attribute_slot(static_cast<CmAttribute>(id));
}

template <std::size_t N>
std::vector<std::uint8_t> to_vector(const std::array<std::uint8_t, N>& a) {
  return {a.begin(), a.end()};
}

std::array<std::uint8_t, 8> guid_bytes(std::uint64_t guid) {
  std::array<std::uint8_t, 8> b{};
  Be64 be = Be64::of(guid);
  std::copy(be.bytes.begin(), be.bytes.end(), b.begin());
  return b;
}

Error invalid(std::string why) { return make_error(EINVAL, std::move(why)); }

bool is_request_method(const MadHeader& h) {
  return h.method() == MadMethod::Get || h.method() == MadMethod::Set;
}

}  // namespace

CommunicationManager::CommunicationManager(const CmConfig& config)
    : config_(config), id_operand_(config.id_seed * 0x9E3779B9u) {}

// ---------------------------------------------------------------------------------------------
// Bookkeeping

void CommunicationManager::set_state(Connection& c, CmState to) {
  assert(transition_allowed(c.state, to) && "CM state move outside the transition table");
  const bool was = is_half_open(c.state), will = is_half_open(to);
  if (was && !will) {
    --half_open_;
    if (auto it = half_open_by_peer_.find(c.peer.gid); it != half_open_by_peer_.end() && --it->second == 0)
      half_open_by_peer_.erase(it);
  } else if (!was && will) {
    ++half_open_;
    ++half_open_by_peer_[c.peer.gid];
  }
  // An ID leaving the live states gives its remote QPN back at once (Linux cleans its
  // remote-QPN entry on entering TIMEWAIT), so the peer may reuse the QPN; its remote comm ID
  // stays indexed until it is freed, so a late duplicate REQ meets TIMEWAIT (REJ stale).
  if ((to == CmState::Timewait || to == CmState::Idle) && c.in_remote_qpn_index) {
    by_remote_qpn_.erase({c.remote_qpn, c.remote_ca_guid});
    c.in_remote_qpn_index = false;
  }
  if (to == CmState::Idle && c.in_remote_id_index) {
    by_remote_id_.erase({c.remote_id, c.remote_ca_guid});
    c.in_remote_id_index = false;
  }
  if (to == CmState::Established) ++counters_.established;
  // Passive IDs whose RTU is awaited: their QP's first packet establishes them (COMM_EST).
  if (to == CmState::RepSent || to == CmState::MraRepRcvd) awaiting_rtu_.insert(c.local_id);
  else awaiting_rtu_.erase(c.local_id);
  c.state = to;
}

void CommunicationManager::arm(Connection& c, Nanos deadline) {
  if (c.deadline != kNever) timers_.erase({c.deadline, c.local_id});
  c.deadline = deadline;
  if (deadline != kNever) timers_.insert({deadline, c.local_id});
}

void CommunicationManager::free_id(CmId id) {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = it->second;
  if (c.state != CmState::Idle) set_state(c, CmState::Idle);
  arm(c, kNever);
  if (auto k = sidr_key_of_.find(id); k != sidr_key_of_.end()) {
    sidr_pending_.erase(k->second);
    sidr_key_of_.erase(k);
  }
  conns_.erase(it);
}

CommunicationManager::Connection* CommunicationManager::find(CmId local_id) {
  const auto it = conns_.find(local_id);
  return it == conns_.end() ? nullptr : &it->second;
}

CommunicationManager::Connection* CommunicationManager::find(CmId local_id, std::uint32_t remote_id) {
  Connection* c = find(local_id);
  return c && c->remote_id == remote_id ? c : nullptr;
}

CommunicationManager::Connection* CommunicationManager::find_remote(const RemoteKey& k) {
  const auto it = by_remote_id_.find(k);
  return it == by_remote_id_.end() ? nullptr : find(it->second);
}

void CommunicationManager::index_remote_id(Connection& c) {
  by_remote_id_[{c.remote_id, c.remote_ca_guid}] = c.local_id;
  c.in_remote_id_index = true;
}

void CommunicationManager::index_remote_qpn(Connection& c) {
  by_remote_qpn_[{c.remote_qpn, c.remote_ca_guid}] = c.local_id;
  c.in_remote_qpn_index = true;
}

bool CommunicationManager::room_for_half_open(const Gid& peer) const {
  if (conns_.size() >= config_.max_connections || half_open_ >= config_.max_half_open) return false;
  const auto it = half_open_by_peer_.find(peer);
  return it == half_open_by_peer_.end() || it->second < config_.max_half_open_per_peer;
}

CmId CommunicationManager::allocate_id() {
  for (;;) {
    const CmId id = ++id_counter_ ^ id_operand_;
    if (id != 0 && !conns_.contains(id)) return id;
  }
}

std::uint64_t CommunicationManager::next_tid(CmId id) const {
  return std::uint64_t{config_.tid_high} << 32 | id;
}

const std::uint64_t* CommunicationManager::listener_for(std::uint64_t service_id) const {
  for (const auto& [sid, mask] : listeners_)
    if ((service_id & mask) == (sid & mask)) return &sid;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Sending

void CommunicationManager::send(CmOutput& out, const MadPeer& to, const Mad& mad) {
  ++counters_.tx_msgs[slot_of(mad)];
  out.mads.push_back({to, mad});
}

void CommunicationManager::retransmit(Connection& c, CmOutput& out) {
  --c.retries_left;
  ++counters_.tx_retries[slot_of(*c.pending)];
  send(out, c.peer, *c.pending);
}

void CommunicationManager::start_pending(Connection& c, const Mad& mad, Nanos now, CmOutput& out) {
  c.pending = mad;
  c.retries_left = c.max_cm_retries;
  send(out, c.peer, mad);
  arm(c, now + c.timeout);
}

void CommunicationManager::emit(Connection& c, CmOutput& out, CmEvent ev) {
  if (c.consumer_gone) return;
  ev.id = c.local_id;
  out.events.push_back(std::move(ev));
}

void CommunicationManager::send_rej(Connection& c, RejReason reason, std::span<const std::uint8_t> ari,
                                    std::span<const std::uint8_t> private_data, CmOutput& out) {
  const RejShape shape = rej_shape(c.state);
  const Ids ids{c.tid, shape.zero_local_id ? 0 : c.local_id, c.remote_id};
  ++counters_.rej_sent[static_cast<std::size_t>(reason)];
  send(out, c.peer, format_rej(ids, shape.message, reason, ari, private_data));
}

// A REJ to a message that has no ID of ours behind it (cm_issue_rej): the IDs swapped from it.
void CommunicationManager::issue_rej(const ParsedMad& p, std::uint32_t local_id, std::uint32_t remote_id, CmMessage message,
                                     RejReason reason, const MadPeer& to, CmOutput& out) {
  ++counters_.rej_sent[static_cast<std::size_t>(reason)];
  send(out, to, format_rej({p.header.tid(), local_id, remote_id}, message, reason, {}, {}));
}

void CommunicationManager::enter_timewait(Connection& c, Nanos now) {
  c.pending.reset();
  set_state(c, CmState::Timewait);
  arm(c, now + cm_time(c.av_timeout));
}

void CommunicationManager::send_drep(Connection& c, std::span<const std::uint8_t> private_data, Nanos now, CmOutput& out) {
  c.last_drep = format_drep({c.tid, c.local_id, c.remote_id}, private_data);
  send(out, c.peer, *c.last_drep);
  enter_timewait(c, now);
}

// ---------------------------------------------------------------------------------------------
// Received MADs

void CommunicationManager::on_mad(ByteSpan mad, const MadPeer& from, Nanos now, CmOutput& out) {
  ParsedMad p;
  const MadError e = parse_mad(mad, p);
  if (e != MadError::None) {
    ++counters_.rx_malformed[static_cast<std::size_t>(e)];
    // A Get/Set of the CM class that we cannot serve still gets its GetResp (IBA 13.4.7).
    if (p.has_header && mad.size() == kMadBytes && p.header.base_version == kMadBaseVersion &&
        p.header.mgmt_class == kMgmtClassCm && is_request_method(p.header)) {
      answer_with_status(p, e == MadError::BadClassVersion ? MadStatus::BadVersion : MadStatus::UnsupportedMethodAttribute,
                         from, out);
    }
    return;
  }
  ++counters_.rx_msgs[attribute_slot(p.attribute)];
  switch (p.attribute) {
    case CmAttribute::Req: on_req(p, mad, from, now, out); break;
    case CmAttribute::Rep: on_rep(p, from, now, out); break;
    case CmAttribute::Rtu: on_rtu(p, now, out); break;
    case CmAttribute::Rej: on_rej(p, now, out); break;
    case CmAttribute::Mra: on_mra(p, now, out); break;
    case CmAttribute::Dreq: on_dreq(p, from, now, out); break;
    case CmAttribute::Drep: on_drep(p, now, out); break;
    case CmAttribute::SidrReq: on_sidr_req(p, mad, from, now, out); break;
    case CmAttribute::SidrRep: on_sidr_rep(p, now, out); break;
    case CmAttribute::ClassPortInfo: on_class_port_info(p, from, out); break;
    case CmAttribute::Lap:
    case CmAttribute::Apr:
      // Alternate paths are not offered on RoCE (Linux's cm_lap_handler / cm_apr_handler).
      ++counters_.alternate_path_ignored;
      break;
  }
}

void CommunicationManager::on_req(const ParsedMad& p, ByteSpan mad, const MadPeer& from, Nanos now, CmOutput& out) {
  const auto req = p.as<CmReq>();
  const std::uint64_t guid = req.local_ca_guid.get();
  const std::uint32_t remote_id = req.local_comm_id.get();

  if (Connection* c = find_remote({remote_id, guid})) {
    ++counters_.rx_duplicates[attribute_slot(CmAttribute::Req)];
    switch (on_duplicate_req(c->state, config_.mra_service_timeout != 0)) {
      case DuplicateReqAction::Drop: return;
      case DuplicateReqAction::SendMra:
        c->service_timeout = config_.mra_service_timeout;
        c->last_mra = format_mra({c->tid, c->local_id, c->remote_id}, CmMessage::Req, c->service_timeout, {});
        set_state(*c, CmState::MraReqSent);
        send(out, c->peer, *c->last_mra);
        return;
      case DuplicateReqAction::ResendMra:
        if (c->last_mra) send(out, c->peer, *c->last_mra);
        return;
      case DuplicateReqAction::ResendRep:
        if (c->last_rep) send(out, c->peer, *c->last_rep);
        return;
      case DuplicateReqAction::RejectStale: {
        ++counters_.req_stale;
        const RejShape shape = rej_shape(c->state);
        ++counters_.rej_sent[static_cast<std::size_t>(RejReason::StaleConnection)];
        send(out, from,
             format_rej({p.header.tid(), c->local_id, remote_id}, shape.message, RejReason::StaleConnection, {}, {}));
        return;
      }
    }
    return;
  }

  NewReqFacts facts;
  Connection* stale = nullptr;
  if (const auto it = by_remote_qpn_.find({req.local_qpn(), guid}); it != by_remote_qpn_.end()) stale = find(it->second);
  facts.remote_qpn_in_use = stale != nullptr;
  const std::uint64_t* listen_id = listener_for(req.service_id.get());
  facts.listener = listen_id != nullptr;
  facts.room = room_for_half_open(from.gid);
  facts.transport_supported =
      req.transport() == CmTransport::Rc || (req.transport() == CmTransport::Uc && config_.accept_uc);
  facts.mtu_valid = mtu_from_enum(req.path_mtu()).has_value();
  const NewReqVerdict verdict = decide_new_req(facts);
  if (verdict == NewReqVerdict::RejectNoListener && hold_unmatched(mad, from, req.service_id.get(), now)) return;
  if (verdict != NewReqVerdict::Deliver) {
    switch (verdict) {
      case NewReqVerdict::RejectStale: ++counters_.req_stale; break;
      case NewReqVerdict::RejectNoListener: ++counters_.req_no_listener; break;
      case NewReqVerdict::RejectNoResources: ++counters_.req_no_resources; break;
      case NewReqVerdict::RejectTransport: ++counters_.req_bad_transport; break;
      case NewReqVerdict::RejectMtu: ++counters_.req_bad_mtu; break;
      case NewReqVerdict::Deliver: break;
    }
    issue_rej(p, 0, remote_id, CmMessage::Req, rej_reason_of(verdict), from, out);
    // The peer reuses the QPN of a connection we still hold: that one is stale (cm_match_req).
    if (stale && stale->state == CmState::Established) disconnect(stale->local_id, now, out);
    return;
  }

  const CmId id = allocate_id();
  Connection& c = conns_[id];
  c.local_id = id;
  c.remote_id = remote_id;
  c.tid = p.header.tid();
  c.service_id = req.service_id.get();
  c.peer = from;
  c.peer.pkey = req.partition_key.get();
  c.remote_ca_guid = guid;
  c.remote_qpn = req.local_qpn();
  c.timeout = cm_time(std::min(req.local_cm_response_timeout(), config_.max_peer_response_timeout));
  c.max_cm_retries = req.max_cm_retries();
  c.av_timeout = req.primary.local_ack_timeout();
  index_remote_id(c);
  index_remote_qpn(c);
  set_state(c, CmState::ReqRcvd);
  arm(c, now + config_.consumer_timeout);

  ReqInfo info;
  info.service_id = c.service_id;
  info.listen_id = *listen_id;
  info.from = from;
  info.remote_comm_id = remote_id;
  info.remote_ca_guid = guid;
  info.remote_qpn = req.local_qpn();
  info.remote_qkey = req.local_qkey.get();
  info.transport = req.transport();
  info.starting_psn = req.starting_psn();
  info.responder_resources = req.initiator_depth();
  info.initiator_depth = req.responder_resources();
  info.path_mtu = req.path_mtu();
  info.retry_count = req.retry_count();
  info.rnr_retry_count = req.rnr_retry_count();
  info.local_ack_timeout = req.primary.local_ack_timeout();
  info.remote_cm_response_timeout = req.remote_cm_response_timeout();
  info.local_cm_response_timeout = req.local_cm_response_timeout();
  info.max_cm_retries = req.max_cm_retries();
  info.flow_control = req.end_to_end_flow_control();
  info.ece = Ece{req.vendor_id(), p.header.attribute_modifier.get()};
  info.srq = req.srq();
  info.pkey = req.partition_key.get();
  info.primary = req.primary;
  emit(c, out, CmEvent{CmEventType::ReqReceived, 0, std::move(info), to_vector(req.private_data)});
}

void CommunicationManager::on_rep(const ParsedMad& p, const MadPeer& from, Nanos now, CmOutput& out) {
  const auto rep = p.as<CmRep>();
  Connection* c = find(rep.remote_comm_id.get());
  const auto slot = attribute_slot(CmAttribute::Rep);
  if (!c) {
    ++counters_.rx_unmatched[slot];
    return;
  }
  const RepAction action = cm::on_rep(c->state);
  if (action != RepAction::Accept && c->remote_id != rep.local_comm_id.get()) {
    ++counters_.rx_unmatched[slot];
    return;
  }
  switch (action) {
    case RepAction::Accept: break;
    case RepAction::ResendRtu:
      ++counters_.rx_duplicates[slot];
      if (c->last_rtu) send(out, c->peer, *c->last_rtu);
      return;
    case RepAction::ResendMra:
      ++counters_.rx_duplicates[slot];
      if (c->last_mra) send(out, c->peer, *c->last_mra);
      return;
    case RepAction::Duplicate: ++counters_.rx_duplicates[slot]; return;
    case RepAction::Drop: ++counters_.rx_unmatched[slot]; return;
  }

  const std::uint64_t guid = rep.local_ca_guid.get();
  if (find_remote({rep.local_comm_id.get(), guid})) {  // that remote ID is another ID's already
    ++counters_.rx_duplicates[slot];
    return;
  }
  if (const auto it = by_remote_qpn_.find({rep.local_qpn(), guid}); it != by_remote_qpn_.end()) {
    ++counters_.rep_stale;
    Connection* stale = find(it->second);
    issue_rej(p, c->local_id, rep.local_comm_id.get(), CmMessage::Rep, RejReason::StaleConnection, from, out);
    if (stale && stale->state == CmState::Established) disconnect(stale->local_id, now, out);
    return;
  }
  c->remote_id = rep.local_comm_id.get();
  c->remote_ca_guid = guid;
  c->remote_qpn = rep.local_qpn();
  index_remote_id(*c);
  index_remote_qpn(*c);
  c->av_timeout = cm_ack_timeout(rep.target_ack_delay(), static_cast<std::uint8_t>(c->av_timeout - 1));
  c->pending.reset();
  set_state(*c, CmState::RepRcvd);
  arm(*c, now + config_.consumer_timeout);

  RepInfo info;
  info.remote_comm_id = c->remote_id;
  info.remote_ca_guid = guid;
  info.remote_qpn = c->remote_qpn;
  info.remote_qkey = rep.local_qkey.get();
  info.starting_psn = rep.starting_psn();
  info.responder_resources = rep.initiator_depth;
  info.initiator_depth = rep.responder_resources;
  info.target_ack_delay = rep.target_ack_delay();
  info.failover_accepted = rep.failover_accepted();
  info.rnr_retry_count = rep.rnr_retry_count();
  info.flow_control = rep.end_to_end_flow_control();
  info.srq = rep.srq();
  info.ece = Ece{rep_vendor_id(rep), p.header.attribute_modifier.get()};
  emit(*c, out, CmEvent{CmEventType::RepReceived, 0, std::move(info), to_vector(rep.private_data)});
}

void CommunicationManager::on_rtu(const ParsedMad& p, Nanos, CmOutput& out) {
  const auto rtu = p.as<CmRtu>();
  const auto slot = attribute_slot(CmAttribute::Rtu);
  Connection* c = find(rtu.remote_comm_id.get(), rtu.local_comm_id.get());
  if (!c) {
    ++counters_.rx_unmatched[slot];
    return;
  }
  if (!rtu_establishes(c->state)) {
    ++counters_.rx_duplicates[slot];
    return;
  }
  c->pending.reset();
  set_state(*c, CmState::Established);
  arm(*c, kNever);
  emit(*c, out, CmEvent{CmEventType::Established, 0, {}, to_vector(rtu.private_data)});
}

void CommunicationManager::on_rej(const ParsedMad& p, Nanos now, CmOutput& out) {
  const auto rej = p.as<CmRej>();
  const std::uint16_t reason = rej.reason_code();
  ++counters_.rej_received[std::min<std::size_t>(reason, kRejReasonSlots - 1)];
  Connection* c = nullptr;
  if (reason == static_cast<std::uint16_t>(RejReason::Timeout)) {
    // The ARI of a timeout REJ is the sender's CA GUID: with the sender's comm ID, the key of
    // our remote-ID index (cm_acquire_rejected_id).
    if (rej.reject_info_length() >= 8) {
      Be64 guid;
      std::copy_n(rej.ari.begin(), 8, guid.bytes.begin());
      c = find_remote({rej.local_comm_id.get(), guid.get()});
    }
  } else if (rej.message_rejected() == CmMessage::Req) {
    c = find(rej.remote_comm_id.get());
  } else {
    c = find(rej.remote_comm_id.get(), rej.local_comm_id.get());
  }
  const RejAction action = c ? cm::on_rej(c->state, reason) : RejAction::Drop;
  if (action == RejAction::Drop) {
    ++counters_.rx_unmatched[attribute_slot(CmAttribute::Rej)];
    return;
  }
  RejInfo info;
  info.reason = reason;
  info.message_rejected = rej.message_rejected();
  info.ari.assign(rej.ari.begin(), rej.ari.begin() + rej.reject_info_length());
  emit(*c, out, CmEvent{CmEventType::RejReceived, 0, std::move(info), to_vector(rej.private_data)});
  if (action == RejAction::Free) free_id(c->local_id);
  else enter_timewait(*c, now);
}

void CommunicationManager::on_mra(const ParsedMad& p, Nanos now, CmOutput& out) {
  const auto mra = p.as<CmMra>();
  const auto slot = attribute_slot(CmAttribute::Mra);
  Connection* c = mra.message_mraed() == CmMessage::Req ? find(mra.remote_comm_id.get())
                                                        : find(mra.remote_comm_id.get(), mra.local_comm_id.get());
  const MraAction action = c ? cm::on_mra(c->state, mra.message_mraed()) : MraAction::Drop;
  switch (action) {
    case MraAction::ExtendReq:
    case MraAction::ExtendRep:
      set_state(*c, action == MraAction::ExtendReq ? CmState::MraReqRcvd : CmState::MraRepRcvd);
      arm(*c, now + cm_time(std::min(mra.service_timeout(), config_.max_peer_response_timeout)) + cm_time(c->av_timeout));
      emit(*c, out, CmEvent{CmEventType::MraReceived, 0, MraInfo{mra.service_timeout()}, to_vector(mra.private_data)});
      return;
    case MraAction::Duplicate: ++counters_.rx_duplicates[slot]; return;
    case MraAction::Drop: ++counters_.rx_unmatched[slot]; return;
  }
}

void CommunicationManager::on_dreq(const ParsedMad& p, const MadPeer& from, Nanos now, CmOutput& out) {
  const auto dreq = p.as<CmDreq>();
  const auto slot = attribute_slot(CmAttribute::Dreq);
  Connection* c = find(dreq.remote_comm_id.get(), dreq.local_comm_id.get());
  if (!c) {
    // Nothing to disconnect: answer anyway so that the peer's DREQ timer stops (cm_issue_drep).
    ++counters_.rx_unmatched[slot];
    send(out, from, format_drep({p.header.tid(), dreq.remote_comm_id.get(), dreq.local_comm_id.get()}, {}));
    return;
  }
  if (dreq.remote_qpn() != c->local_qpn) {
    ++counters_.dreq_qpn_mismatch;
    return;
  }
  switch (cm::on_dreq(c->state)) {
    case DreqAction::Disconnect: break;
    case DreqAction::ResendDrep:
      ++counters_.rx_duplicates[slot];
      if (c->last_drep) send(out, from, *c->last_drep);
      return;
    case DreqAction::Duplicate: ++counters_.rx_duplicates[slot]; return;
    case DreqAction::Drop: ++counters_.rx_unmatched[slot]; return;
  }
  c->pending.reset();
  c->tid = p.header.tid();  // the DREP echoes the DREQ's TID
  set_state(*c, CmState::DreqRcvd);
  emit(*c, out, CmEvent{CmEventType::DreqReceived, 0, {}, to_vector(dreq.private_data)});
  if (config_.auto_drep || c->consumer_gone) send_drep(*c, {}, now, out);
  else arm(*c, now + config_.consumer_timeout);
}

void CommunicationManager::on_drep(const ParsedMad& p, Nanos now, CmOutput& out) {
  const auto drep = p.as<CmDrep>();
  const auto slot = attribute_slot(CmAttribute::Drep);
  Connection* c = find(drep.remote_comm_id.get(), drep.local_comm_id.get());
  if (!c) {
    ++counters_.rx_unmatched[slot];
    return;
  }
  if (!drep_completes(c->state)) {
    ++counters_.rx_duplicates[slot];
    return;
  }
  emit(*c, out, CmEvent{CmEventType::DrepReceived, 0, {}, to_vector(drep.private_data)});
  enter_timewait(*c, now);
}

void CommunicationManager::on_sidr_req(const ParsedMad& p, ByteSpan mad, const MadPeer& from, Nanos now, CmOutput& out) {
  const auto req = p.as<CmSidrReq>();
  const auto slot = attribute_slot(CmAttribute::SidrReq);
  const SidrKey key{req.request_id.get(), from.gid};
  // A retransmitted SIDR_REQ whose answer was lost gets the same answer again (Linux would
  // deliver it to the consumer a second time).
  if (const auto it = sidr_replies_.find(key); it != sidr_replies_.end()) {
    ++counters_.rx_duplicates[slot];
    send(out, from, it->second.mad);
    return;
  }
  if (sidr_pending_.contains(key)) {
    ++counters_.rx_duplicates[slot];
    return;
  }
  const std::uint64_t* listen_id = listener_for(req.service_id.get());
  if (!listen_id && hold_unmatched(mad, from, req.service_id.get(), now)) return;
  SidrReplyParams refusal;
  if (!listen_id) {
    ++counters_.sidr_no_listener;
    refusal.status = SidrStatus::ServiceIdUnsupported;
  } else if (!room_for_half_open(from.gid)) {
    ++counters_.sidr_no_resources;
    refusal.status = SidrStatus::Rejected;
  }
  if (refusal.status != SidrStatus::Success) {
    send(out, from, format_sidr_rep(p.header.tid(), req.request_id.get(), req.service_id.get(), refusal));
    return;
  }
  const CmId id = allocate_id();
  Connection& c = conns_[id];
  c.local_id = id;
  c.remote_id = req.request_id.get();
  c.tid = p.header.tid();
  c.service_id = req.service_id.get();
  c.peer = from;
  sidr_pending_[key] = id;
  sidr_key_of_[id] = key;
  set_state(c, CmState::SidrReqRcvd);
  arm(c, now + config_.consumer_timeout);
  SidrReqInfo info{c.service_id, *listen_id, from, c.remote_id, req.partition_key.get()};
  emit(c, out, CmEvent{CmEventType::SidrReqReceived, 0, std::move(info), to_vector(req.private_data)});
}

void CommunicationManager::on_sidr_rep(const ParsedMad& p, Nanos, CmOutput& out) {
  const auto rep = p.as<CmSidrRep>();
  Connection* c = find(rep.request_id.get());
  if (!c || c->state != CmState::SidrReqSent) {
    ++counters_.rx_unmatched[attribute_slot(CmAttribute::SidrRep)];
    return;
  }
  SidrRepInfo info;
  info.status = rep.status;
  info.qpn = rep.qpn();
  info.qkey = rep.qkey.get();
  info.service_id = rep.service_id.get();
  info.info.assign(rep.additional_info.begin(), rep.additional_info.begin() + rep.info_length);
  emit(*c, out, CmEvent{CmEventType::SidrRepReceived, 0, std::move(info), to_vector(rep.private_data)});
  free_id(c->local_id);
}

void CommunicationManager::on_class_port_info(const ParsedMad& p, const MadPeer& from, CmOutput& out) {
  switch (p.header.method()) {
    case MadMethod::Get: {
      ClassPortInfo info{};
      info.base_version = kMadBaseVersion;
      info.class_version = kCmClassVersion;
      info.capability_mask.set(kCmCapReliableConnection | kCmCapSidr | (config_.accept_uc ? kCmCapUnreliableConnection : 0));
      info.set_resp_time_value(config_.class_resp_time);
      ++counters_.class_port_info_answered;
      send(out, from, format_class_port_info(p.header, info));
      return;
    }
    case MadMethod::Set:
      answer_with_status(p, MadStatus::UnsupportedMethodAttribute, from, out);
      return;
    default:
      ++counters_.rx_unmatched[attribute_slot(CmAttribute::ClassPortInfo)];
      return;
  }
}

void CommunicationManager::answer_with_status(const ParsedMad& p, MadStatus status, const MadPeer& from, CmOutput& out) {
  ++counters_.mad_status_replies;
  const Mad reply = format_status_reply(p.header, status);
  // An attribute outside the CM table has no counter slot: count it with ClassPortInfo's.
  const auto attr = p.header.attribute();
  if (!is_cm_attribute(attr)) {
    ++counters_.tx_msgs[attribute_slot(CmAttribute::ClassPortInfo)];
    out.mads.push_back({from, reply});
    return;
  }
  send(out, from, reply);
}

// ---------------------------------------------------------------------------------------------
// Timers

void CommunicationManager::on_timer(Nanos now, CmOutput& out) {
  if (!held_.empty()) replay_held(now, out);
  while (!timers_.empty() && timers_.begin()->first <= now) {
    const CmId id = timers_.begin()->second;
    timers_.erase(timers_.begin());
    Connection* c = find(id);
    if (!c) continue;
    c->deadline = kNever;
    on_expired(*c, now, out);
  }
  expire_sidr_replies(now);
}

std::optional<std::uint32_t> CommunicationManager::local_qpn_of(CmId id) const {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return std::nullopt;
  return it->second.local_qpn;
}

std::size_t CommunicationManager::count_in(CmState s) const {
  std::size_t n = 0;
  for (const auto& [id, c] : conns_) n += c.state == s ? 1 : 0;
  return n;
}

Nanos CommunicationManager::next_deadline() const {
  Nanos t = timers_.empty() ? kNever : timers_.begin()->first;
  if (!sidr_expiry_.empty()) t = std::min(t, sidr_expiry_.begin()->first);
  // A held request is due when its hold ends, or at once when a listener for it came.
  for (const HeldRequest& h : held_) t = std::min(t, listener_for(h.service_id) ? Nanos{0} : h.until);
  return t;
}

bool CommunicationManager::hold_unmatched(ByteSpan mad, const MadPeer& from, std::uint64_t service_id, Nanos now) {
  if (config_.unmatched_request_hold <= 0 || replaying_) return false;
  // A retransmission of a request already held (the same bytes from the same port) waits with it.
  for (const HeldRequest& h : held_)
    if (h.from == from && std::equal(mad.begin(), mad.end(), h.mad.begin(), h.mad.end())) {
      ++counters_.rx_duplicates[attribute_slot(static_cast<CmAttribute>(load_header<MadHeader>(mad, 0).attribute()))];
      return true;
    }
  if (held_.size() >= config_.max_held_requests) {
    ++counters_.unmatched_hold_full;
    return false;
  }
  ++counters_.unmatched_held;
  held_.push_back(HeldRequest{std::vector<std::byte>(mad.begin(), mad.end()), from, service_id,
                              now + config_.unmatched_request_hold});
  return true;
}

void CommunicationManager::replay_held(Nanos now, CmOutput& out) {
  std::vector<HeldRequest> due, kept;
  for (HeldRequest& h : held_) {
    const bool listened = listener_for(h.service_id) != nullptr;
    if (!listened && h.until > now) {
      kept.push_back(std::move(h));
      continue;
    }
    if (listened) ++counters_.unmatched_held_delivered;
    due.push_back(std::move(h));
  }
  held_.swap(kept);
  // Each is handled as if it arrived now: delivered to the listener, or refused as without a
  // hold. Its rx_msgs count was taken when it arrived.
  replaying_ = true;
  for (const HeldRequest& h : due) {
    ParsedMad p;
    if (parse_mad(ByteSpan(h.mad), p) != MadError::None) continue;
    if (p.attribute == CmAttribute::Req) on_req(p, ByteSpan(h.mad), h.from, now, out);
    else on_sidr_req(p, ByteSpan(h.mad), h.from, now, out);
  }
  replaying_ = false;
}

void CommunicationManager::expire_sidr_replies(Nanos now) {
  while (!sidr_expiry_.empty() && sidr_expiry_.begin()->first <= now) {
    sidr_replies_.erase(sidr_expiry_.begin()->second);
    sidr_expiry_.erase(sidr_expiry_.begin());
  }
}

void CommunicationManager::on_expired(Connection& c, Nanos now, CmOutput& out) {
  const auto guid = guid_bytes(config_.local_ca_guid);
  switch (on_timeout(c.state, c.retries_left > 0)) {
    case TimeoutAction::None: return;
    case TimeoutAction::Retransmit:
      retransmit(c, out);
      arm(c, now + c.timeout);
      return;
    case TimeoutAction::ReqGiveUp:
      ++counters_.req_timeouts;
      send_rej(c, RejReason::Timeout, guid, {}, out);
      emit(c, out, CmEvent{CmEventType::ReqError, 0, {}, {}});
      free_id(c.local_id);
      return;
    case TimeoutAction::RepGiveUp:
      ++counters_.rep_timeouts;
      send_rej(c, RejReason::Timeout, guid, {}, out);
      emit(c, out, CmEvent{CmEventType::RepError, 0, {}, {}});
      enter_timewait(c, now);
      return;
    case TimeoutAction::DreqGiveUp:
      ++counters_.dreq_timeouts;
      emit(c, out, CmEvent{CmEventType::DreqError, 0, {}, {}});
      enter_timewait(c, now);
      return;
    case TimeoutAction::SidrGiveUp:
      ++counters_.sidr_timeouts;
      emit(c, out, CmEvent{CmEventType::SidrReqError, 0, {}, {}});
      free_id(c.local_id);
      return;
    case TimeoutAction::ConsumerTooSlow:
      ++counters_.consumer_timeouts;
      emit(c, out, CmEvent{CmEventType::ConsumerTimeout, 0, {}, {}});
      if (c.state == CmState::SidrReqRcvd) {
        SidrReplyParams refusal;
        refusal.status = SidrStatus::Rejected;
        send(out, c.peer, format_sidr_rep(c.tid, c.remote_id, c.service_id, refusal));
        free_id(c.local_id);
      } else if (c.state == CmState::DreqRcvd) {
        send_drep(c, {}, now, out);
      } else {
        // As Linux when the consumer drops an ID it never answered (cm_destroy_id).
        send_rej(c, RejReason::ConsumerDefined, {}, {}, out);
        free_id(c.local_id);
      }
      return;
    case TimeoutAction::TimewaitExit:
      ++counters_.timewait_exits;
      emit(c, out, CmEvent{CmEventType::TimewaitExit, 0, {}, {}});
      free_id(c.local_id);
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// Consumer calls

Status CommunicationManager::listen(std::uint64_t service_id, std::uint64_t mask) {
  for (const auto& [sid, m] : listeners_)
    if ((sid & m & mask) == (service_id & m & mask))
      return make_error(EADDRINUSE, "a listener already covers Service ID " + std::to_string(service_id));
  listeners_[service_id] = mask;
  return {};
}

Status CommunicationManager::stop_listening(std::uint64_t service_id) {
  if (listeners_.erase(service_id) == 0) return make_error(ENOENT, "no listener on Service ID " + std::to_string(service_id));
  return {};
}

Result<CmId> CommunicationManager::connect(const ConnectParams& p, Nanos now, CmOutput& out) {
  if (p.private_data.size() > kCmReqPrivateBytes) return invalid("REQ private data is longer than 92 bytes");
  if (p.transport != CmTransport::Rc && p.transport != CmTransport::Uc) return invalid("connect() takes RC or UC");
  if (p.local_qpn > 0xFFFFFF || p.starting_psn > 0xFFFFFF) return invalid("QPN and PSN are 24-bit");
  if (p.max_cm_retries > 15 || p.retry_count > 7 || p.rnr_retry_count > 7) return invalid("retry counts out of range");
  if (conns_.size() >= config_.max_connections) return Error{ENOMEM, "CM ID limit reached"};
  const CmId id = allocate_id();
  Connection& c = conns_[id];
  c.local_id = id;
  c.active = true;
  c.tid = next_tid(id);
  c.service_id = p.service_id;
  c.peer = MadPeer{p.path.remote_gid, kGsiQpn, p.pkey};
  c.local_qpn = p.local_qpn;
  c.timeout = 2 * cm_time(p.path.packet_life_time) + cm_time(p.remote_cm_response_timeout);
  c.max_cm_retries = p.max_cm_retries;
  c.av_timeout = static_cast<std::uint8_t>(p.path.packet_life_time + 1);
  set_state(c, CmState::ReqSent);
  start_pending(c, format_req(p, {c.tid, id, 0}, config_.local_ca_guid, config_.ack_delay), now, out);
  return id;
}

Status CommunicationManager::ready_to_use(CmId id, Nanos, CmOutput& out, std::span<const std::uint8_t> private_data) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (c->state != CmState::RepRcvd && c->state != CmState::MraRepSent) return invalid("RTU needs REP_RCVD, ID is " + to_string(c->state));
  if (private_data.size() > kCmRtuPrivateBytes) return invalid("RTU private data is longer than 224 bytes");
  c->last_rtu = format_rtu({c->tid, c->local_id, c->remote_id}, private_data);
  send(out, c->peer, *c->last_rtu);
  set_state(*c, CmState::Established);
  arm(*c, kNever);
  emit(*c, out, CmEvent{CmEventType::Established, 0, {}, {}});
  return {};
}

Status CommunicationManager::accept(CmId id, const AcceptParams& p, Nanos now, CmOutput& out) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (c->state != CmState::ReqRcvd && c->state != CmState::MraReqSent) return invalid("REP needs REQ_RCVD, ID is " + to_string(c->state));
  if (p.private_data.size() > kCmRepPrivateBytes) return invalid("REP private data is longer than 196 bytes");
  if (p.local_qpn > 0xFFFFFF || p.starting_psn > 0xFFFFFF) return invalid("QPN and PSN are 24-bit");
  c->local_qpn = p.local_qpn;
  c->last_rep = format_rep(p, {c->tid, c->local_id, c->remote_id}, config_.ack_delay, config_.local_ca_guid);
  set_state(*c, CmState::RepSent);
  start_pending(*c, *c->last_rep, now, out);
  return {};
}

Status CommunicationManager::reject(CmId id, RejReason reason, Nanos now, CmOutput& out,
                                    std::span<const std::uint8_t> private_data, std::span<const std::uint8_t> ari) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (private_data.size() > kCmRejPrivateBytes || ari.size() > kCmRejAriBytes) return invalid("REJ private data or ARI too long");
  const ConsumerRejectAction action = on_consumer_reject(c->state);
  if (action == ConsumerRejectAction::NotAllowed) return invalid("cannot reject an ID in " + to_string(c->state));
  send_rej(*c, reason, ari, private_data, out);
  if (action == ConsumerRejectAction::Free) free_id(id);
  else enter_timewait(*c, now);
  return {};
}

Status CommunicationManager::delay(CmId id, std::uint8_t service_timeout, Nanos now, CmOutput& out) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  CmMessage mraed;
  CmState to;
  if (c->state == CmState::ReqRcvd) {
    mraed = CmMessage::Req;
    to = CmState::MraReqSent;
  } else if (c->state == CmState::RepRcvd) {
    mraed = CmMessage::Rep;
    to = CmState::MraRepSent;
  } else {
    return invalid("MRA needs REQ_RCVD or REP_RCVD, ID is " + to_string(c->state));
  }
  c->service_timeout = service_timeout;
  c->last_mra = format_mra({c->tid, c->local_id, c->remote_id}, mraed, service_timeout, {});
  send(out, c->peer, *c->last_mra);
  set_state(*c, to);
  arm(*c, now + std::max(config_.consumer_timeout, cm_time(service_timeout)));
  return {};
}

Status CommunicationManager::notify_established(CmId id, Nanos, CmOutput& out) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (c->state == CmState::Established) return make_error(EISCONN, "already established");
  if (c->state != CmState::RepSent && c->state != CmState::MraRepRcvd) return invalid("COMM_EST needs REP_SENT, ID is " + to_string(c->state));
  c->pending.reset();
  set_state(*c, CmState::Established);
  arm(*c, kNever);
  emit(*c, out, CmEvent{CmEventType::Established, 0, {}, {}});
  return {};
}

Status CommunicationManager::disconnect(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (c->state != CmState::Established) return invalid("DREQ needs ESTABLISHED, ID is " + to_string(c->state));
  if (private_data.size() > kCmDreqPrivateBytes) return invalid("DREQ private data is longer than 220 bytes");
  set_state(*c, CmState::DreqSent);
  start_pending(*c, format_dreq({next_tid(c->local_id), c->local_id, c->remote_id}, c->remote_qpn, private_data), now, out);
  return {};
}

Status CommunicationManager::disconnect_reply(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (c->state != CmState::DreqRcvd) return invalid("DREP needs DREQ_RCVD, ID is " + to_string(c->state));
  if (private_data.size() > kCmDrepPrivateBytes) return invalid("DREP private data is longer than 224 bytes");
  send_drep(*c, private_data, now, out);
  return {};
}

void CommunicationManager::destroy(CmId id, Nanos now, CmOutput& out) {
  Connection* c = find(id);
  if (!c) return;
  c->consumer_gone = true;
  const auto guid = guid_bytes(config_.local_ca_guid);
  switch (c->state) {
    case CmState::Idle:
    case CmState::SidrReqSent:
      free_id(id);
      return;
    case CmState::SidrReqRcvd: {
      SidrReplyParams refusal;
      refusal.status = SidrStatus::Rejected;
      send(out, c->peer, format_sidr_rep(c->tid, c->remote_id, c->service_id, refusal));
      free_id(id);
      return;
    }
    case CmState::ReqSent:
    case CmState::MraReqRcvd:
      send_rej(*c, RejReason::Timeout, guid, {}, out);
      free_id(id);
      return;
    case CmState::ReqRcvd:
    case CmState::MraReqSent:
    case CmState::RepRcvd:
    case CmState::MraRepSent:
      send_rej(*c, RejReason::ConsumerDefined, {}, {}, out);
      free_id(id);
      return;
    case CmState::RepSent:
    case CmState::MraRepRcvd:
      send_rej(*c, RejReason::ConsumerDefined, {}, {}, out);
      enter_timewait(*c, now);
      return;
    case CmState::Established:
      // One DREQ, then TIMEWAIT at once: nobody is left to wait for the DREP.
      send(out, c->peer, format_dreq({next_tid(c->local_id), c->local_id, c->remote_id}, c->remote_qpn, {}));
      set_state(*c, CmState::DreqSent);
      enter_timewait(*c, now);
      return;
    case CmState::DreqSent:
      enter_timewait(*c, now);
      return;
    case CmState::DreqRcvd:
      send_drep(*c, {}, now, out);
      return;
    case CmState::Timewait:
    case CmState::Count:
      return;
  }
}

void CommunicationManager::disconnect_all(Nanos now, CmOutput& out) {
  std::vector<std::pair<CmId, CmState>> ids;
  ids.reserve(conns_.size());
  for (const auto& [id, c] : conns_) ids.emplace_back(id, c.state);
  std::sort(ids.begin(), ids.end());
  for (const auto& [id, state] : ids) {
    if (state == CmState::Established) disconnect(id, now, out);
    else if (state == CmState::ReqRcvd || state == CmState::MraReqSent) reject(id, RejReason::ConsumerDefined, now, out);
  }
}

Result<CmId> CommunicationManager::sidr_request(const SidrRequestParams& p, Nanos now, CmOutput& out) {
  if (p.private_data.size() > kCmSidrReqPrivateBytes) return invalid("SIDR_REQ private data is longer than 216 bytes");
  if (p.max_cm_retries > 15) return invalid("max CM retries is at most 15");
  if (conns_.size() >= config_.max_connections) return Error{ENOMEM, "CM ID limit reached"};
  const CmId id = allocate_id();
  Connection& c = conns_[id];
  c.local_id = id;
  c.active = true;
  c.tid = next_tid(id);
  c.service_id = p.service_id;
  c.peer = p.peer;
  c.timeout = p.timeout;
  c.max_cm_retries = p.max_cm_retries;
  set_state(c, CmState::SidrReqSent);
  start_pending(c, format_sidr_req(c.tid, id, p.peer.pkey, p.service_id, p.private_data), now, out);
  return id;
}

Status CommunicationManager::sidr_reply(CmId id, const SidrReplyParams& p, Nanos now, CmOutput& out) {
  Connection* c = find(id);
  if (!c) return make_error(ENOENT, "no CM ID " + std::to_string(id));
  if (c->state != CmState::SidrReqRcvd) return invalid("SIDR_REP needs SIDR_REQ_RCVD, ID is " + to_string(c->state));
  if (p.private_data.size() > kCmSidrRepPrivateBytes || p.info.size() > kCmSidrRepInfoBytes)
    return invalid("SIDR_REP private data or additional information too long");
  if (p.qpn > 0xFFFFFF) return invalid("QPN is 24-bit");
  const Mad reply = format_sidr_rep(c->tid, c->remote_id, c->service_id, p);
  send(out, c->peer, reply);
  if (config_.sidr_reply_cache > 0 && config_.max_sidr_reply_cache > 0) {
    const SidrKey key = sidr_key_of_.at(id);
    if (sidr_replies_.size() >= config_.max_sidr_reply_cache) {  // the oldest answer goes first
      sidr_replies_.erase(sidr_expiry_.begin()->second);
      sidr_expiry_.erase(sidr_expiry_.begin());
    }
    const Nanos expires = now + config_.sidr_reply_cache;
    sidr_replies_[key] = SidrReply{reply, c->peer, expires};
    sidr_expiry_.insert({expires, key});
  }
  free_id(id);
  return {};
}

std::optional<CmState> CommunicationManager::state_of(CmId id) const {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return std::nullopt;
  return it->second.state;
}

}  // namespace roce::cm
