// The CM agent of one port: lib/cm's CommunicationManager and RdmaCm driven by the engine that
// owns QP1 (lib/rdma/gsi_port.hpp). It runs on that engine's thread, once per loop iteration
// (poll) and for each consumer call (run): MADs QP1 received go to the CM, the CM's timers run
// on the engine's clock, the MADs it answers with go back to QP1 addressed by the peer's MAC
// (learned from its MADs, else the engine's resolver), and rdma_cm's events queue up for the
// consumer. Control path: it allocates; the data QPs' packet path never comes here.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "lib/cm/rdma_cm.hpp"
#include "lib/rdma/engine.hpp"

namespace roce::cm {

struct CmAgentConfig {
  CmConfig cm;
  std::size_t max_events = 4096;     // rdma_cm events the consumer has not taken yet
  std::size_t max_learned_macs = 4096;
};

enum class CmAgentCounter : std::uint8_t {
  MadsIn,          // MADs handed to the CM
  MadsOut,         // MADs queued on QP1
  NoRoute,         // a MAD to a peer whose MAC is unknown (the CM's retransmission tries again)
  QueueFull,       // QP1's send ring was full
  EventsDropped,   // the consumer let max_events pile up
  AcceptQueueFull, // a connection request beyond its listener's accept queue: rejected
  EstablishedByTraffic,  // a passive ID whose RTU had not come established by its QP's first packet
  Count,
};
std::string to_string(CmAgentCounter c);

class CmAgent {
 public:
  // Attaches to the engine's QP1; detach() (on the engine's thread) lets it go, as does the
  // destructor if detach() was not called.
  CmAgent(const CmAgentConfig& cfg, rdma::Engine& engine);
  ~CmAgent();
  void detach();
  CmAgent(const CmAgent&) = delete;
  CmAgent& operator=(const CmAgent&) = delete;

  // Received MADs, then expired CM timers; everything they produce is sent / queued.
  void poll(Nanos now);
  // A consumer call: fn(RdmaCm&, CommunicationManager&, CmOutput&) -> R, whose output is then
  // sent and whose events are queued like poll()'s.
  template <typename F>
  auto run(Nanos now, F&& fn) {
    CmOutput out;
    auto r = fn(rdma_, cm_, out);
    dispatch(out, now);
    return r;
  }
  // rdma_listen with a backlog: a request beyond `accept_queue` undecided ones is rejected at
  // once (REJ "consumer defined", SIDR_REP "rejected") and never reaches the consumer.
  Result<ListenerId> listen(proto::RdmaPortSpace ps, std::uint16_t port, std::size_t accept_queue);
  // The consumer's decisions on a request (rdma_accept / rdma_reject); they free its place.
  Status accept(CmId id, const AcceptParams& p, Nanos now);
  Status accept_ud(CmId id, std::uint32_t qpn, std::uint32_t qkey, std::span<const std::uint8_t> private_data, Nanos now);
  Status reject(CmId id, std::span<const std::uint8_t> private_data, Nanos now);

  // COMM_EST: the passive IDs awaiting their RTU whose QP (on this engine) has received a
  // packet are established (poll() does this each time). The awaiting IDs whose QP is not on
  // this engine (another worker's) go to `elsewhere` with its QPN, for their owner to check.
  void establish_by_traffic(Nanos now, std::vector<std::pair<CmId, std::uint32_t>>* elsewhere);
  // The same for a QP of another engine that has received a packet.
  Status established_by_traffic(CmId id, Nanos now);

  // rdma_cm events, oldest first, since the last call.
  std::vector<RdmaCmEvent> take_events();
  bool has_events() const { return !events_.empty(); }

  CommunicationManager& cm() { return cm_; }
  RdmaCm& rdma() { return rdma_; }
  std::uint64_t counter(CmAgentCounter c) const { return counters_[static_cast<std::size_t>(c)]; }
  // The agent's, the CM's and QP1's counters under stable names.
  void for_each_counter(const std::function<void(const std::string&, std::uint64_t)>& f) const;

 private:
  void dispatch(CmOutput& out, Nanos now);
  void send(const OutMad& m);
  void decided(CmId id);
  void count(CmAgentCounter c) { ++counters_[static_cast<std::size_t>(c)]; }

  CmAgentConfig cfg_;
  rdma::Engine& engine_;
  bool attached_ = true;
  CommunicationManager cm_;
  RdmaCm rdma_;
  std::vector<RdmaCmEvent> events_;
  struct Backlog {
    std::size_t capacity = 0;
    std::size_t waiting = 0;  // requests handed out, not yet accepted or rejected
  };
  std::map<ListenerId, Backlog> backlogs_;
  std::map<CmId, ListenerId> undecided_;
  std::map<Gid, proto::MacAddr> macs_;  // peers' MACs as their MADs came
  std::vector<CmId> established_scratch_;
  std::array<std::uint64_t, static_cast<std::size_t>(CmAgentCounter::Count)> counters_{};
};

}  // namespace roce::cm
