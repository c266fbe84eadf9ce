#include "lib/cm/cm_decisions.hpp"

namespace roce::cm {

using S = CmState;

DuplicateReqAction on_duplicate_req(CmState existing, bool mra_enabled) {
  switch (existing) {
    case S::ReqRcvd: return mra_enabled ? DuplicateReqAction::SendMra : DuplicateReqAction::Drop;
    case S::MraReqSent: return DuplicateReqAction::ResendMra;
    case S::RepSent:
    case S::MraRepRcvd: return DuplicateReqAction::ResendRep;
    case S::Timewait: return DuplicateReqAction::RejectStale;
    default: return DuplicateReqAction::Drop;
  }
}

NewReqVerdict decide_new_req(const NewReqFacts& f) {
  if (f.remote_qpn_in_use) return NewReqVerdict::RejectStale;
  if (!f.listener) return NewReqVerdict::RejectNoListener;
  if (!f.room) return NewReqVerdict::RejectNoResources;
  if (!f.transport_supported) return NewReqVerdict::RejectTransport;
  if (!f.mtu_valid) return NewReqVerdict::RejectMtu;
  return NewReqVerdict::Deliver;
}

proto::RejReason rej_reason_of(NewReqVerdict v) {
  switch (v) {
    case NewReqVerdict::RejectStale: return proto::RejReason::StaleConnection;
    case NewReqVerdict::RejectNoListener: return proto::RejReason::InvalidServiceId;
    case NewReqVerdict::RejectNoResources: return proto::RejReason::NoResources;
    case NewReqVerdict::RejectTransport: return proto::RejReason::InvalidTransportType;
    case NewReqVerdict::RejectMtu: return proto::RejReason::InvalidMtu;
    case NewReqVerdict::Deliver: break;
  }
  return proto::RejReason::ConsumerDefined;
}

RepAction on_rep(CmState s) {
  switch (s) {
    case S::ReqSent:
    case S::MraReqRcvd: return RepAction::Accept;
    case S::Established: return RepAction::ResendRtu;
    case S::MraRepSent: return RepAction::ResendMra;
    case S::RepRcvd: return RepAction::Duplicate;
    default: return RepAction::Drop;
  }
}

bool rtu_establishes(CmState s) { return s == S::RepSent || s == S::MraRepRcvd; }

RejAction on_rej(CmState s, std::uint16_t reason) {
  switch (s) {
    case S::ReqSent:
    case S::MraReqRcvd:
    case S::RepSent:
    case S::MraRepRcvd:
    case S::ReqRcvd:
    case S::MraReqSent:
      return reason == static_cast<std::uint16_t>(proto::RejReason::StaleConnection) ? RejAction::Timewait
                                                                                      : RejAction::Free;
    case S::DreqSent:
    case S::RepRcvd:
    case S::MraRepSent:
    case S::Established:
      return RejAction::Timewait;
    default:
      return RejAction::Drop;
  }
}

MraAction on_mra(CmState s, proto::CmMessage mraed) {
  switch (s) {
    case S::ReqSent: return mraed == proto::CmMessage::Req ? MraAction::ExtendReq : MraAction::Drop;
    case S::RepSent: return mraed == proto::CmMessage::Rep ? MraAction::ExtendRep : MraAction::Drop;
    case S::MraReqRcvd:
    case S::MraRepRcvd: return MraAction::Duplicate;
    default: return MraAction::Drop;
  }
}

DreqAction on_dreq(CmState s) {
  switch (s) {
    case S::RepSent:
    case S::MraRepRcvd:
    case S::Established:
    case S::DreqSent: return DreqAction::Disconnect;
    case S::Timewait: return DreqAction::ResendDrep;
    case S::DreqRcvd: return DreqAction::Duplicate;
    default: return DreqAction::Drop;
  }
}

bool drep_completes(CmState s) { return s == S::DreqSent || s == S::DreqRcvd; }

TimeoutAction on_timeout(CmState s, bool retries_left) {
  switch (s) {
    case S::ReqSent:
    case S::MraReqRcvd: return retries_left ? TimeoutAction::Retransmit : TimeoutAction::ReqGiveUp;
    case S::RepSent:
    case S::MraRepRcvd: return retries_left ? TimeoutAction::Retransmit : TimeoutAction::RepGiveUp;
    case S::DreqSent: return retries_left ? TimeoutAction::Retransmit : TimeoutAction::DreqGiveUp;
    case S::SidrReqSent: return retries_left ? TimeoutAction::Retransmit : TimeoutAction::SidrGiveUp;
    case S::ReqRcvd:
    case S::MraReqSent:
    case S::RepRcvd:
    case S::MraRepSent:
    case S::DreqRcvd:
    case S::SidrReqRcvd: return TimeoutAction::ConsumerTooSlow;
    case S::Timewait: return TimeoutAction::TimewaitExit;
    default: return TimeoutAction::None;
  }
}

RejShape rej_shape(CmState s) {
  switch (s) {
    case S::ReqRcvd: return {proto::CmMessage::Req, true};
    case S::MraReqSent: return {proto::CmMessage::Req, false};
    case S::RepRcvd:
    case S::MraRepSent: return {proto::CmMessage::Rep, false};
    default: return {proto::CmMessage::Other, false};
  }
}

ConsumerRejectAction on_consumer_reject(CmState s) {
  switch (s) {
    case S::ReqSent:
    case S::MraReqRcvd:
    case S::ReqRcvd:
    case S::MraReqSent:
    case S::RepRcvd:
    case S::MraRepSent: return ConsumerRejectAction::Free;
    case S::RepSent:
    case S::MraRepRcvd: return ConsumerRejectAction::Timewait;
    default: return ConsumerRejectAction::NotAllowed;
  }
}

std::string to_string(DuplicateReqAction a) {
  switch (a) {
    case DuplicateReqAction::Drop: return "drop";
    case DuplicateReqAction::SendMra: return "send-mra";
    case DuplicateReqAction::ResendMra: return "resend-mra";
    case DuplicateReqAction::ResendRep: return "resend-rep";
    case DuplicateReqAction::RejectStale: return "reject-stale";
  }
  return "unknown";
}

std::string to_string(NewReqVerdict v) {
  switch (v) {
    case NewReqVerdict::Deliver: return "deliver";
    case NewReqVerdict::RejectStale: return "reject-stale";
    case NewReqVerdict::RejectNoListener: return "reject-no-listener";
    case NewReqVerdict::RejectNoResources: return "reject-no-resources";
    case NewReqVerdict::RejectTransport: return "reject-transport";
    case NewReqVerdict::RejectMtu: return "reject-mtu";
  }
  return "unknown";
}

std::string to_string(RepAction a) {
  switch (a) {
    case RepAction::Accept: return "accept";
    case RepAction::ResendRtu: return "resend-rtu";
    case RepAction::ResendMra: return "resend-mra";
    case RepAction::Duplicate: return "duplicate";
    case RepAction::Drop: return "drop";
  }
  return "unknown";
}

std::string to_string(RejAction a) {
  switch (a) {
    case RejAction::Free: return "free";
    case RejAction::Timewait: return "timewait";
    case RejAction::Drop: return "drop";
  }
  return "unknown";
}

std::string to_string(MraAction a) {
  switch (a) {
    case MraAction::ExtendReq: return "extend-req";
    case MraAction::ExtendRep: return "extend-rep";
    case MraAction::Duplicate: return "duplicate";
    case MraAction::Drop: return "drop";
  }
  return "unknown";
}

std::string to_string(DreqAction a) {
  switch (a) {
    case DreqAction::Disconnect: return "disconnect";
    case DreqAction::ResendDrep: return "resend-drep";
    case DreqAction::Duplicate: return "duplicate";
    case DreqAction::Drop: return "drop";
  }
  return "unknown";
}

std::string to_string(TimeoutAction a) {
  switch (a) {
    case TimeoutAction::None: return "none";
    case TimeoutAction::Retransmit: return "retransmit";
    case TimeoutAction::ReqGiveUp: return "req-give-up";
    case TimeoutAction::RepGiveUp: return "rep-give-up";
    case TimeoutAction::DreqGiveUp: return "dreq-give-up";
    case TimeoutAction::SidrGiveUp: return "sidr-give-up";
    case TimeoutAction::ConsumerTooSlow: return "consumer-too-slow";
    case TimeoutAction::TimewaitExit: return "timewait-exit";
  }
  return "unknown";
}

std::string to_string(ConsumerRejectAction a) {
  switch (a) {
    case ConsumerRejectAction::Free: return "free";
    case ConsumerRejectAction::Timewait: return "timewait";
    case ConsumerRejectAction::NotAllowed: return "not-allowed";
  }
  return "unknown";
}

}  // namespace roce::cm
