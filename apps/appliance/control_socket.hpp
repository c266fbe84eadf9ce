// A local control socket: a Unix stream socket speaking JSON lines (one command object in,
// one response object out, in order). The socket file is created owner-only (0600) and every
// peer's credentials are checked, so other users cannot drive the appliance.
//
// One event loop (poll) serves every client with its own input and output buffers, so an idle,
// half-written or slow-reading client holds up nobody else; commands run on a small pool of
// handler threads (one command per client at a time, so a client's answers keep its order),
// so a command that waits (connect_qp resolving a peer) holds up only its own client. Limits:
// clients at once, bytes per line, the time a begun line may take to end, and the time a
// client may stay silent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/status.hpp"
#include "lib/util/json_reader.hpp"

namespace roce::client {

struct ControlLimits {
  std::size_t max_clients = 16;
  std::size_t max_line_bytes = 64 * 1024;
  int idle_timeout_ms = 60'000;  // nothing received or sent for this long (no command running): closed
  int line_timeout_ms = 10'000;  // a line begun must end within this: a 1-byte drip cannot hold it open
  std::size_t max_queued_lines = 64;  // per client; beyond it the client is not read until answered
  unsigned handler_threads = 2;
};

// What the socket refused or cut off, for the report.
struct ControlStats {
  std::uint64_t clients_served = 0;
  std::uint64_t refused_peers = 0;   // another uid
  std::uint64_t refused_full = 0;    // max_clients already connected
  std::uint64_t timed_out_idle = 0;
  std::uint64_t timed_out_line = 0;  // a line that did not end in time
  std::uint64_t lines_too_long = 0;
  std::uint64_t commands = 0;
};

class ControlSocket {
 public:
  using ClientId = std::uint64_t;
  // Returns the response object (a JSON text) for one command of one client.
  using Handler = std::function<std::string(ClientId client, const JsonValue& command)>;
  // Called once a client has gone and its last command has finished (to free what it made).
  using ClosedHandler = std::function<void(ClientId client)>;

  ControlSocket();
  ~ControlSocket();
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  Status start(const std::string& path, Handler handler, ClosedHandler closed = {}, ControlLimits limits = {});
  // Stops serving: open clients are closed, running commands finish, ClosedHandler runs for each.
  void stop();
  const std::string& path() const { return path_; }
  const ControlLimits& limits() const { return limits_; }
  ControlStats stats() const;

 private:
  struct Client;
  struct Done {
    ClientId id;
    std::string reply;
  };
  void loop();
  void accept_clients();
  void read_from(Client& c);
  void write_to(Client& c);
  void advance(Client& c);
  void check_deadlines(Client& c, std::int64_t now_ms);
  void reply_and_close(Client& c, const std::string& error);
  void collect_done();
  void submit(std::function<void()> task);
  void pool_main();
  void wake();

  std::string path_;
  Handler handler_;
  ClosedHandler closed_;
  ControlLimits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::thread loop_thread_;
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Client>> clients_;  // loop thread only
  ClientId next_id_ = 1;

  // Handler pool: tasks in, replies out.
  std::vector<std::thread> pool_;
  std::mutex pool_mutex_;
  std::condition_variable pool_cv_;
  std::deque<std::function<void()>> tasks_;
  bool pool_stop_ = false;
  std::mutex done_mutex_;
  std::vector<Done> done_;

  mutable std::mutex stats_mutex_;
  ControlStats stats_;
};

// {"ok":false,"error":"..."} for a handler to return.
std::string control_error(const std::string& message);

}  // namespace roce::client
