// What goes in and out of the CommunicationManager: where MADs come from and go to, the
// consumer's parameters for connect / accept / SIDR, the events it gets back, and the CM's
// own configuration. Names and value conventions follow Linux's ib_cm (include/rdma/ib_cm.h)
// so that the engine integration maps them onto verbs QP attributes the way rdma_cm does.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "lib/cm/cm_state.hpp"
#include "lib/cm/ece.hpp"
#include "lib/time.hpp"
#include "protocol/cm_connect.hpp"
#include "protocol/cm_reject.hpp"
#include "protocol/cm_sidr.hpp"
#include "protocol/gid.hpp"
#include "protocol/gsi.hpp"
#include "protocol/mad.hpp"
#include "protocol/mtu.hpp"

namespace roce::cm {

using proto::Gid;
using proto::Mad;

// A communication ID: our Local Communication ID of the connection (or SIDR request).
using CmId = std::uint32_t;

// The other end of a MAD exchange: its port GID (an IPv4-mapped GID for IPv4), the QP its CM
// agent sends from (QP1, as the DETH source QP says), and the P_Key of the exchange.
struct MadPeer {
  Gid gid{};
  std::uint32_t qpn = proto::kGsiQpn;
  std::uint16_t pkey = 0xFFFF;
  friend bool operator==(const MadPeer&, const MadPeer&) = default;
};

struct OutMad {
  MadPeer to;
  Mad mad;
};

// The primary path of a REQ as the active side fills it (rdma_cm's RoCE route): GIDs,
// hop limit, traffic class, flow label, SL, rate and packet lifetime (18 on RoCE).
struct PathParams {
  Gid local_gid{};
  Gid remote_gid{};
  std::uint32_t flow_label = 0;
  std::uint8_t traffic_class = 0;
  std::uint8_t hop_limit = 64;
  std::uint8_t sl = 0;
  std::uint8_t packet_rate = 0;
  std::uint8_t packet_life_time = 18;  // CMA_IBOE_PACKET_LIFETIME
};

// Active side: ib_send_cm_req()'s parameters. starting_psn is the PSN this QP expects to
// receive (its rq_psn): the peer sends with it (rdma-cm.md 7).
struct ConnectParams {
  std::uint64_t service_id = 0;
  PathParams path{};
  std::uint16_t pkey = 0xFFFF;
  std::uint32_t local_qpn = 0;
  std::uint32_t starting_psn = 0;
  proto::CmTransport transport = proto::CmTransport::Rc;
  std::uint8_t responder_resources = 0;  // RDMA READs/atomics this QP takes in at once
  std::uint8_t initiator_depth = 0;      // RDMA READs/atomics this QP has outstanding at once
  std::uint8_t retry_count = 7;
  std::uint8_t rnr_retry_count = 7;
  proto::PathMtu path_mtu = proto::PathMtu::Mtu1024;
  bool srq = false;
  bool flow_control = false;
  std::uint8_t remote_cm_response_timeout = 20;  // CMA_CM_RESPONSE_TIMEOUT
  std::uint8_t local_cm_response_timeout = 20;
  std::uint8_t max_cm_retries = 15;              // CMA_MAX_CM_RETRIES
  std::uint32_t local_qkey = 0;
  std::vector<std::uint8_t> private_data;        // at most 92 bytes
  Ece ece{};                                     // ece.hpp: selective_repeat_ece() offers selective repeat
};

// Passive side: ib_send_cm_rep()'s parameters. starting_psn as in ConnectParams.
struct AcceptParams {
  std::uint32_t local_qpn = 0;
  std::uint32_t starting_psn = 0;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t rnr_retry_count = 7;  // what the peer should use towards us
  std::uint8_t failover_accepted = 0;
  bool flow_control = false;
  bool srq = false;
  std::uint32_t local_qkey = 0;
  std::vector<std::uint8_t> private_data;  // at most 196 bytes
  Ece ece{};                               // ece.hpp: answer_selective_repeat() to the REQ's
};

struct SidrRequestParams {
  std::uint64_t service_id = 0;
  MadPeer peer{};
  Nanos timeout = 4096 * kMilli;  // rdma_cm: 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms
  std::uint8_t max_cm_retries = 15;
  std::vector<std::uint8_t> private_data;  // at most 216 bytes
};

struct SidrReplyParams {
  proto::SidrStatus status = proto::SidrStatus::Success;
  std::uint32_t qpn = 0;
  std::uint32_t qkey = 0;
  std::vector<std::uint8_t> info;          // additional information, at most 72 bytes
  std::vector<std::uint8_t> private_data;  // at most 136 bytes
};

enum class CmEventType : std::uint8_t {
  ReqReceived,      // passive: a connection request for a listened Service ID (detail: ReqInfo)
  RepReceived,      // active: the passive side accepted (detail: RepInfo); answer with ready_to_use()
  Established,      // RTU received (passive) or sent (active), or the QP saw traffic first
  RejReceived,      // the peer rejected (detail: RejInfo); the ID is gone or in TIMEWAIT
  MraReceived,      // the peer asked for more time (detail: MraInfo)
  DreqReceived,     // the peer disconnects
  DrepReceived,     // the peer answered our DREQ
  TimewaitExit,     // the ID is freed
  ReqError,         // REQ retries exhausted (rdma_cm: UNREACHABLE); the ID is freed
  RepError,         // REP retries exhausted; the ID is in TIMEWAIT
  DreqError,        // DREQ retries exhausted; the ID is in TIMEWAIT
  ConsumerTimeout,  // the consumer did not answer a REQ/REP/SIDR_REQ in time; the CM rejected it
  SidrReqReceived,  // passive SIDR (detail: SidrReqInfo)
  SidrRepReceived,  // active SIDR answered (detail: SidrRepInfo); the ID is freed
  SidrReqError,     // SIDR_REQ retries exhausted; the ID is freed
  Count,
};

// A REQ as the passive consumer needs it to build its QP, with Linux's conventions
// (cm_format_req_event): responder_resources / initiator_depth are already swapped into this
// side's view, and starting_psn is the PSN this side sends with (sq_psn).
struct ReqInfo {
  std::uint64_t service_id = 0;
  std::uint64_t listen_id = 0;  // the Service ID the matching listen() was given
  MadPeer from{};
  std::uint32_t remote_comm_id = 0;
  std::uint64_t remote_ca_guid = 0;
  std::uint32_t remote_qpn = 0;
  std::uint32_t remote_qkey = 0;
  proto::CmTransport transport = proto::CmTransport::Rc;
  std::uint32_t starting_psn = 0;
  std::uint8_t responder_resources = 0;  // = REQ initiator depth: our max_dest_rd_atomic bound
  std::uint8_t initiator_depth = 0;      // = REQ responder resources: our max_rd_atomic bound
  std::uint8_t path_mtu = 0;             // IBA MTU enumeration
  std::uint8_t retry_count = 0;
  std::uint8_t rnr_retry_count = 0;
  std::uint8_t local_ack_timeout = 0;    // primary path, for the QP's timeout attribute
  std::uint8_t remote_cm_response_timeout = 0;
  std::uint8_t local_cm_response_timeout = 0;
  std::uint8_t max_cm_retries = 0;
  bool flow_control = false;
  bool srq = false;
  std::uint16_t pkey = 0;
  proto::CmReqPath primary{};  // as the REQ carries it (local = the active side)
  Ece ece{};
};

// A REP as the active consumer needs it (cm_format_rep_event): swapped like ReqInfo.
struct RepInfo {
  std::uint32_t remote_comm_id = 0;
  std::uint64_t remote_ca_guid = 0;
  std::uint32_t remote_qpn = 0;
  std::uint32_t remote_qkey = 0;
  std::uint32_t starting_psn = 0;        // this side's sq_psn
  std::uint8_t responder_resources = 0;  // = REP initiator depth
  std::uint8_t initiator_depth = 0;      // = REP responder resources
  std::uint8_t target_ack_delay = 0;
  std::uint8_t failover_accepted = 0;
  std::uint8_t rnr_retry_count = 0;
  bool flow_control = false;
  bool srq = false;
  Ece ece{};
};

struct RejInfo {
  std::uint16_t reason = 0;
  proto::CmMessage message_rejected = proto::CmMessage::Req;
  std::vector<std::uint8_t> ari;
};

struct MraInfo {
  std::uint8_t service_timeout = 0;
};

struct SidrReqInfo {
  std::uint64_t service_id = 0;
  std::uint64_t listen_id = 0;
  MadPeer from{};
  std::uint32_t request_id = 0;
  std::uint16_t pkey = 0;
};

struct SidrRepInfo {
  std::uint8_t status = 0;
  std::uint32_t qpn = 0;
  std::uint32_t qkey = 0;
  std::uint64_t service_id = 0;
  std::vector<std::uint8_t> info;
};

struct CmEvent {
  CmEventType type = CmEventType::Established;
  CmId id = 0;
  std::variant<std::monostate, ReqInfo, RepInfo, RejInfo, MraInfo, SidrReqInfo, SidrRepInfo> detail;
  std::vector<std::uint8_t> private_data;  // the message's whole private data field
};

// What one call into the CM produced: MADs to send (in order) and events for the consumer.
struct CmOutput {
  std::vector<OutMad> mads;
  std::vector<CmEvent> events;
  void clear() {
    mads.clear();
    events.clear();
  }
};

struct CmConfig {
  std::uint64_t local_ca_guid = 0;    // node GUID (REQ/REP Local CA GUID, REJ timeout ARI)
  std::uint8_t ack_delay = 15;        // the CA's ACK delay (REP Target ACK Delay); rxe 15
  std::uint32_t tid_high = 1;         // high 32 bits of the TIDs we start (Linux: the MAD agent)
  std::uint32_t id_seed = 0x4791;     // seeds Local Communication IDs
  std::uint8_t class_resp_time = 20;  // ClassPortInfo RespTimeValue
  // rdma_cm answers a duplicate REQ the consumer has not decided on with an MRA (service
  // timeout 24, CMA_CM_MRA_SETTING) so that the active side waits longer; 0 disables.
  std::uint8_t mra_service_timeout = 24;
  bool auto_drep = true;              // answer a DREQ at once, as rdma_cm does
  // A peer's CM response timeouts (REQ Local CM Response Timeout, MRA Service Timeout) are
  // used up to this exponent: 31 would hold a half-open ID for 16 x 2.3 hours. 24 (67 s) is
  // what rdma_cm itself asks for in its MRA.
  std::uint8_t max_peer_response_timeout = 24;
  // Bounded state: a REQ beyond these gets REJ "no resources".
  std::size_t max_connections = 65536;        // every ID, TIMEWAIT included
  std::size_t max_half_open = 1024;           // passive IDs not yet established
  std::size_t max_half_open_per_peer = 128;   // ... from one source GID
  // How long the consumer may take to answer a REQ, a REP (with RTU) or a SIDR_REQ before the
  // CM rejects it with reason "timeout" and frees the ID.
  Nanos consumer_timeout = 30 * kSecond;
  // A SIDR_REP is kept this long to answer a retransmitted SIDR_REQ with the same reply: longer
  // than rdma_cm's whole SIDR retry window (16 x 4096 ms), so that a request is never delivered
  // to the consumer twice.
  Nanos sidr_reply_cache = 120 * kSecond;
  std::size_t max_sidr_reply_cache = 4096;
  // Transports a REQ may ask for; others get REJ "invalid transport type".
  bool accept_uc = true;
  // A REQ or SIDR_REQ for a Service ID nobody listens on is refused at once (REJ "invalid
  // service ID", SIDR_REP "service ID not supported"), as Linux's cm.c does. With a hold it is
  // first kept up to this long, unanswered, and delivered if a listener comes meanwhile: for a
  // consumer whose listen reaches the CM a moment after its peer asks (perftest -R's UD data
  // QP's SIDR_REQ, 100 ms after its control connection, against a server whose rdma_listen
  // goes through the verbs service). Retransmissions of a held request are dropped as
  // duplicates. 0: no hold.
  Nanos unmatched_request_hold = 0;
  std::size_t max_held_requests = 64;  // while this many are held, the next is refused at once
};

std::string to_string(CmEventType t);

}  // namespace roce::cm
