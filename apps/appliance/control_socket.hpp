// A local control socket: a Unix stream socket speaking JSON lines (one command object in,
// one response object out). The socket file is created owner-only (0600) and every peer's
// credentials are checked, so other users cannot drive the appliance.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "lib/status.hpp"
#include "lib/util/json_reader.hpp"

namespace roce::app {

class ControlSocket {
 public:
  // Returns the response object (a JSON text) for one command.
  using Handler = std::function<std::string(const JsonValue& command)>;

  ~ControlSocket();
  Status start(const std::string& path, Handler handler);
  void stop();
  const std::string& path() const { return path_; }
  std::uint64_t refused_peers() const { return refused_.load(); }

 private:
  void serve();
  void serve_client(int fd);

  std::string path_;
  Handler handler_;
  int listen_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> refused_{0};
};

// {"ok":false,"error":"..."} for a handler to return.
std::string control_error(const std::string& message);

}  // namespace roce::app
