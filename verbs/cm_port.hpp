// The RDMA CM of the device in library mode: lib/cm's CM agent on the engine's QP1, in the
// program's own process, and the program's rdma_cm IDs that use it. The agent is polled after
// every dataplane iteration (whichever thread steps, the engine lock held); its rdma_cm events
// are routed to the IDs' event channels: a connection request makes the passive ID there, as
// the kernel does for librdmacm. What an event asks of the QP (the REP's RTR/RTS and RTU) is done
// on the program's thread when it takes the event (rdma_get_cm_event), as librdmacm does.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "lib/cm/cm_agent.hpp"
#include "lib/cm/cm_qp_attr.hpp"
#include "verbs/cm_objects.hpp"
#include "verbs/runtime.hpp"

namespace roce::verbs {

class CmPort : public CompletionWatch {
 public:
  // The device's CM, started on first use (the device, its context for rdma_cm_id::verbs and
  // the agent on QP1). nullptr with errno set when the device cannot be opened.
  static CmPort* get();

  Runtime& rt() { return rt_; }
  ibv_context* verbs() { return verbs_; }
  ibv_pd* default_pd();  // for rdma_create_qp without a PD
  // The engine lock held for all of these.
  cm::CmAgent& agent() { return *agent_; }
  Nanos now() { return rt_.now(); }
  cm::CmQpLimits limits() const;
  void track(cm::CmId id, CmIdent* owner) { by_cm_[id] = owner; }
  void forget(CmIdent* owner);
  void track_listener(cm::ListenerId l, CmIdent* owner) { by_listener_[l] = owner; }
  rdma::IpAddress local_ip() const { return rt_.local().ip; }

  // Polls the agent and routes its events (after every dataplane iteration).
  bool check() override;

  // How long rdma_connect keeps asking a peer that has no listener for the service yet, and how
  // often (see retry_later).
  static constexpr Nanos kNoListenerWindow = 2 * kSecond;
  static constexpr Nanos kNoListenerGap = 100 * kMilli;
  // The passive side's grace for the same race the other way round (the peer's client, our
  // server): a REQ or SIDR_REQ for a service nobody listens on yet is held this long before it
  // is refused, and delivered if the listener comes meanwhile (CmConfig::unmatched_request_hold).
  // perftest -R -c UD's client sends its data QP's SIDR_REQ 100 ms after the control connection,
  // and our server, through the verbs service, could listen later than that under load.
  static constexpr Nanos kUnmatchedRequestHold = 1 * kSecond;

 private:
  CmPort(Runtime& rt, ibv_context* verbs);
  void route(cm::RdmaCmEvent& e);
  // A connection attempt the peer refused because nothing listens on its service (REJ "invalid
  // service ID", SIDR_REP "service ID not supported") is sent again after kNoListenerGap while
  // the ID's window lasts, and the program sees the refusal only after that. perftest -R's
  // client connects its data QPs as soon as the handshake on its control connection ends, and
  // its server calls rdma_listen only after that same handshake: a fast client against a slow
  // server lost the race about once in five runs (REJECTED, then a crash in perftest's error
  // path). True when the event was taken for a retry.
  bool retry_later(CmIdent& id, cm::RdmaCmEvent& e);
  void send_retries();
  struct Retry {
    CmIdent* id;
    Nanos at;
    cm::RdmaCmEvent refusal;  // delivered if the request cannot be sent again
  };

  Runtime& rt_;
  ibv_context* verbs_;
  ibv_pd* pd_ = nullptr;
  std::unique_ptr<cm::CmAgent> agent_;
  std::map<cm::CmId, CmIdent*> by_cm_;
  std::map<cm::ListenerId, CmIdent*> by_listener_;
  std::vector<Retry> retries_;
};

// The one place an ID's state changes.
void move_to(CmIdent& id, CmIdState to);

// Queues an event on a channel (counts it on the eventfd). Any thread, no lock needed.
void post_event(CmChannel& ch, CmEventBox* e);

// A passive ID for a connection request (route(); engine lock held).
CmIdent* make_passive_id(CmIdent& listener, const cm::RdmaCmEvent& e);

// A synchronous ID's wait for the event its call raised (librdmacm's ucma_complete): 0, or -1
// with errno (ECONNREFUSED for REJECTED, else the event's status). Other IDs: 0 at once.
int sync_complete(CmIdent& id);

// The CQs (and completion channels) rdma_create_qp makes for an ID when it is given none, and
// their teardown (rdma_destroy_qp); errno values.
int make_id_cqs(CmIdent& id, const ibv_qp_init_attr_ex& attr);
void destroy_id_cqs(CmIdent& id);

// A random 24-bit PSN.
std::uint32_t random_psn();
// An address and port as a sockaddr of the address's family (the rest zeroed).
void set_sockaddr(sockaddr_storage& s, const proto::IpAddress& ip, std::uint16_t port);

}  // namespace roce::verbs
