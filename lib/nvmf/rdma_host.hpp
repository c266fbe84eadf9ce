// An NVMe/RDMA host queue over one RC QueuePair of lib/rdma: the initiator side, for tests and
// roce-gen's nvme modes. Each CID has a data buffer; commands carry a keyed SGL to it (with its
// own memory region when the target is asked to invalidate the key) or their data in the
// capsule. Responses are matched to their CID.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lib/rdma/engine.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::nvmf {

enum class SglMode : std::uint8_t {
  None,             // NULL keyed SGL (no data)
  Keyed,            // keyed data block to the CID's buffer, the queue's shared key
  KeyedInvalidate,  // keyed, a key of its own that the target invalidates with the response
  InCapsule,        // the data rides in the command capsule
  AsGiven,          // sqe.sgl1 as the caller built it (bad SGLs in tests)
};

struct HostCompletion {
  proto::nvme::Cqe cqe;
  bool invalidated = false;          // the response came as SEND_WITH_INVALIDATE
  std::uint32_t invalidated_rkey = 0;
  bool invalidated_expected_key = false;  // and it named the key this command registered
  proto::nvme::NvmeStatus status() const { return proto::nvme::NvmeStatus::from_field(cqe.status.get()); }
};

struct HostQueueConfig {
  std::uint16_t depth = 32;          // commands in flight (CIDs 0..depth-1)
  std::uint32_t max_transfer = 8192;
  std::uint32_t inline_size = 0;     // in-capsule bytes the target accepts on this queue
};

class NvmfRdmaHost {
 public:
  static Result<std::unique_ptr<NvmfRdmaHost>> create(rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp, rdma::CompletionQueue* cq,
                                                      HostQueueConfig cfg);
  ~NvmfRdmaHost();

  // The data buffer of a CID: fill it before a write, read it after a read.
  std::span<std::byte> buffer(std::uint16_t cid);
  std::uint32_t shared_rkey() const { return data_mr_->rkey(); }
  // A free CID, if any.
  std::optional<std::uint16_t> free_cid() const;
  // Sends `sqe` under `cid` (its CID field is set here) with `data_len` bytes of data as
  // `mode` says.
  Status submit(std::uint16_t cid, proto::nvme::Sqe sqe, std::uint32_t data_len, SglMode mode);
  // Sends arbitrary bytes as a capsule (malformed-input tests).
  Status send_raw(std::span<const std::byte> capsule);

  int poll();
  // The response of `cid`, once it came; frees the CID.
  std::optional<HostCompletion> take(std::uint16_t cid);
  // The next CID whose response came (in arrival order) and that is still to be taken: a
  // caller with many commands in flight takes what completed without asking every CID.
  std::optional<std::uint16_t> next_completed();
  bool outstanding(std::uint16_t cid) const { return slots_[cid].busy; }
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  std::uint64_t unmatched_responses() const { return unmatched_; }

 private:
  struct Slot {
    bool busy = false;
    bool done = false;
    const rdma::MemoryRegion* own_mr = nullptr;  // KeyedInvalidate
    HostCompletion completion;
  };
  NvmfRdmaHost(rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp, rdma::CompletionQueue* cq, HostQueueConfig cfg);
  Status start();
  bool post_recv(std::uint32_t index);
  void push_completed(std::uint16_t cid);
  void fail(std::string why);

  rdma::Engine& engine_;
  rdma::PdHandle pd_;
  rdma::QueuePair* qp_;
  rdma::CompletionQueue* cq_;
  HostQueueConfig cfg_;
  std::vector<std::byte> data_;
  std::vector<std::byte> capsules_;  // one send buffer per CID (SQE + in-capsule data)
  std::vector<std::byte> raw_;       // send_raw's buffer
  std::vector<std::byte> recv_;      // one response buffer per receive
  const rdma::MemoryRegion* data_mr_ = nullptr;
  const rdma::MemoryRegion* capsule_mr_ = nullptr;
  const rdma::MemoryRegion* raw_mr_ = nullptr;
  const rdma::MemoryRegion* recv_mr_ = nullptr;
  std::vector<Slot> slots_;
  // CIDs in the order their responses came, a ring of depth entries; an entry whose CID was
  // taken meanwhile (through take()) is skipped.
  std::vector<std::uint16_t> completed_;
  std::uint32_t completed_head_ = 0, completed_count_ = 0;
  std::uint32_t recv_count_ = 0;
  bool failed_ = false;
  std::string failure_;
  std::uint64_t unmatched_ = 0;
};

}  // namespace roce::nvmf
