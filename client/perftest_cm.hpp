// perftest -R's rdma_cm steps, for roce-gen's client (perftest 4.5's rdma_client_connect and
// _rdma_cm_client_connection, src/perftest_communication.c): the control channel's RC connection
// (TCP port space, perftest's port, no responder resources, retry and RNR retry 7), then one
// connection per data QP to the same port once the server listens for them (responder resources
// = initiator depth = the QP's outstanding READs for READ and atomic tests, else 0; retry and RNR
// retry = --retry_count, 7), and at the end a DREQ per data connection, as rdma_cm_disconnect_nodes.
#pragma once

#include <vector>

#include "client/cm_channel.hpp"
#include "client/cm_service.hpp"
#include "client/connector.hpp"

namespace roce::client {

// Events of several rdma_cm IDs on one control thread, each taken when its owner asks.
class CmEventQueue {
 public:
  explicit CmEventQueue(CmService& cms) : cms_(cms) {}
  // The next event of `id` within `wait`; ETIMEDOUT when none came.
  Result<cm::RdmaCmEvent> next(cm::CmId id, Nanos wait);
  // Takes what came (waiting up to `wait` when nothing has) without handing anything out.
  void pump(Nanos wait);
  // The next event of `id` already taken, if any.
  std::optional<cm::RdmaCmEvent> take(cm::CmId id);

 private:
  CmService& cms_;
  std::vector<cm::RdmaCmEvent> pending_;
};

struct CmRcConnect {
  rdma::IpAddress server{};  // either family, as the dataplane's own
  std::uint16_t port = 18515;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t retry_count = 7;
  std::uint8_t rnr_retry_count = 7;
  ibv_mtu mtu = IBV_MTU_1024;  // the REQ's path MTU
  Nanos timeout = 10 * kSecond;
  bool srq = false;  // the QP takes its receives from an SRQ: the REQ says so (librdmacm: !!qp->srq)
  // The reorder window the REQ offers for selective repeat (its ECE, lib/cm/ece.hpp); 0 = none.
  std::uint32_t selective_repeat = 0;
};

// REQ, REP, the QP to RTR/RTS with what they agreed, RTU (rdma_connect). A REJ is ECONNREFUSED
// with its reason in `reject_reason`. `agreed_window` gets the selective repeat window the REP
// accepted (0: go-back-N).
Result<cm::CmId> cm_connect_rc(dp::Dataplane& dp, CmService& cms, CmEventQueue& events, const LocalQp& qp,
                               const CmRcConnect& c, std::uint16_t* reject_reason = nullptr,
                               std::uint32_t* agreed_window = nullptr);

// perftest -R with -c UD (rdma_cm_route_handler for a UD ID): a SIDR_REQ in the UDP port space
// to the server's port for `qp` (already at RTS with rdma_cm's Q_Key: CmService::ready_ud_qp);
// the SIDR_REP's QPN and Q_Key are what the data SENDs go to. A refusal is ECONNREFUSED with its
// status in `reject_reason`.
Result<cm::SidrRepInfo> cm_resolve_ud(dp::Dataplane& dp, CmService& cms, CmEventQueue& events,
                                      const CmRcConnect& c, std::uint16_t* reject_reason = nullptr);

}  // namespace roce::client
