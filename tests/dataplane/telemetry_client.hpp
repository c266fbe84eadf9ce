// A client of DPDK's telemetry v2 socket speaking what usertools/dpdk-telemetry.py speaks: a
// SOCK_SEQPACKET connection that first receives {"version", "pid", "max_output_len"}, then
// sends a command ("/cmd" or "/cmd,params") per message and receives one JSON reply each.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace roce::test {

class TelemetryClient {
 public:
  ~TelemetryClient() {
    if (fd_ >= 0) close(fd_);
  }
  // Empty on success, else why not.
  std::string connect_to(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd_ < 0) return std::string("socket: ") + std::strerror(errno);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return "socket path too long: " + path;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      return "connect " + path + ": " + std::strerror(errno);
    greeting_ = receive();
    return greeting_.empty() ? "no greeting from " + path : "";
  }
  const std::string& greeting() const { return greeting_; }

  std::string command(const std::string& cmd) {
    if (send(fd_, cmd.data(), cmd.size(), 0) != static_cast<ssize_t>(cmd.size())) return {};
    return receive();
  }

 private:
  std::string receive() {
    std::vector<char> buf(1 << 16);  // above DPDK's max_output_len (16 KiB in 22.11)
    const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
    return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string();
  }

  int fd_ = -1;
  std::string greeting_;
};

}  // namespace roce::test
