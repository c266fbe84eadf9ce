// Puts a scenario into an engine: QPs with the scenario's QPNs (the engine hands QPNs out in
// slot order, so gaps are filled with QPs that are destroyed again), memory regions with
// their contents and the mapping from the capture's keys, and the receives and work requests
// that a replay posts at their times.
#pragma once

#include <memory>
#include <vector>

#include "apps/replay/counter_snapshot.hpp"
#include "apps/replay/key_map.hpp"
#include "apps/replay/scenario.hpp"
#include "lib/rdma/engine.hpp"

namespace roce::replay {

// The engine settings a scenario needs: addresses, DCQCN, and a QPN range starting at its
// lowest QPN.
rdma::EngineConfig engine_config(const Scenario& s);

// Something to do at a time during the replay besides receiving a frame.
struct Action {
  enum class Kind : std::uint8_t { PostRecv, PostSend } kind = Kind::PostRecv;
  Nanos at = 0;
  std::size_t index = 0;  // into Scenario::recvs or Scenario::wrs
};

std::string to_string(Action::Kind k);

class ReplaySetup {
 public:
  // `s` must outlive the setup; the setup must go before the engine's MrTable does.
  static Result<std::unique_ptr<ReplaySetup>> create(rdma::Engine& e, const Scenario& s);
  ~ReplaySetup();
  ReplaySetup(const ReplaySetup&) = delete;
  ReplaySetup& operator=(const ReplaySetup&) = delete;

  const KeyMap& keys() const { return keys_; }
  // The receives and work requests in time order (stable: file order within one time).
  const std::vector<Action>& actions() const { return actions_; }
  Status apply(const Action& a);
  // Takes every completion off the CQ.
  void poll_completions();
  const Completions& completions() const { return wc_; }

 private:
  ReplaySetup(rdma::Engine& e, const Scenario& s) : engine_(e), s_(s) {}
  Status build();
  Status create_qps();
  Status bring_up(rdma::QueuePair* qp, const QpSpec& q);
  Status register_regions();
  Status post_recv(const RecvSpec& r, std::size_t index);
  Status post_send(const WrSpec& w);

  struct Region {
    std::vector<std::byte> memory;
    const rdma::MemoryRegion* mr = nullptr;
  };

  rdma::Engine& engine_;
  const Scenario& s_;
  rdma::PdHandle pd_ = 0;
  rdma::CompletionQueue* cq_ = nullptr;
  std::vector<rdma::QueuePair*> qps_;  // in Scenario::qps order
  std::vector<Region> regions_;  // Scenario::mrs, then one per [recv]
  std::vector<std::size_t> recv_region_;
  KeyMap keys_;
  std::vector<Action> actions_;
  Completions wc_;
};

}  // namespace roce::replay
