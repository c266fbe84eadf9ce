// roce-appliance's NVMe-oF target over rdma_cm (--nvmf-subsystem): listens on the TCP port
// space (4420 by default), answers each connect request from its NVMe/RDMA private data
// (lib/nvmf/cm_private_data.hpp: REP with CRQSIZE, or REJ with the binding's status), and
// carries each accepted connection's queue (admin or I/O, one per QP) with an NvmfRdmaQueue.
// The target, every queue and the keep-alive clock live on worker 0 (one driver there polls
// them all), so lib/nvmf stays single-threaded; the control thread only handles CM events and
// changes the set of queues through Dataplane::call. The discovery subsystem is the target's.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/cm_service.hpp"
#include "client/connector.hpp"
#include "client/driver_set.hpp"
#include "lib/nvmf/rdma_queue.hpp"
#include "lib/nvmf/target.hpp"

namespace roce::client {

struct NvmfNamespaceSpec {
  bool file = false;
  std::string path;            // file:PATH
  std::uint64_t bytes = 0;     // mem:SIZE, or the size a new file gets (0: the file's own size)
};

struct NvmfOptions {
  std::string subsystem;                 // NQN; empty: no NVMe-oF service
  std::vector<NvmfNamespaceSpec> namespaces;  // NSIDs 1, 2, ... in order
  std::vector<std::string> allowed_hosts;     // none: any host
  std::uint16_t port = proto::nvme::kNvmeRdmaPort;
  std::uint32_t block_size = 512;
  std::size_t accept_queue = 64;
  std::uint32_t selective_repeat = 0;  // the reorder window accepted from a REQ that offers it (0: never)
  bool enabled() const { return !subsystem.empty(); }
};

// "mem:16M", "mem:67108864", "file:/path" or "file:/path:64M" -> a namespace spec.
Result<NvmfNamespaceSpec> parse_nvmf_namespace(const std::string& text);

class NvmfService {
 public:
  // `shared`: a CM agent other services use too (roce-appliance with --rdma-cm as well); none:
  // the service runs its own.
  NvmfService(dp::Dataplane& dp, DriverSet& drivers, Connector& conn, NvmfOptions o, std::shared_ptr<CmService> shared = nullptr);
  ~NvmfService();
  NvmfService(const NvmfService&) = delete;
  NvmfService& operator=(const NvmfService&) = delete;

  Status start();
  // DREQ for every live connection (bounded wait), then the queues, QPs and target go.
  void stop();

  struct Totals {
    std::uint64_t accepted = 0;
    std::uint64_t rejected = 0;      // REJ with an NVMe/RDMA status (or a local failure)
    std::uint64_t disconnected = 0;  // queues ended by a DREQ / disconnect
    std::uint64_t torn_down = 0;     // queues the target failed (fatal capsule, keep-alive, reset)
  };
  Totals totals();
  std::size_t live_queues();

  // A subsystem's namespaces (`subnqn` empty: --nvmf-subsystem's), changed while hosts are
  // connected (the control socket): each change is announced to the controllers that asked for
  // Namespace Attribute Changed notices (an AER completes; the host reads the Changed Namespace
  // List and rescans). A file backing is opened (or created) here, on the calling thread, before
  // the namespace joins the target.
  struct NamespaceInfo {
    std::uint32_t nsid = 0;
    bool file = false;
    std::string path;
    std::uint64_t blocks = 0;
    std::uint32_t block_size = 0;
  };
  Result<std::vector<NamespaceInfo>> namespaces(const std::string& subnqn = {});
  // nsid 0: the lowest free NSID. Returns the NSID given.
  Result<std::uint32_t> add_namespace(const NvmfNamespaceSpec& spec, std::uint32_t nsid = 0, const std::string& subnqn = {});
  Status remove_namespace(std::uint32_t nsid, const std::string& subnqn = {});

  // Subsystems and their allowed hosts, changed on the control socket. A new subsystem has no
  // namespaces and admits any host; one with connected controllers is not removed (EBUSY). A
  // host taken off the list is refused at its next Connect (any queue; its live queues stay).
  struct SubsystemInfo {
    std::string nqn;
    std::string serial;
    bool allow_any_host = true;
    std::vector<std::string> hosts;
    std::size_t namespaces = 0;
    std::size_t controllers = 0;
  };
  Result<std::vector<SubsystemInfo>> subsystems();
  Status add_subsystem(const std::string& nqn);
  Status remove_subsystem(const std::string& nqn);
  Status allow_host(const std::string& host, const std::string& subnqn = {});
  Status disallow_host(const std::string& host, const std::string& subnqn = {});
  Status allow_any_host(bool any, const std::string& subnqn = {});
  nvmf::TargetConfig target_config() const { return tcfg_; }

 private:
  struct Conn {
    cm::CmId id = 0;
    std::string peer;
    std::uint16_t qid = 0;
    LocalQp qp;
    nvmf::NvmfRdmaQueue* queue = nullptr;  // owned by queues_ (worker 0)
    bool disconnecting = false;
  };
  void loop();
  void on_event(const cm::RdmaCmEvent& e);
  void on_request(const cm::RdmaCmEvent& e);
  void drop_queue(Conn& c);     // the queue goes (worker 0); the QP stays until TIMEWAIT
  void release(cm::CmId id);    // queue and QP go
  void poll_worker(Nanos now);  // worker 0's driver
  Status change_hosts(const std::string& subnqn, const std::function<Status(nvmf::Subsystem&)>& change);
  Result<std::unique_ptr<nvmf::NamespaceStore>> open_store(const NvmfNamespaceSpec& n, std::uint32_t nsid) const;

  dp::Dataplane& dp_;
  DriverSet& drivers_;
  Connector& conn_;
  NvmfOptions o_;
  nvmf::TargetConfig tcfg_;
  std::unique_ptr<nvmf::Target> target_;
  std::mutex namespaces_mutex_;           // one subsystem, host or namespace change at a time
  std::shared_ptr<CmService> cm_;
  bool shared_cm_ = false;
  CmService::Channel channel_ = 0;
  std::uint64_t driver_ = 0;
  // Worker 0 only (changed through Dataplane::call).
  std::map<nvmf::NvmfRdmaQueue*, std::unique_ptr<nvmf::NvmfRdmaQueue>> queues_;
  std::atomic<std::size_t> queue_count_{0};
  std::map<cm::CmId, Conn> conns_;  // control thread only
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex totals_mutex_;
  Totals totals_;
};

}  // namespace roce::client
