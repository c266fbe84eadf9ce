// rdma_cm on top of the IB CM, in the role Linux's drivers/infiniband/core/cma.c plays for
// IB and RoCE ports: listeners named by port space, port and (optionally) IP address; the
// Service ID and the 36-byte cma_hdr (addresses and source port) that connect() puts in front
// of the consumer's private data and that an incoming REQ / SIDR_REQ is matched by; and the
// IB CM's events turned into rdma_cm's (CONNECT_REQUEST, ESTABLISHED, REJECTED, UNREACHABLE,
// DISCONNECTED, TIMEWAIT_EXIT). The engine integration owns the QPs: it creates one on
// ConnectRequest, moves it through RTR/RTS with the event's parameters and calls accept() /
// ready_to_use(), as rdma_accept()/rdma_connect() do in the kernel.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "lib/cm/communication_manager.hpp"
#include "protocol/cma_header.hpp"

namespace roce::cm {

inline constexpr std::uint32_t kRdmaUdpQkey = 0x01234567;  // RDMA_UDP_QKEY
inline constexpr std::size_t kRdmaConnectPrivateBytes = proto::kCmReqPrivateBytes - proto::kCmaHeaderBytes;        // 56
inline constexpr std::size_t kRdmaUdResolvePrivateBytes = proto::kCmSidrReqPrivateBytes - proto::kCmaHeaderBytes;  // 180

using ListenerId = std::uint32_t;

enum class RdmaCmEventType : std::uint8_t {
  ConnectRequest,   // passive: a REQ (RC/UC) or SIDR_REQ (UD) for one of our listeners
  ConnectResponse,  // active RC/UC: REP received; move the QP to RTS, then ready_to_use()
  Established,      // RC/UC: RTU exchanged; active UD: SIDR_REP success (remote QPN and Q_Key)
  Rejected,         // the peer sent REJ (or SIDR_REP with a refusal status)
  Unreachable,      // no answer: REQ/REP/SIDR_REQ retries exhausted
  ConnectError,     // the CM gave up on a request the consumer did not answer in time
  Disconnected,     // DREQ or DREP received, or DREQ retries exhausted
  TimewaitExit,     // the ID is gone; its QP may be destroyed or reused
  Count,
};

struct RdmaCmEvent {
  RdmaCmEventType type = RdmaCmEventType::Established;
  CmId id = 0;
  ListenerId listener = 0;  // ConnectRequest, and later events of a passive ID
  bool ud = false;          // the ID resolves a UD service (SIDR), no connection
  proto::RdmaPortSpace port_space = proto::RdmaPortSpace::Tcp;
  std::uint16_t port = 0;   // the listened (passive) or connected-to (active) port
  std::optional<proto::CmaAddressing> addressing;  // from the cma_hdr (none with AF_IB)
  std::uint16_t status = 0; // Rejected: the REJ reason or SIDR status
  std::variant<std::monostate, ReqInfo, RepInfo, SidrReqInfo, SidrRepInfo> detail;
  std::vector<std::uint8_t> private_data;  // the consumer's part (after the cma_hdr)
};

struct RdmaConnectParams {
  proto::RdmaPortSpace port_space = proto::RdmaPortSpace::Tcp;
  proto::IpAddress src;
  proto::IpAddress dst;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  // The QP side of the REQ; service_id, the path GIDs (when left zero) and private_data are
  // filled from the fields above.
  ConnectParams ib;
  std::vector<std::uint8_t> private_data;  // at most 56 bytes
};

struct RdmaUdResolveParams {
  proto::RdmaPortSpace port_space = proto::RdmaPortSpace::Udp;
  proto::IpAddress src;
  proto::IpAddress dst;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  Nanos timeout = 4096 * kMilli;
  std::uint8_t max_cm_retries = 15;
  std::vector<std::uint8_t> private_data;  // at most 180 bytes
};

class RdmaCm {
 public:
  explicit RdmaCm(CommunicationManager& cm) : cm_(cm) {}

  // rdma_bind_addr + rdma_listen: `addr` nullopt (or an any-address) listens on every address.
  Result<ListenerId> listen(proto::RdmaPortSpace ps, std::uint16_t port, std::optional<proto::IpAddress> addr = std::nullopt);
  Status stop_listening(ListenerId id);

  // Every event of the CommunicationManager goes through here; rdma_cm's events come out.
  // Requests no listener takes (wrong address, bad cma_hdr, a connected REQ on a UD port
  // space or a SIDR_REQ on a connected one) are refused here as cma.c refuses them: REJ
  // "consumer defined" / SIDR_REP "rejected".
  void on_cm_event(const CmEvent& e, Nanos now, CmOutput& out, std::vector<RdmaCmEvent>& events);

  Result<CmId> connect(const RdmaConnectParams& p, Nanos now, CmOutput& out);
  Result<CmId> resolve_ud(const RdmaUdResolveParams& p, Nanos now, CmOutput& out);
  // rdma_accept for RC/UC (REP; the REP has no cma_hdr) and for UD (SIDR_REP success with the
  // UD QP's number and Q_Key, RDMA_UDP_QKEY unless given).
  Status accept(CmId id, const AcceptParams& p, Nanos now, CmOutput& out);
  Status accept_ud(CmId id, std::uint32_t qpn, Nanos now, CmOutput& out, std::uint32_t qkey = kRdmaUdpQkey,
                   std::span<const std::uint8_t> private_data = {});
  // rdma_reject: REJ "consumer defined" (SIDR_REP "rejected" for UD) with private data.
  Status reject(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data = {});

  std::size_t tracked_ids() const { return ids_.size(); }

 private:
  struct Listener {
    proto::RdmaPortSpace ps;
    std::uint16_t port;
    std::optional<proto::IpAddress> addr;
  };
  struct IdInfo {
    ListenerId listener = 0;
    bool ud = false;
    proto::RdmaPortSpace ps = proto::RdmaPortSpace::Tcp;
    std::uint16_t port = 0;
    std::optional<proto::CmaAddressing> addressing;
  };

  // The listener for (ps, port) whose address matches dst: a bound one before a wildcard.
  std::optional<ListenerId> match(proto::RdmaPortSpace ps, std::uint16_t port, const std::optional<proto::IpAddress>& dst) const;
  void on_request(const CmEvent& e, Nanos now, CmOutput& out, std::vector<RdmaCmEvent>& events);
  RdmaCmEvent event_for(const CmEvent& e, RdmaCmEventType type) const;

  CommunicationManager& cm_;
  std::map<ListenerId, Listener> listeners_;
  std::map<std::uint64_t, std::size_t> service_users_;  // Service ID -> listeners on it
  ListenerId next_listener_ = 1;
  std::map<CmId, IdInfo> ids_;
};

std::string to_string(RdmaCmEventType t);

}  // namespace roce::cm
