// The byte stream an out-of-band exchange runs on: perftest's TCP socket, or under -R its
// rdma_cm RC connection (client/cm_channel.hpp). Control path only.
#pragma once

#include <span>
#include <string>

#include "lib/status.hpp"

namespace roce::client {

class OobChannel {
 public:
  virtual ~OobChannel() = default;
  // Exactly out.size() bytes within timeout_ms in all (-1: no limit), or an error: ECONNRESET
  // when the peer closed (or disconnected), ETIMEDOUT.
  virtual Status read_exact(std::span<std::byte> out, int timeout_ms) = 0;
  virtual Status write_all(std::span<const std::byte> data) = 0;
  // Data (or the peer's close) can be read; false on timeout.
  virtual bool wait_readable(int timeout_ms) const = 0;
  virtual std::string peer_address() const = 0;   // the peer's IP, as text
  virtual std::string peer_endpoint() const = 0;  // "IP:port", for messages about one connection
};

}  // namespace roce::client
