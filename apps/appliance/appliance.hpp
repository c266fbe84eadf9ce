// roce-appliance: a host with a plain NIC becomes a RoCEv2 endpoint. It exposes a memory
// region (optionally a file), accepts ibv_rc_pingpong and perftest clients over TCP, serves
// WRITE, READ, SEND (sink or echo) and atomics, and answers a local control socket.
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apps/appliance/control_socket.hpp"
#include "apps/common/buffers.hpp"
#include "apps/common/oob_server.hpp"
#include "apps/common/runtime.hpp"

namespace roce::app {

struct ApplianceOptions {
  std::string dev;
  std::vector<std::string> vdevs;
  proto::Ipv4Addr ip{};
  std::uint64_t mr_bytes = 64ull << 20;
  std::string mr_file;  // back the exposed region with this file
  std::uint64_t recv_bytes = 8ull << 20;  // ib_send_lat -a sends up to 8 MiB
  std::uint32_t recv_depth = 256;
  // The perftest test the clients run, where the server must act (ib_send_lat, ib_write_lat).
  std::optional<ServedTest> test;
  std::string listen_ip = "0.0.0.0";
  std::uint16_t oob_port = 18515;
  QpParams qp;
  std::string control_socket;  // empty: none
  double status_interval_s = 1;
  std::string report_path;     // "-" = stdout
  double duration_s = 0;       // > 0: stop after this long
  unsigned workers = 1;
  bool dcqcn = false;
  cc::Profile dcqcn_profile = cc::Profile::Paper;
  double line_rate_gbps = 10;
  std::uint32_t max_sessions = 64;
  // Resource limits (EngineConfig / MrTable): what one client can take.
  std::uint32_t max_qps = 1024;       // per worker
  std::uint32_t max_mrs = 4096;       // all workers
  std::uint32_t max_qp_wr = 16384;    // outstanding WRs per queue
  std::uint8_t max_rd_atomic = 16;    // outstanding READ/atomics per QP
};

struct ManualMr {
  MappedBuffer memory;
  const MemoryRegion* mr = nullptr;
};

class Appliance {
 public:
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

  // Control socket commands.
  std::string handle(const JsonValue& cmd);

 private:
  struct Session {
    std::thread thread;
    std::atomic<bool> done{false};
    Result<SessionReport> report = make_error(EINPROGRESS, "running");
  };
  void accept_one(TcpStream tcp);
  void reap_sessions(bool all);
  std::string status_line(double seconds);
  std::string list_qps();
  std::string list_mrs();

  dp::Dataplane& dp_;
  ApplianceOptions o_;
  MappedBuffer exposed_, recv_;
  const MemoryRegion* exposed_mr_ = nullptr;
  const MemoryRegion* recv_mr_ = nullptr;
  std::unique_ptr<Connector> conn_;
  std::unique_ptr<DriverSet> drivers_;
  std::unique_ptr<TcpListener> listener_;
  ControlSocket control_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // sessions, finished reports, manual objects
  std::list<std::unique_ptr<Session>> sessions_;
  std::vector<SessionReport> finished_;
  std::uint64_t failed_sessions_ = 0;
  std::vector<std::string> session_errors_;
  std::list<ManualMr> manual_mrs_;
  std::vector<LocalQp> manual_qps_;
  std::chrono::steady_clock::time_point started_;
  std::uint64_t last_rx_bytes_ = 0, last_tx_bytes_ = 0;
};

}  // namespace roce::app
