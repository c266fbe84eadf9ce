// One NVMe queue (one RC QP): takes command capsules, checks them, runs them against the
// target and says what the transport must do next. The transport owns the QP; this class owns
// the command slots and their data buffers (one pool the transport registers once).
//
//   on_capsule        -> FetchData: RDMA READ slot.length bytes at (remote_addr, rkey) into
//                        slot.data, then call on_data_fetched
//                     -> Respond:   RDMA WRITE slot.data[0, to_host_length) to
//                        (remote_addr, rkey) if to_host_length > 0, then SEND slot.cqe
//                        (SEND_WITH_INVALIDATE of slot.rkey when slot.invalidate)
//                     -> Hold:      nothing now (Asynchronous Event Request, or a command
//                        waiting for an overlapping zero-copy transfer: retry_waiting)
//                     -> Fatal:     tear the connection down (failure() says why)
//   on_response_sent  -> the slot is free again
//
// Zero copy: Read and Write on a memory namespace move their data straight between the host
// and the namespace's blocks (slot.data points into them, slot.zero_copy holds the namespace),
// the transport registers NamespaceStore::memory() for that; in-capsule write data goes from
// the receive buffer to the blocks. File namespaces and overlapping commands take the slot's
// buffer (NamespaceStore::begin_transfer says when).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/nvmf/target.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::nvmf {

struct QueueConfig {
  std::uint16_t qid = 0;          // from the rdma_cm connect private data
  std::uint16_t depth = 32;       // HSQSIZE + 1
  std::uint32_t inline_size = 0;  // in-capsule data bytes this queue accepts
  std::uint32_t max_transfer = 8192;
};
// The queue config a Connect to `qid` gets on this target (inline data on I/O queues only).
QueueConfig queue_config_for(const TargetConfig& t, std::uint16_t qid, std::uint16_t depth);

enum class SlotState : std::uint8_t { Free, FetchingData, Responding, Held, Waiting };
enum class NextStep : std::uint8_t { FetchData, Respond, Hold, Fatal };
std::string to_string(NextStep s);

enum class Direction : std::uint8_t { None, FromHost, ToHost };

struct CommandSlot {
  std::uint16_t index = 0;
  SlotState state = SlotState::Free;
  proto::nvme::Sqe sqe;
  proto::nvme::Cqe cqe;
  std::span<std::byte> buffer;       // the slot's own, registered with the queue's data_pool()
  // Where the data moves from or to: `buffer`, or blocks of the namespace `zero_copy` holds
  // while the transfer runs (begin_transfer'd under this slot's address).
  std::span<std::byte> data;
  std::shared_ptr<NamespaceStore> zero_copy;
  // A command waiting for an overlapping transfer holds its namespace's waiter count.
  std::shared_ptr<NamespaceStore> waits_on;
  proto::ByteSpan capsule_data;      // in-capsule data, while on_capsule runs
  Direction dir = Direction::None;
  std::uint32_t length = 0;          // data bytes of the command
  std::uint32_t to_host_length = 0;  // bytes to RDMA WRITE before the response
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  bool invalidate = false;           // answer with SEND_WITH_INVALIDATE(rkey)
};

struct Step {
  NextStep next = NextStep::Fatal;
  CommandSlot* slot = nullptr;
};

enum class QueueCounter : std::uint8_t {
  Commands,
  Errors,           // responses with a non-success status
  DataFetches,      // RDMA READs asked for
  DataFetchErrors,  // RDMA READs that failed
  ShortCapsules,
  Overflows,        // a capsule with every slot busy: the host ignored SQSIZE
  ZeroCopy,         // Reads and Writes moved straight from or into a namespace's memory
  Waits,            // commands that waited for an overlapping zero-copy transfer
  Count,
};
std::string to_string(QueueCounter c);

class NvmfQueue {
 public:
  NvmfQueue(Target& target, QueueConfig cfg);
  ~NvmfQueue();
  NvmfQueue(const NvmfQueue&) = delete;
  NvmfQueue& operator=(const NvmfQueue&) = delete;

  Step on_capsule(proto::ByteSpan capsule, Nanos now);
  Step on_data_fetched(CommandSlot& slot, bool ok, Nanos now);
  void on_response_sent(CommandSlot& slot);
  // Completes the held AER with `cid` (an event came); its Respond step waits in ready().
  bool complete_held(std::uint16_t cid, std::uint32_t dw0);
  // Held commands completed since the last call: the transport acts on each as on a Respond.
  CommandSlot* pop_ready();
  // Runs the commands that waited for an overlapping transfer, if it ended; those that
  // completed wait in pop_ready().
  void retry_waiting(Nanos now);
  std::size_t waiting() const { return waiting_; }
  // The transport could not map slot.zero_copy's memory: the slot goes back to its buffer
  // (a read's data copied there).
  void drop_zero_copy(CommandSlot& slot);
  // The transport stopped touching every slot's data (its QP is in error or gone): every
  // zero-copy transfer and wait ends.
  void release_transfers();
  // The connection went away (disconnect, QP error): an admin queue takes its controller along.
  void disconnect();

  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  void fail(std::string why);

  const QueueConfig& config() const { return cfg_; }
  std::uint16_t qid() const { return cfg_.qid; }
  Controller* controller() const { return ctrl_; }
  std::span<std::byte> data_pool() { return pool_; }
  std::uint16_t sq_head() const { return sq_head_; }
  std::uint64_t count(QueueCounter c) const { return counters_[static_cast<std::size_t>(c)]; }
  std::size_t busy_slots() const { return busy_; }
  bool has_free_slot() const { return busy_ < slots_.size(); }
  CommandSlot& slot(std::uint32_t index) { return slots_[index]; }

 private:
  friend struct CommandContext;
  Step execute(CommandSlot& slot, Nanos now);
  Step connect(CommandSlot& slot, Nanos now);  // fabrics_commands.cpp
  Step property(CommandSlot& slot);
  Step complete(CommandSlot& slot, proto::nvme::NvmeStatus st, std::uint64_t lba = 0);
  void end_zero_copy(CommandSlot& slot);
  void end_wait(CommandSlot& slot);
  void bump(QueueCounter c) { ++counters_[static_cast<std::size_t>(c)]; }

  Target& target_;
  QueueConfig cfg_;
  Controller* ctrl_ = nullptr;
  std::vector<CommandSlot> slots_;
  std::vector<std::byte> pool_;
  std::uint16_t sq_head_ = 0;
  std::size_t busy_ = 0;
  std::size_t waiting_ = 0;
  std::vector<CommandSlot*> ready_;  // completed held commands (capacity: every slot)
  bool failed_ = false;
  std::string failure_;
  std::array<std::uint64_t, static_cast<std::size_t>(QueueCounter::Count)> counters_{};
};

// What a command does with data, decided before the data moves: direction, byte count, or an
// error status (bad namespace, LBA range, size) that ends the command without data.
struct DataPlan {
  Direction dir = Direction::None;
  std::uint32_t length = 0;
  proto::nvme::NvmeStatus status;
  std::uint64_t lba = 0;  // for the error log
  NamespaceStore* ns = nullptr;  // Read and Write
  std::uint64_t nlb = 0;
};
DataPlan plan_data(const proto::nvme::Sqe& sqe, bool admin_queue, const Controller* ctrl);

// Command execution, by queue kind; they fill slot.cqe.dw0/dw1 and slot.to_host_length.
proto::nvme::NvmeStatus execute_admin(Target& t, Controller& c, CommandSlot& slot, Nanos now);
proto::nvme::NvmeStatus execute_io(Controller& c, CommandSlot& slot);
// The namespace an I/O command must wait for (an overlapping zero-copy transfer in flight),
// or null when it can run now.
NamespaceStore* io_conflict(const Controller& c, const CommandSlot& slot);

}  // namespace roce::nvmf
