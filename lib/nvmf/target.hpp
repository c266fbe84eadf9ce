// The NVMe-oF target: subsystems, the discovery subsystem, and the controllers hosts create by
// Fabrics Connect. Transport-agnostic: queues (queue.hpp) feed it commands and carry out the
// data movement it asks for. Time comes from the caller (keep-alive).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/nvmf/subsystem.hpp"
#include "lib/time.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::nvmf {

class NvmfQueue;

struct TargetConfig {
  std::uint16_t max_io_queues = 8;
  std::uint16_t max_queue_depth = 128;   // CAP.MQES + 1 (I/O queues)
  std::uint16_t admin_queue_depth = proto::nvme::kAdminQueueDepth;
  std::uint32_t inline_data_size = 4096;  // in-capsule data on I/O queues (IOCCSZ)
  std::uint8_t mdts = 5;                  // max transfer 2^mdts x 4 KiB
  std::uint8_t aerl = 3;                  // 0's based: 4 AERs held at most
  std::uint32_t kas_100ms = 10;           // keep-alive granularity in Identify (KAS)
  // Discovery log entries describe this port.
  std::string traddr = "0.0.0.0";
  std::uint16_t trsvcid = proto::nvme::kNvmeRdmaPort;
  std::uint16_t portid = 1;
  std::string model = "rocev2-dp NVMe-oF target";
  std::string firmware = "1.0";

  std::uint32_t max_transfer() const { return 4096u << mdts; }
};

// NVMe controller registers (Property Get/Set) and their fields.
namespace reg {
inline constexpr std::uint32_t kCcEn = 1u << 0;
inline constexpr std::uint32_t kCcShnMask = 3u << 14;
inline constexpr std::uint32_t kCstsRdy = 1u << 0;
inline constexpr std::uint32_t kCstsCfs = 1u << 1;
inline constexpr std::uint32_t kCstsShstComplete = 2u << 2;
inline constexpr std::uint32_t kVersion = 0x00010300;  // NVMe 1.3
}  // namespace reg

// Counters a controller keeps for SMART / health information.
struct HealthCounters {
  std::uint64_t data_units_read = 0;     // thousands of 512-byte units, rounded up
  std::uint64_t data_units_written = 0;
  std::uint64_t read_bytes = 0;
  std::uint64_t written_bytes = 0;
  std::uint64_t host_reads = 0;
  std::uint64_t host_writes = 0;
  std::uint64_t media_errors = 0;
};

inline constexpr std::size_t kErrorLogEntries = 64;
inline constexpr std::uint32_t kCtrattTbkas = 1u << 6;  // Identify CTRATT: traffic-based keep alive
inline constexpr std::uint32_t kAecNamespaceAttribute = 1u << 8;  // Async Event Config / OAES bit
// AEN completion DW0: type Notice (2), info Namespace Attribute Changed (0), log page 0x04.
inline constexpr std::uint32_t kAenNamespaceChanged = 2u | 0u << 8 | 0x04u << 16;
inline constexpr std::size_t kChangedNsListMax = 1024;

struct Controller {
  std::uint16_t cntlid = 0;
  Subsystem* subsystem = nullptr;  // nullptr: the discovery controller
  std::string hostnqn;
  std::array<std::uint8_t, 16> hostid{};
  std::uint32_t cc = 0;
  std::uint32_t csts = 0;
  std::uint32_t kato_ms = 0;
  Nanos last_keep_alive = 0;  // the last command (any, with TBKAS) or Keep Alive
  Nanos ka_deadline = 0;      // the end of the Keep Alive Timer's period (0: starts from last_keep_alive)
  std::uint16_t io_queues = 0;   // granted by Set Features Number of Queues (count, not 0's based)
  bool io_queues_set = false;
  std::uint32_t async_event_config = 0;
  std::uint32_t arbitration = 0;
  bool write_cache = true;  // Volatile Write Cache feature (Identify VWC = 1)
  std::vector<std::uint16_t> held_aers;  // CIDs of outstanding Asynchronous Event Requests
  // Namespace attribute notices: NSIDs changed since the host last read log page 0x04, and
  // whether the notice is masked (sent, log not read yet) or waiting for an AER to carry it.
  std::vector<std::uint32_t> changed_nsids;
  bool ns_notice_masked = false;
  bool ns_notice_pending = false;
  // Queues by QID (0 admin); a reset or a keep-alive expiry fails them.
  std::vector<NvmfQueue*> queues;
  std::array<proto::nvme::ErrorLogEntry, kErrorLogEntries> error_log{};
  std::uint64_t error_count = 0;
  HealthCounters health;

  bool discovery() const { return subsystem == nullptr; }
  bool ready() const { return (csts & reg::kCstsRdy) != 0; }
  void log_error(std::uint16_t sqid, const proto::nvme::Sqe& sqe, proto::nvme::NvmeStatus st, std::uint64_t lba);
};

class Target {
 public:
  explicit Target(TargetConfig cfg = {});
  ~Target();

  const TargetConfig& config() const { return cfg_; }
  Result<Subsystem*> add_subsystem(const std::string& nqn, const std::string& serial);
  Subsystem* find_subsystem(const std::string& nqn) const;
  // EBUSY while a controller of it lives (its hosts disconnect first); the discovery log changes.
  Status remove_subsystem(const std::string& nqn);
  std::size_t controllers_of(const Subsystem* sub) const;
  const std::map<std::string, std::unique_ptr<Subsystem>>& subsystems() const { return subsystems_; }

  // Controllers: created by an admin Connect, gone with the admin queue.
  Controller* create_controller(Subsystem* subsystem, const std::string& hostnqn, Nanos now);
  Controller* find_controller(std::uint16_t cntlid) const;
  void destroy_controller(std::uint16_t cntlid);
  std::size_t controller_count() const { return controllers_.size(); }

  // Keep-alive, as Linux's nvmet keeps it: the timer runs KATO from the admin Connect or the
  // last Keep Alive; at the end of a period, a controller that got any command in it (TBKAS)
  // gets another period, one that got none fails (CSTS.CFS) and its queues are disconnected.
  // A silent host is so failed between one and two KATO after its last command: a host whose
  // next command waits on a retransmission (a lost rdma_cm REQ of an I/O queue: 6 s; the
  // host sends no Keep Alive before its I/O queues are up) is not failed for a moment over
  // KATO. Returns the number that expired now.
  std::size_t poll(Nanos now);
  std::uint64_t keep_alive_expiries() const { return keep_alive_expiries_; }

  // A namespace of `sub` was added, removed or changed: every controller of it that enabled
  // namespace attribute notices (Async Event Config bit 8) gets an asynchronous event, on a
  // held AER or on the next one.
  void notify_namespace_changed(const Subsystem* sub, std::uint32_t nsid);

  // The discovery log page (LID 0x70) a host sees: one entry per subsystem it may connect to.
  std::vector<std::byte> discovery_log(const std::string& hostnqn) const;
  std::uint64_t discovery_generation() const { return generation_; }
  void bump_generation() { ++generation_; }

 private:
  TargetConfig cfg_;
  std::map<std::string, std::unique_ptr<Subsystem>> subsystems_;
  std::map<std::uint16_t, std::unique_ptr<Controller>> controllers_;
  std::uint16_t next_cntlid_ = 1;
  std::uint64_t keep_alive_expiries_ = 0;
  std::uint64_t generation_ = 1;
};

// Fails a controller (CSTS.CFS) and every queue of it: keep-alive expiry, bad CC.
void fail_controller(Controller& c);
// CC.EN 1 -> 0: I/O queues go away, the controller is no longer ready.
void reset_controller(Controller& c);

}  // namespace roce::nvmf
