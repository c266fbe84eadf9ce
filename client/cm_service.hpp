// rdma_cm for the apps: the CM agent (lib/cm/cm_agent.hpp) runs as a driver on worker 0, which
// owns QP1; this class is its thread-safe face for the control threads of roce-appliance and
// roce-gen, every call going through Dataplane::call. Listeners have an accept queue: a
// connection request beyond it is rejected at once, as a full rdma_listen backlog refuses it.
// The QPs stay the caller's (Connector); connect_qp() moves one through RTR and RTS with the
// attributes a REQ/REP gave (lib/cm/cm_qp_attr.hpp). stop() sends a DREQ for every live
// connection and waits (bounded) for the answers before the agent goes.
//
// Services may share one agent (there is one QP1 per port): each opens a channel, listens on
// it, and takes from it the connection requests of its listeners and every later event of
// those IDs. Events of IDs no listener made (the active side) go to channel 0, the default.
// A closed channel's connection requests are rejected, its other events dropped.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <vector>

#include "client/connector.hpp"
#include "client/driver_set.hpp"
#include "lib/cm/cm_agent.hpp"
#include "lib/cm/cm_qp_attr.hpp"

namespace roce::client {

struct CmServiceConfig {
  cm::CmAgentConfig agent;
  Nanos poll_interval = 1 * kMilli;  // how often a waiting control thread looks for events
  Nanos stop_wait = 2 * kSecond;     // stop(): how long the DREQs may wait for their DREPs
  // Selective repeat (docs/loss.md): the reorder window accepted from a REQ that offers it
  // (qp_limits(); the REP answers with passive_qp_attrs' rep_ece); 0 = go-back-N always.
  std::uint32_t selective_repeat = 0;
};

class CmService {
 public:
  // The node GUID in cfg.agent.cm.local_ca_guid defaults to one made from the port's MAC.
  CmService(dp::Dataplane& dp, DriverSet& drivers, CmServiceConfig cfg = {});
  ~CmService();
  CmService(const CmService&) = delete;
  CmService& operator=(const CmService&) = delete;

  using Channel = std::uint32_t;
  Channel open_channel();
  void close_channel(Channel ch);

  Result<cm::ListenerId> listen(proto::RdmaPortSpace ps, std::uint16_t port, std::size_t accept_queue = 64, Channel ch = 0);

  // rdma_cm events of a channel that came within `wait` (returns as soon as there are some).
  // Connection requests beyond a listener's accept queue were rejected and are not among them.
  std::vector<cm::RdmaCmEvent> wait_events(Nanos wait, const std::atomic<bool>* stop = nullptr, Channel ch = 0);

  Status accept(cm::CmId id, const cm::AcceptParams& p);
  Status accept_ud(cm::CmId id, std::uint32_t qpn, std::uint32_t qkey = cm::kRdmaUdpQkey, std::span<const std::uint8_t> private_data = {});
  Status reject(cm::CmId id, std::span<const std::uint8_t> private_data = {});
  // Active side. The peer's MAC is resolved first (ARP, up to arp_wait); the path GIDs are
  // filled from the addresses when left zero, in `p` (active_qp_attrs needs them).
  Result<cm::CmId> connect(cm::RdmaConnectParams& p, Nanos arp_wait = 3 * kSecond);
  Result<cm::CmId> resolve_ud(const cm::RdmaUdResolveParams& p, Nanos arp_wait = 3 * kSecond);
  Status ready_to_use(cm::CmId id);
  Status notify_established(cm::CmId id);
  Status disconnect(cm::CmId id);
  void destroy(cm::CmId id);
  // DREQ for every established connection; waits until every ID is gone or in TIMEWAIT, or wait.
  void disconnect_all(Nanos wait);
  // The same for some IDs only (one service's, when services share the agent).
  void disconnect_ids(const std::vector<cm::CmId>& ids, Nanos wait);
  void stop();

  // A UD QP in INIT to RTS with rdma_cm's Q_Key (RDMA_UDP_QKEY unless given).
  Status ready_ud_qp(const LocalQp& qp, std::uint32_t qkey = cm::kRdmaUdpQkey);
  // Moves a QP in INIT through RTR and RTS with what the CM exchange decided (ARP first).
  Status connect_qp(const LocalQp& qp, ibv_qp_type type, const cm::CmQpAttrs& a, Nanos arp_wait = 3 * kSecond);

  cm::CmQpLimits qp_limits() const;
  ibv_gid local_gid() const { return rdma::gid_from_ip(dp_.local().ip); }
  // The agent's, the CM's and QP1's counters.
  std::map<std::string, std::uint64_t> counters();
  std::size_t live_ids();

 private:
  void establish_elsewhere();
  template <typename F>
  auto on_agent(F&& f) {
    return dp_.call(0, [&](rdma::Engine&) { return f(*agent_); });
  }

  dp::Dataplane& dp_;
  DriverSet& drivers_;
  CmServiceConfig cfg_;
  std::unique_ptr<cm::CmAgent> agent_;
  std::uint64_t driver_id_ = 0;
  bool stopped_ = false;
  // Event routing between channels (control threads).
  std::mutex route_mutex_;
  Channel next_channel_ = 1;
  std::map<cm::ListenerId, Channel> listener_channel_;
  std::map<Channel, std::vector<cm::RdmaCmEvent>> pending_;  // open channels' undelivered events
  std::set<Channel> closed_;
};

}  // namespace roce::client
