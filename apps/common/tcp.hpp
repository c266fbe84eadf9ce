// Blocking TCP for the out-of-band connection exchanges (control path only): connect, listen,
// accept, and whole-record reads and writes with a deadline.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "lib/status.hpp"

namespace roce::app {

class TcpStream {
 public:
  TcpStream() = default;
  explicit TcpStream(int fd) : fd_(fd) {}
  ~TcpStream();
  TcpStream(TcpStream&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  TcpStream& operator=(TcpStream&& o) noexcept;
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;

  static Result<TcpStream> connect(const std::string& host, std::uint16_t port, int timeout_ms);

  // Reads exactly out.size() bytes or fails (peer closed, timeout, error).
  Status read_exact(std::span<std::byte> out, int timeout_ms);
  Status write_all(std::span<const std::byte> data);
  // Waits until data (or the peer's close) can be read; false on timeout.
  bool wait_readable(int timeout_ms) const;
  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  std::string peer_address() const;  // the peer's IP, as text

 private:
  int fd_ = -1;
};

class TcpListener {
 public:
  TcpListener() = default;
  ~TcpListener();
  TcpListener(TcpListener&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  TcpListener& operator=(TcpListener&&) = delete;
  static Result<TcpListener> listen(const std::string& bind_address, std::uint16_t port);
  // Waits up to timeout_ms (-1: forever) for one connection; ETIMEDOUT when none came.
  Result<TcpStream> accept(int timeout_ms);
  std::uint16_t port() const;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace roce::app
