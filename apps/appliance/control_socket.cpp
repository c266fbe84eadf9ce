#include "apps/appliance/control_socket.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "lib/util/json_writer.hpp"

namespace roce::client {

namespace {

// A client whose answers pile up unread is not given more commands to answer until it reads.
constexpr std::size_t kMaxUnsentBytes = 4u << 20;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string seconds_text(int ms) {
  const int s = ms / 1000;
  return ms % 1000 == 0 ? std::to_string(s) + " s" : std::to_string(ms) + " ms";
}

void send_now(int fd, const std::string& line) { (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT); }

}  // namespace

// One connected client, owned by the loop thread. Lines wait in `queue` until the previous
// command's answer is in `out`; a queued entry is either a command line or an answer the loop
// made itself (an error), which may end the connection.
struct ControlSocket::Client {
  struct Item {
    std::string text;
    bool is_answer = false;  // text is a ready answer, not a command
    bool then_close = false;
  };
  ClientId id = 0;
  int fd = -1;
  std::string in;  // bytes after the last newline
  std::string out;
  std::deque<Item> queue;
  bool busy = false;          // a command of this client is on the pool
  bool read_closed = false;   // EOF, error, or cut off: read no more
  bool closing = false;       // close once `out` is sent and nothing runs
  std::int64_t last_progress_ms = 0;
  std::optional<std::int64_t> line_started_ms;
};

std::string control_error(const std::string& message) {
  JsonWriter w;
  w.begin_object().field("ok", false).field("error", message).end_object();
  return w.str();
}

ControlSocket::ControlSocket() = default;
ControlSocket::~ControlSocket() { stop(); }

Status ControlSocket::start(const std::string& path, Handler handler, ClosedHandler closed, ControlLimits limits) {
  sockaddr_un sa{};
  if (path.size() >= sizeof sa.sun_path) return make_error(ENAMETOOLONG, "control socket path too long: " + path);
  path_ = path;
  handler_ = std::move(handler);
  closed_ = std::move(closed);
  limits_ = limits;
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return make_error(errno, std::string("socket: ") + std::strerror(errno));
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  // Owner-only from the first instant: the file is never visible with wider permissions.
  const mode_t old = ::umask(0077);
  const int rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::umask(old);
  if (rc != 0 || ::listen(listen_fd_, 16) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    listen_fd_ = -1;
    return make_error(err, "cannot listen on control socket " + path + ": " + std::strerror(err));
  }
  ::chmod(path.c_str(), 0600);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    const int err = errno;
    stop();
    return make_error(err, std::string("eventfd: ") + std::strerror(err));
  }
  stop_ = false;
  pool_stop_ = false;
  for (unsigned i = 0; i < std::max(1u, limits_.handler_threads); ++i) pool_.emplace_back([this] { pool_main(); });
  loop_thread_ = std::thread([this] { loop(); });
  return {};
}

void ControlSocket::stop() {
  stop_ = true;
  if (wake_fd_ >= 0) wake();
  if (loop_thread_.joinable()) loop_thread_.join();
  {
    std::lock_guard lock(pool_mutex_);
    pool_stop_ = true;
  }
  pool_cv_.notify_all();
  for (std::thread& t : pool_) t.join();
  pool_.clear();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(path_.c_str());
  }
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

ControlStats ControlSocket::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void ControlSocket::wake() {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void ControlSocket::submit(std::function<void()> task) {
  {
    std::lock_guard lock(pool_mutex_);
    tasks_.push_back(std::move(task));
  }
  pool_cv_.notify_one();
}

void ControlSocket::pool_main() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(pool_mutex_);
      pool_cv_.wait(lock, [this] { return pool_stop_ || !tasks_.empty(); });
      // Tasks already queued still run at stop: a closed client's objects must be freed.
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void ControlSocket::loop() {
  std::vector<pollfd> fds;
  while (!stop_) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    // When full, new connections are still accepted, to be told why they cannot stay.
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& c : clients_) {
      short ev = 0;
      if (!c->read_closed && c->queue.size() < limits_.max_queued_lines) ev |= POLLIN;
      if (!c->out.empty()) ev |= POLLOUT;
      fds.push_back({c->fd, ev, 0});
    }
    const int n = ::poll(fds.data(), fds.size(), 200);
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
    }
    collect_done();
    // Clients are only added by accept_clients (after this pass) and removed below.
    for (std::size_t i = 0; i < clients_.size() && i + 2 < fds.size(); ++i) {
      Client& c = *clients_[i];
      const short re = fds[i + 2].revents;
      if (re & (POLLIN | POLLHUP | POLLERR)) read_from(c);
      if (re & POLLOUT) write_to(c);
    }
    if (fds[1].revents & POLLIN) accept_clients();
    const std::int64_t now = now_ms();
    for (auto& c : clients_) {
      check_deadlines(*c, now);
      advance(*c);
    }
    // Gone: closed by either side, nothing running, nothing left to send.
    for (auto it = clients_.begin(); it != clients_.end();) {
      Client& c = **it;
      const bool done = c.closing || (c.read_closed && c.queue.empty());
      if (c.busy || !done || !c.out.empty()) {
        ++it;
        continue;
      }
      ::close(c.fd);
      const ClientId id = c.id;
      if (closed_) submit([this, id] { closed_(id); });
      it = clients_.erase(it);
    }
  }
  // Stopping: answers already made are sent if the client takes them now (the answer to
  // "stop" among them); running commands finish on the pool, and every client's objects are
  // freed after.
  collect_done();
  for (auto& c : clients_) {
    advance(*c);
    ::close(c->fd);
    const ClientId id = c->id;
    if (closed_) submit([this, id] { closed_(id); });
  }
  clients_.clear();
}

void ControlSocket::accept_clients() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
      {
        std::lock_guard lock(stats_mutex_);
        ++stats_.refused_peers;
      }
      send_now(fd, control_error("refused: the control socket serves only its owner") + "\n");
      ::close(fd);
      continue;
    }
    if (clients_.size() >= limits_.max_clients) {
      {
        std::lock_guard lock(stats_mutex_);
        ++stats_.refused_full;
      }
      send_now(fd, control_error("refused: " + std::to_string(limits_.max_clients) +
                                 " control clients are connected already; try again when one has gone") +
                       "\n");
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->id = next_id_++;
    c->fd = fd;
    c->last_progress_ms = now_ms();
    clients_.push_back(std::move(c));
    std::lock_guard lock(stats_mutex_);
    ++stats_.clients_served;
  }
}

void ControlSocket::read_from(Client& c) {
  if (c.read_closed) return;
  char chunk[4096];
  const ssize_t n = ::recv(c.fd, chunk, sizeof chunk, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    // EOF: the client may have only shut down its sending side; lines received are answered.
    c.read_closed = true;
    if (!c.in.empty()) c.queue.push_back({std::move(c.in)});
    c.in.clear();
    return;
  }
  c.last_progress_ms = now_ms();
  std::size_t start = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    if (chunk[i] != '\n') continue;
    c.in.append(chunk + start, i - start);
    if (!c.in.empty() && c.in.back() == '\r') c.in.pop_back();  // nc -C, telnet
    if (c.in.empty())
      c.queue.push_back({control_error("empty line: send one JSON command object per line, e.g. {\"cmd\":\"status\"}"), true});
    else
      c.queue.push_back({std::move(c.in)});
    c.in.clear();
    start = i + 1;
  }
  c.in.append(chunk + start, static_cast<std::size_t>(n) - start);
  if (c.in.empty()) {
    c.line_started_ms.reset();
  } else if (!c.line_started_ms || start > 0) {
    c.line_started_ms = c.last_progress_ms;
  }
  if (c.in.size() > limits_.max_line_bytes) {
    {
      std::lock_guard lock(stats_mutex_);
      ++stats_.lines_too_long;
    }
    c.in.clear();
    c.line_started_ms.reset();
    c.read_closed = true;
    c.queue.push_back({control_error("command line longer than " + std::to_string(limits_.max_line_bytes / 1024) +
                                     " KiB: closing"),
                       true, true});
  }
}

void ControlSocket::write_to(Client& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      // The client is gone: nothing more can reach it.
      c.out.clear();
      c.queue.clear();
      c.read_closed = true;
      c.closing = true;
      return;
    }
    c.out.erase(0, static_cast<std::size_t>(n));
    c.last_progress_ms = now_ms();
  }
}

void ControlSocket::reply_and_close(Client& c, const std::string& error) {
  c.queue.clear();
  c.in.clear();
  c.line_started_ms.reset();
  c.read_closed = true;
  c.last_progress_ms = now_ms();
  c.queue.push_back({control_error(error), true, true});
}

void ControlSocket::check_deadlines(Client& c, std::int64_t now) {
  if (c.busy) return;  // a command that takes long is not the client's fault
  const bool stalled = now - c.last_progress_ms > limits_.idle_timeout_ms;
  if (c.closing || c.read_closed || !c.out.empty()) {
    // Answers it does not read: given up on after the same quiet time.
    if (stalled) {
      c.out.clear();
      c.queue.clear();
      c.read_closed = true;
      c.closing = true;
    }
    return;
  }
  if (c.line_started_ms && now - *c.line_started_ms > limits_.line_timeout_ms) {
    {
      std::lock_guard lock(stats_mutex_);
      ++stats_.timed_out_line;
    }
    reply_and_close(c, "timed out: a command line must end (newline) within " + seconds_text(limits_.line_timeout_ms) +
                           " of its first byte; " + std::to_string(c.in.size()) + " bytes came without one: closing");
    return;
  }
  if (c.queue.empty() && stalled) {
    {
      std::lock_guard lock(stats_mutex_);
      ++stats_.timed_out_idle;
    }
    reply_and_close(c, "timed out: idle for " + seconds_text(limits_.idle_timeout_ms) + ": closing");
  }
}

void ControlSocket::advance(Client& c) {
  while (!c.busy && !c.closing && !c.queue.empty() && c.out.size() < kMaxUnsentBytes) {
    Client::Item item = std::move(c.queue.front());
    c.queue.pop_front();
    if (item.is_answer) {
      c.out += item.text + "\n";
      if (item.then_close) {
        c.queue.clear();
        c.read_closed = true;
        c.closing = true;
      }
      continue;
    }
    c.busy = true;
    {
      std::lock_guard lock(stats_mutex_);
      ++stats_.commands;
    }
    submit([this, id = c.id, line = std::move(item.text)] {
      std::string reply;
      try {
        auto cmd = parse_json(line);
        reply = cmd ? handler_(id, *cmd) : control_error(cmd.error().message);
      } catch (const std::exception& e) {
        reply = control_error(std::string("internal error: ") + e.what());
      }
      {
        std::lock_guard lock(done_mutex_);
        done_.push_back({id, std::move(reply)});
      }
      wake();
    });
  }
  if (!c.out.empty()) write_to(c);
}

void ControlSocket::collect_done() {
  std::vector<Done> done;
  {
    std::lock_guard lock(done_mutex_);
    done.swap(done_);
  }
  for (Done& d : done)
    for (auto& c : clients_)
      if (c->id == d.id) {
        c->busy = false;
        c->out += d.reply + "\n";
        c->last_progress_ms = now_ms();
      }
}

}  // namespace roce::client
