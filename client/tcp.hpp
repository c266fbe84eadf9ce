// Blocking TCP for the out-of-band connection exchanges (control path only): connect, listen,
// accept, and whole-record reads and writes with a deadline.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "client/oob/channel.hpp"
#include "lib/status.hpp"

namespace roce::client {

class TcpStream : public OobChannel {
 public:
  TcpStream() = default;
  explicit TcpStream(int fd) : fd_(fd) {}
  ~TcpStream() override;
  TcpStream(TcpStream&& o) noexcept : OobChannel(), fd_(o.fd_) { o.fd_ = -1; }
  TcpStream& operator=(TcpStream&& o) noexcept;
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;

  static Result<TcpStream> connect(const std::string& host, std::uint16_t port, int timeout_ms);

  // Reads exactly out.size() bytes within timeout_ms in all (-1: no limit) or fails (peer
  // closed, timeout, error).
  Status read_exact(std::span<std::byte> out, int timeout_ms) override;
  // What is there now, without waiting (0 when nothing is).
  std::size_t read_some(std::span<std::byte> out);
  Status write_all(std::span<const std::byte> data) override;
  // Waits until data (or the peer's close) can be read; false on timeout.
  bool wait_readable(int timeout_ms) const override;
  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  std::string peer_address() const override;   // the peer's IP, as text
  std::string peer_endpoint() const override;  // "IP:port", for messages about one connection

 private:
  int fd_ = -1;
};

class TcpListener {
 public:
  TcpListener() = default;
  ~TcpListener();
  TcpListener(TcpListener&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  TcpListener& operator=(TcpListener&&) = delete;
  // A backlog large enough that a burst of connections does not push a real client into SYN
  // retries while the server sorts them out.
  static Result<TcpListener> listen(const std::string& bind_address, std::uint16_t port, int backlog = 128);
  // Waits up to timeout_ms (-1: forever) for one connection; ETIMEDOUT when none came.
  Result<TcpStream> accept(int timeout_ms);
  std::uint16_t port() const;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace roce::client
