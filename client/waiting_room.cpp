#include "client/waiting_room.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "client/oob/refusal.hpp"

namespace roce::client {

void WaitingRoom::drop_oldest(const std::string& reason, std::vector<Left>& left) {
  send_refusal(waiting_.front().tcp, reason);
  left.push_back({waiting_.front().peer, reason, true});
  waiting_.erase(waiting_.begin());
}

void WaitingRoom::admit(TcpListener& listener, std::vector<Left>& left) {
  // Everything in the backlog, so a burst does not keep a real client behind it.
  for (;;) {
    auto tcp = listener.accept(0);
    if (!tcp) return;
    if (waiting_.size() >= capacity_ && !waiting_.empty()) drop_oldest("silent for the longest while " + std::to_string(capacity_) +
                                                                        " connections waited: closed to make way for a new one",
                                                                    left);
    std::string peer = tcp->peer_endpoint();
    waiting_.push_back({std::move(*tcp), std::move(peer), std::chrono::steady_clock::now()});
  }
}

std::vector<TcpStream> WaitingRoom::poll(TcpListener& listener, int wait_ms, std::vector<Left>& left) {
  std::vector<pollfd> fds;
  fds.reserve(waiting_.size() + 1);
  fds.push_back({listener.fd(), POLLIN, 0});
  for (const Waiting& w : waiting_) fds.push_back({w.tcp.fd(), POLLIN, 0});
  // With connections waiting, wake in time for the first of their deadlines.
  if (!waiting_.empty()) {
    const auto first = waiting_.front().since + std::chrono::milliseconds(timeout_ms_);
    const auto until = std::chrono::ceil<std::chrono::milliseconds>(first - std::chrono::steady_clock::now()).count();
    wait_ms = static_cast<int>(std::clamp<std::int64_t>(until, 0, wait_ms));
  }
  const int n = ::poll(fds.data(), fds.size(), wait_ms);
  std::vector<TcpStream> ready;
  if (n > 0) {
    std::vector<Waiting> still;
    still.reserve(waiting_.size());
    for (std::size_t i = 0; i < waiting_.size(); ++i) {
      Waiting& w = waiting_[i];
      if (!(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
        still.push_back(std::move(w));
        continue;
      }
      char b;
      const ssize_t got = ::recv(w.tcp.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
      if (got > 0) {
        ready.push_back(std::move(w.tcp));
      } else if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
        still.push_back(std::move(w));
      } else {
        left.push_back({w.peer, "closed by the client before the exchange began", false});
      }
    }
    waiting_ = std::move(still);
    if (fds[0].revents & POLLIN) admit(listener, left);
  }
  const auto now = std::chrono::steady_clock::now();
  const auto limit = std::chrono::milliseconds(timeout_ms_);
  while (!waiting_.empty() && now - waiting_.front().since >= limit)
    drop_oldest("sent nothing within " + std::to_string(timeout_ms_) + " ms of connecting (handshake timeout): closed", left);
  return ready;
}

}  // namespace roce::client
