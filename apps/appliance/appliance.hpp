// roce-appliance: a host with a plain NIC becomes a RoCEv2 endpoint. It exposes a memory
// region (optionally a file), accepts ibv_rc_pingpong and perftest clients over TCP, serves
// WRITE, READ, SEND (sink or echo) and atomics, and answers a local control socket.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "apps/appliance/cm_listeners.hpp"
#include "apps/appliance/nvmf_service.hpp"
#include "apps/appliance/control_socket.hpp"
#include "client/buffers.hpp"
#include "client/oob/refusal.hpp"
#include "client/oob_server.hpp"
#include "client/runtime.hpp"
#include "client/waiting_room.hpp"
#include "lib/util/json_fields.hpp"

namespace roce::client {

struct ApplianceOptions {
  std::string dev;
  std::vector<std::string> vdevs;
  rdma::IpAddress ip{};  // IPv4 or IPv6: the port's one GID
  std::uint64_t mr_bytes = 64ull << 20;
  std::string mr_file;  // back the exposed region with this file
  std::uint64_t recv_bytes = 8ull << 20;  // ib_send_lat -a sends up to 8 MiB
  std::uint32_t recv_depth = 256;
  bool use_srq = false;  // perftest's --use-srq: a session's QPs share one receive queue
  // The perftest test the clients run, where the server must act (ib_send_lat, ib_write_lat).
  std::optional<ServedTest> test;
  std::string listen_ip = "0.0.0.0";
  std::uint16_t oob_port = 18515;
  QpParams qp;
  // Selective repeat with a rocev2-dp client that offers it (TCP exchange: ServerConfig; -R and
  // the other rdma_cm listeners: the REQ's ECE); 0 = go-back-N with everyone.
  std::uint32_t selective_repeat = kDefaultSelectiveRepeatWindow;
  std::string control_socket;  // empty: none
  ControlLimits control;
  double status_interval_s = 1;
  std::string report_path;     // "-" = stdout
  double duration_s = 0;       // > 0: stop after this long
  unsigned workers = 1;
  bool dcqcn = false;
  cc::Profile dcqcn_profile = cc::Profile::Paper;
  double line_rate_gbps = 10;
  dp::BacklogConfig backlog_marks{};  // marks from the RX queue's backlog (dataplane/rx_backlog.hpp); off by default
  bool overrun_marks = true;  // the port's receive drops marked CE (dataplane/overrun.hpp); false: only counted
  std::uint32_t max_sessions = 64;
  // Connections that have not sent a byte yet wait (without a session) up to this long; the
  // handshake of a session must also finish within it.
  int handshake_timeout_ms = 5'000;
  std::size_t max_waiting = 256;  // such connections at once; the longest silent makes way
  // Resource limits (EngineConfig / MrTable): what one client can take.
  std::uint32_t max_qps = 1024;       // per worker
  std::uint32_t max_mrs = 4096;       // all workers
  std::uint32_t max_qp_wr = 16384;    // outstanding WRs per queue
  std::uint8_t max_rd_atomic = 16;    // outstanding READ/atomics per QP
  // Bytes of memory regions in all (exposed, receive, and those create_mr makes).
  std::uint64_t mr_quota = 1ull << 30;
  CmListenOptions rdma_cm;  // --rdma-cm: rping / ucmatose servers over rdma_cm
  NvmfOptions nvmf;         // --nvmf-subsystem: the NVMe-oF target over rdma_cm
};

// The last few of something that may happen without end (failed sessions), and how many
// there were in all: what the report keeps cannot grow with the appliance's uptime.
template <typename T>
class Recent {
 public:
  explicit Recent(std::size_t keep) : keep_(keep) {}
  void add(T v) {
    ++total_;
    items_.push_back(std::move(v));
    if (items_.size() > keep_) items_.pop_front();
  }
  const std::deque<T>& items() const { return items_; }
  std::uint64_t total() const { return total_; }
  std::uint64_t dropped() const { return total_ - items_.size(); }

 private:
  std::size_t keep_;
  std::deque<T> items_;
  std::uint64_t total_ = 0;
};

class Appliance {
 public:
  static constexpr std::size_t kKeptReports = 32;  // finished sessions and errors the report lists

  Appliance(dp::Dataplane& dp, ApplianceOptions o);
  ~Appliance();

  // Registers memory, starts the control socket and the TCP listener.
  Status start();
  // Accepts and serves until stop is requested; prints a status line every interval.
  void run();
  void stop();
  std::string report_json();
  // The TCP port the exchange listens on (the one chosen when --oob-port was 0).
  std::uint16_t oob_port() const { return listener_ ? listener_->port() : o_.oob_port; }

  // One control socket command of one control client (apps/appliance/commands.cpp).
  std::string handle(ControlSocket::ClientId client, const JsonValue& cmd);
  // A control client has gone: the QPs and regions it made go with it.
  void client_closed(ControlSocket::ClientId client);

 private:
  struct Session {
    std::uint64_t id = 0;
    std::string peer;
    std::chrono::steady_clock::time_point started;
    std::thread thread;
    std::atomic<bool> stop{false};  // the appliance stops, or `disconnect` ends this one
    std::atomic<bool> done{false};
    Result<SessionReport> report = make_error(EINPROGRESS, "running");
  };
  struct CreatedMr {
    MappedBuffer memory;
    const rdma::MemoryRegion* mr = nullptr;
    ControlSocket::ClientId owner = 0;
  };
  struct CreatedQp {
    LocalQp qp;
    ibv_qp_type type = IBV_QPT_RC;
    ControlSocket::ClientId owner = 0;
    bool connected = false;
    bool connecting = false;  // connect_qp runs on it: it cannot be destroyed meanwhile
  };
  using CommandFn = std::string (Appliance::*)(ControlSocket::ClientId, const JsonValue&);
  struct Command {
    std::string_view name;
    std::span<const JsonField> fields;
    CommandFn run;
  };
  static std::span<const Command> commands();

  void accept_one(TcpStream tcp);
  // Runs one exchange's session on its own thread: a TCP connection's, or a perftest -R
  // client's rdma_cm control channel (whose data QPs come in `cm_qps`). Called with mutex_ held.
  void start_session(std::shared_ptr<OobChannel> channel, std::shared_ptr<PerftestCmQps> cm_qps);
  void refuse(const std::string& peer, const std::string& why);
  void reap_sessions(bool all);
  std::string status_line(double seconds);

  // Control commands.
  std::string cmd_report(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_stop(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_list_qps(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_list_mrs(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_list_sessions(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_create_mr(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_destroy_mr(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_create_qp(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_connect_qp(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_destroy_qp(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_disconnect(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_namespaces(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_add_namespace(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_remove_namespace(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_subsystems(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_add_subsystem(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_remove_subsystem(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_allow_host(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_disallow_host(ControlSocket::ClientId, const JsonValue&);
  std::string cmd_nvmf_allow_any_host(ControlSocket::ClientId, const JsonValue&);
  // Deregisters a created region and releases its memory once no worker can be using it.
  void release_mr(CreatedMr& m);

  dp::Dataplane& dp_;
  ApplianceOptions o_;
  MappedBuffer exposed_, recv_;
  const rdma::MemoryRegion* exposed_mr_ = nullptr;
  const rdma::MemoryRegion* recv_mr_ = nullptr;
  std::unique_ptr<Connector> conn_;
  std::unique_ptr<DriverSet> drivers_;
  std::unique_ptr<TcpListener> listener_;
  std::unique_ptr<WaitingRoom> waiting_;
  std::shared_ptr<CmService> shared_cm_;  // one CM agent for --rdma-cm and --nvmf-subsystem together
  std::unique_ptr<CmListeners> cm_listeners_;
  std::unique_ptr<NvmfService> nvmf_;
  ControlSocket control_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // everything below
  std::list<std::unique_ptr<Session>> sessions_;
  std::uint64_t next_session_id_ = 1;
  Recent<SessionReport> finished_{kKeptReports};
  std::uint64_t failed_sessions_ = 0;
  std::uint64_t refused_sessions_ = 0;   // --max-sessions reached
  std::uint64_t handshakes_dropped_ = 0; // silent connections closed (timeout or making way)
  Recent<std::string> session_errors_{kKeptReports};
  std::list<CreatedMr> created_mrs_;
  std::vector<CreatedQp> created_qps_;
  std::uint64_t mr_bytes_in_use_ = 0;  // counted against o_.mr_quota
  std::mutex mr_mutex_;  // one registration or deregistration at a time (MrTable's writers)
  std::chrono::steady_clock::time_point started_;
  std::uint64_t last_rx_bytes_ = 0, last_tx_bytes_ = 0;
};

// "12 GiB", "64 MiB", "4096 B": sizes in messages.
std::string size_text(std::uint64_t bytes);

}  // namespace roce::client
