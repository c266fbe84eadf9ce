// The CM's decisions as pure functions of (state, message): what a received MAD or an expired
// timer does to a connection. CommunicationManager carries them out; tests pin them down as
// tables. Where IBA leaves a choice, Linux's cm.c is followed, except where noted.
#pragma once

#include <cstdint>
#include <string>

#include "lib/cm/cm_state.hpp"
#include "protocol/cm_reject.hpp"

namespace roce::cm {

// A REQ whose (remote comm ID, remote CA GUID) matches an existing ID (cm_dup_req_handler).
enum class DuplicateReqAction : std::uint8_t {
  Drop,          // the original exchange is on its way
  SendMra,       // the consumer is still deciding: ask for more time (rdma_cm's delayed MRA)
  ResendMra,
  ResendRep,     // the REP was lost: send it again now (Linux waits for its REP timer)
  RejectStale,   // the connection is over (TIMEWAIT): REJ "stale connection"
};
DuplicateReqAction on_duplicate_req(CmState existing, bool mra_enabled);

// A new REQ, checked in the order Linux's cm_req_handler and IBA 12.6.5 check it.
enum class NewReqVerdict : std::uint8_t {
  Deliver,
  RejectStale,         // its (remote QPN, CA GUID) belongs to a live connection
  RejectNoListener,    // nobody listens on the Service ID
  RejectNoResources,   // an ID cap is reached
  RejectTransport,     // a transport service type we do not offer
  RejectMtu,           // a path MTU outside the IBA enumeration
};
struct NewReqFacts {
  bool remote_qpn_in_use = false;
  bool listener = false;
  bool room = true;
  bool transport_supported = true;
  bool mtu_valid = true;
};
NewReqVerdict decide_new_req(const NewReqFacts& f);
proto::RejReason rej_reason_of(NewReqVerdict v);

// A REP for one of our IDs (cm_rep_handler / cm_dup_rep_handler).
enum class RepAction : std::uint8_t { Accept, ResendRtu, ResendMra, Duplicate, Drop };
RepAction on_rep(CmState s);

// An RTU: ESTABLISHED from REP_SENT / MRA_REP_RCVD, a duplicate otherwise.
bool rtu_establishes(CmState s);

// A REJ naming one of our IDs (cm_rej_handler): free it, keep it in TIMEWAIT, or ignore.
enum class RejAction : std::uint8_t { Free, Timewait, Drop };
RejAction on_rej(CmState s, std::uint16_t reason);

// An MRA (cm_mra_handler): extend the REQ or REP timer, or not.
enum class MraAction : std::uint8_t { ExtendReq, ExtendRep, Duplicate, Drop };
MraAction on_mra(CmState s, proto::CmMessage mraed);

// A DREQ naming one of our IDs with our QPN (cm_dreq_handler).
enum class DreqAction : std::uint8_t { Disconnect, ResendDrep, Duplicate, Drop };
DreqAction on_dreq(CmState s);

// A DREP: TIMEWAIT from DREQ_SENT / DREQ_RCVD.
bool drep_completes(CmState s);

// The timer of an ID expired.
enum class TimeoutAction : std::uint8_t {
  None,
  Retransmit,        // REQ, REP, DREQ or SIDR_REQ again
  ReqGiveUp,         // REJ timeout, free, ReqError
  RepGiveUp,         // REJ timeout, TIMEWAIT, RepError
  DreqGiveUp,        // TIMEWAIT, DreqError
  SidrGiveUp,        // free, SidrReqError
  ConsumerTooSlow,   // REJ timeout (or SIDR_REP rejected, or DREP), ConsumerTimeout
  TimewaitExit,      // free, TimewaitExit
};
TimeoutAction on_timeout(CmState s, bool retries_left);

// How a REJ from an ID in state s looks (cm_format_rej): which message it rejects, and whether
// the Local Comm ID is 0 (a REQ the consumer turned down before any REP).
struct RejShape {
  proto::CmMessage message = proto::CmMessage::Other;
  bool zero_local_id = false;
};
RejShape rej_shape(CmState s);

// The consumer rejects (ib_send_cm_rej): from which states, and where the ID goes.
enum class ConsumerRejectAction : std::uint8_t { Free, Timewait, NotAllowed };
ConsumerRejectAction on_consumer_reject(CmState s);

std::string to_string(DuplicateReqAction a);
std::string to_string(NewReqVerdict v);
std::string to_string(RepAction a);
std::string to_string(RejAction a);
std::string to_string(MraAction a);
std::string to_string(DreqAction a);
std::string to_string(TimeoutAction a);
std::string to_string(ConsumerRejectAction a);

}  // namespace roce::cm
