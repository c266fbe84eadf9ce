// roce-gen nvme-*'s in-process target on a lcore of its own: the Target and its queues, polled
// from the target dataplane's worker, which runs on a worker lcore while the initiator keeps
// the main one (issue 24's set-up: initiator and target each on one lcore).
#pragma once

#include <rte_lcore.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "lib/nvmf/rdma_queue.hpp"
#include "lib/nvmf/target.hpp"

namespace roce::client {

// The target's half of the run: the Target and its queues, polled by the target dataplane's
// worker 0 on its own lcore (its app hook), so it never shares a thread with the initiator.
// The initiator's thread reaches it only through Dataplane::call, and learns of a queue the
// target tore down from `failed`.
struct NvmeTargetSide {
  std::unique_ptr<nvmf::Target> target;
  std::vector<std::unique_ptr<nvmf::NvmfRdmaQueue>> queues;  // [0] admin
  std::atomic<bool> failed{false};
  std::string failure;  // written on the target's lcore before `failed`

  void poll(Nanos now) {
    target->poll(now);
    for (auto& q : queues) {
      q->poll(now);
      if (q->torn_down() && !failed.load(std::memory_order_relaxed)) {
        failure = "target dropped queue " + std::to_string(q->queue().config().qid) + ": " + q->queue().failure();
        failed.store(true, std::memory_order_release);
      }
    }
  }
};

// Runs the target dataplane on a worker lcore of the EAL; the main lcore is the initiator's.
class NvmeTargetLcore {
 public:
  explicit NvmeTargetLcore(dp::Dataplane& dp) : dp_(dp) {}
  ~NvmeTargetLcore() { stop(); }
  // Whether the EAL has a worker lcore for the target (with -l 0 alone it has none, and a
  // second thread on the main lcore's CPU would only take turns with the first).
  static bool available() { return rte_get_next_lcore(rte_lcore_id(), 1, 0) < RTE_MAX_LCORE; }
  Status start() {
    const unsigned lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
    if (lcore >= RTE_MAX_LCORE) return make_error(ENODEV, "the EAL has no worker lcore");
    if (Status s = dp_.launch({lcore}); !s) return s;
    launched_ = true;
    return {};
  }
  void stop() {
    if (!launched_) return;
    dp_.stop();
    dp_.wait();
    launched_ = false;
  }

 private:
  dp::Dataplane& dp_;
  bool launched_ = false;
};

}  // namespace roce::client
