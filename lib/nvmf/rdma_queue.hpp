// Carries one NvmfQueue over one RC QueuePair of lib/rdma: command capsules arrive as SENDs
// into posted receives, host data is fetched with RDMA READ, read data is placed with RDMA
// WRITE, and the response capsule is a SEND (SEND_WITH_INVALIDATE when the host asked) posted
// right after the WRITE on the same QP, so RC ordering lands the data before the CQE.
// Zero-copy commands (slot.zero_copy) move data from or into a memory namespace's blocks: each
// such namespace is registered once (local access only: the host never gets a key to it) and
// its region kept while the queue lives or until another namespace needs the place.
// The caller creates and connects the QP (later: rdma_cm accept) with at least depth
// receives, 4 x depth sends (a WRITE and a SEND for each of 2 x depth command slots), and
// max_rd_atomic for the READs.
#pragma once

#include <memory>
#include <vector>

#include "lib/nvmf/queue.hpp"
#include "lib/rdma/engine.hpp"

namespace roce::nvmf {

class NvmfRdmaQueue {
 public:
  static Result<std::unique_ptr<NvmfRdmaQueue>> create(Target& target, rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp,
                                                       rdma::CompletionQueue* cq, QueueConfig cfg);
  ~NvmfRdmaQueue();

  // Handles the CQ's completions; returns how many. Tears the QP down (error state) when the
  // queue fails: a fatal capsule, a failed RDMA operation, a controller reset or keep-alive
  // expiry.
  int poll(Nanos now);
  NvmfQueue& queue() { return queue_; }
  bool torn_down() const { return torn_down_; }
  rdma::QueuePair* qp() const { return qp_; }
  std::uint64_t rdma_errors() const { return rdma_errors_; }
  std::uint64_t backlogged() const { return backlogged_; }

 private:
  NvmfRdmaQueue(Target& target, rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp, rdma::CompletionQueue* cq, QueueConfig cfg);
  Status start();
  void act(const Step& step, Nanos now);
  bool post_recv(std::uint32_t index);
  // The lkey for slot.data; a namespace that cannot be registered sends the slot back to its
  // buffer (NvmfQueue::drop_zero_copy).
  std::uint32_t data_lkey(CommandSlot& s);
  // Runs the capsule in receive `index` and gives the receive back to the QP.
  void take_capsule(std::uint32_t index, std::uint32_t length, Nanos now);
  void teardown(const std::string& why);

  rdma::Engine& engine_;
  rdma::PdHandle pd_;
  rdma::QueuePair* qp_;
  rdma::CompletionQueue* cq_;
  NvmfQueue queue_;
  std::uint32_t recv_stride_;
  std::vector<std::byte> recv_buf_;
  std::vector<proto::nvme::Cqe> responses_;  // one per slot
  const rdma::MemoryRegion* recv_mr_ = nullptr;
  const rdma::MemoryRegion* data_mr_ = nullptr;
  const rdma::MemoryRegion* resp_mr_ = nullptr;
  struct NamespaceRegion {
    std::uint64_t ns_id;
    const rdma::MemoryRegion* mr;
  };
  static constexpr std::size_t kNamespaceRegions = 8;
  std::vector<NamespaceRegion> ns_regions_;  // capacity kNamespaceRegions, oldest first
  // Capsules that arrived while every command slot was busy (responses not yet acknowledged):
  // they wait in their receive buffers, which go back to the QP only once they ran, so the
  // host meets RNR NAKs rather than a lost command.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> backlog_;  // ring of (receive index, length)
  std::size_t backlog_head_ = 0;
  std::size_t backlog_count_ = 0;
  bool torn_down_ = false;
  std::uint64_t rdma_errors_ = 0;
  std::uint64_t backlogged_ = 0;
};

}  // namespace roce::nvmf
