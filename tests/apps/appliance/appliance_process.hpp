// A roce-appliance process for tests that talk to it from outside, as an operator or a client
// would: started on a null port (or any --vdev) with a control socket, stopped with SIGTERM
// (or left to the test), its stdout and stderr kept in files; plus a line client for its
// control socket and raw TCP connections to its exchange port.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/support/json.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef ROCE_APPLIANCE_BIN
#define ROCE_APPLIANCE_BIN ""
#endif

namespace roce::test {

using Clock = std::chrono::steady_clock;

inline std::string file_text(const std::filesystem::path& p) {
  const auto v = read_file(p);
  return {v.begin(), v.end()};
}

inline bool ok(const Json& j) { return j.has("ok") && j["ok"].boolean(); }
inline std::string error_of(const Json& j) { return j.has("error") ? j["error"].str() : "(no error field)"; }

// One connection to a Unix stream socket; each call sends lines and reads as many answer lines.
class ControlClient {
 public:
  explicit ControlClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      error_ = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~ControlClient() { close(); }
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;
  bool connected() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void send_raw(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
  // The next answer line ("" when the appliance closed the connection or stayed silent).
  std::string read_line(int timeout_ms = 10'000) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) return "";
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return "";
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // True once the appliance has closed this connection (waits up to timeout_ms).
  bool closed_by_peer(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return true;
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  Json call(const std::string& line, int timeout_ms = 10'000) {
    send_raw(line + "\n");
    const std::string out = read_line(timeout_ms);
    if (out.empty()) throw std::runtime_error("no answer to " + line.substr(0, 80));
    return parse_json(out);
  }

 private:
  int fd_ = -1;
  std::string buf_;
  std::string error_;
};

// A plain TCP connection to the exchange port, for clients that behave badly on purpose.
class RawTcp {
 public:
  explicit RawTcp(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawTcp() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawTcp(const RawTcp&) = delete;
  RawTcp& operator=(const RawTcp&) = delete;
  bool connected() const { return fd_ >= 0; }
  void send_raw(const std::string& b) { (void)::send(fd_, b.data(), b.size(), MSG_NOSIGNAL); }
  // Everything that comes until `want` bytes arrived, the peer closed, or timeout_ms passed.
  std::string read_some(std::size_t want, int timeout_ms) {
    std::string out;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (out.size() < want) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char chunk[512];
      const ssize_t n = ::recv(fd_, chunk, std::min(sizeof chunk, want - out.size()), 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(chunk, static_cast<std::size_t>(n));
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// Where and how the appliance runs.
struct ApplianceSetup {
  std::vector<std::string> wrapper;  // e.g. {"ip", "netns", "exec", NS} (it must exec the appliance)
  std::string vdev = "net_null0";
  std::string dev = "net_null0";
  bool telemetry = false;
};

class ApplianceProcess {
 public:
  // `extra` are roce-appliance options after the common ones (a null port, control socket, an
  // ephemeral exchange port, a report file).
  explicit ApplianceProcess(const std::vector<std::string>& extra, const std::string& tag = "appl",
                            const ApplianceSetup& setup = {}) {
    socket_ = (dir_ / "ctl.sock").string();
    report_ = (dir_ / "report.json").string();
    prefix_ = tag + "_apptests_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++);
    std::vector<std::string> args = setup.wrapper;
    for (const std::string& a : {std::string(ROCE_APPLIANCE_BIN), std::string("--no-huge"), std::string("--no-pci"),
                                 std::string("-m"), std::string("256"), "--file-prefix=" + prefix_,
                                 std::string("--log-level=error"), std::string("-l"), std::string("0")})
      args.push_back(a);
    if (!setup.telemetry) args.push_back("--no-telemetry");
    for (const std::string& a : {std::string("--"), std::string("--vdev"), setup.vdev, std::string("--dev"), setup.dev,
                                 std::string("--ip"), std::string("10.0.0.2"), std::string("--oob-port"), std::string("0"),
                                 std::string("--mr-size"), std::string("1M"), std::string("--recv-size"), std::string("64K"),
                                 std::string("--status-interval"), std::string("0"), std::string("--control"), socket_,
                                 std::string("--report"), report_})
      args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Should the test die, the appliance gets SIGTERM and stops cleanly instead of lingering.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      const int in = ::open("/dev/null", O_RDONLY);
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (in < 0 || o < 0 || e < 0 || ::dup2(in, 0) < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(127);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    // Ready once the banner names the exchange port (the socket exists by then too).
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    static constexpr std::string_view banner = "TCP exchange on port ";
    while (pid_ > 0 && Clock::now() < deadline) {
      int st;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      const std::string e = stderr_text();
      const auto at = e.find(banner);
      // The whole line, so that a port number still being written is not read half.
      const auto digits = at == std::string::npos ? at : at + banner.size();
      const auto eol = digits == std::string::npos ? digits : e.find('\n', digits);
      if (eol != std::string::npos && eol > digits && std::isdigit(static_cast<unsigned char>(e[digits])) &&
          std::filesystem::exists(socket_)) {
        port_ = static_cast<std::uint16_t>(std::stoi(e.substr(digits)));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ApplianceProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all("/var/run/dpdk/" + prefix_, ec);
  }
  ApplianceProcess(const ApplianceProcess&) = delete;
  ApplianceProcess& operator=(const ApplianceProcess&) = delete;

  bool running() const { return pid_ > 0 && port_ != 0; }
  pid_t pid() const { return pid_; }
  std::uint16_t port() const { return port_; }
  const std::string& socket() const { return socket_; }
  const std::string& report_path() const { return report_; }
  const std::string& prefix() const { return prefix_; }
  const TempDir& dir() const { return dir_; }
  std::string telemetry_socket() const { return "/var/run/dpdk/" + prefix_ + "/dpdk_telemetry.v2"; }
  std::string stderr_text() const { return file_text(dir_ / "stderr"); }

  // SIGTERM and wait (up to 20 s); the exit status, or -1.
  int terminate() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    return wait_exit(20'000);
  }
  // Waits for the process to end by itself; its exit status, or -1 on timeout.
  int wait_exit(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    int st = 0;
    while (Clock::now() < deadline) {
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  TempDir dir_;
  std::string socket_, report_, prefix_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace roce::test
