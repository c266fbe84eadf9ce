// Connections accepted on an exchange port wait here, without a thread or a session slot,
// until their first bytes arrive (real clients send at once). A connection that stays silent
// for the handshake timeout is closed, and when the room is full the one silent longest makes
// way for the newcomer: idle or half-open connections can neither lock the port nor hold the
// sessions a client needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "client/tcp.hpp"

namespace roce::client {

class WaitingRoom {
 public:
  struct Left {
    std::string peer;    // "IP:port"
    std::string reason;  // why it was closed, for stderr and the report
    bool refused = true;  // false: the client itself went away
  };

  WaitingRoom(std::size_t capacity, int handshake_timeout_ms) : capacity_(capacity), timeout_ms_(handshake_timeout_ms) {}

  // Waits up to wait_ms for new connections on `listener` or bytes from waiting ones. Returns
  // the connections that have sent something (ready for a session); those closed meanwhile
  // (timed out or made way, each told why, or gone without a byte) are added to `left`.
  std::vector<TcpStream> poll(TcpListener& listener, int wait_ms, std::vector<Left>& left);

  std::size_t waiting() const { return waiting_.size(); }
  std::size_t capacity() const { return capacity_; }
  int timeout_ms() const { return timeout_ms_; }

 private:
  struct Waiting {
    TcpStream tcp;
    std::string peer;
    std::chrono::steady_clock::time_point since;
  };
  void admit(TcpListener& listener, std::vector<Left>& left);
  // Closes the oldest waiting connection, telling it why.
  void drop_oldest(const std::string& reason, std::vector<Left>& left);

  std::size_t capacity_;
  int timeout_ms_;
  std::vector<Waiting> waiting_;  // oldest first
};

}  // namespace roce::client
