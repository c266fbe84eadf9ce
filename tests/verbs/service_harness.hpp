// The harness of the service-mode tests (verbs_service_tests): a roce-verbsd started once for
// the test program on a looped-back net_ring0 port, whose client this process is
// (libroce-verbs.so preloaded, ROCE_VERBS_SERVICE set), the Service fixture, raw records to
// the socket, the service's Status, and Debian's programs run as children.
#pragma once

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "verbs/service_proto.hpp"
#include "verbs/service_rings.hpp"

namespace service_test {

using roce::verbs::service::Op;
using roce::verbs::service::Reply;
using roce::verbs::service::Request;
using roce::verbs::service::StatusReply;

// Generous bounds for a loaded machine: they only decide how long a failing test waits.
inline constexpr auto kStartBound = std::chrono::seconds(60);
inline constexpr auto kEventBound = std::chrono::seconds(30);

inline std::string g_socket;
inline pid_t g_service = -1;

inline int raw_connect() {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", g_socket.c_str());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `len` bytes of a record and returns the answer's errno (-1: no answer).
inline int exchange(int fd, const void* rec, std::size_t len, Reply* out = nullptr) {
  if (::send(fd, rec, len, MSG_NOSIGNAL) != static_cast<ssize_t>(len)) return -1;
  Reply r;
  const ssize_t n = ::recv(fd, &r, sizeof r, 0);
  if (n < static_cast<ssize_t>(roce::verbs::service::kReplyHeader)) return -1;
  if (out) *out = r;
  return r.err;
}

inline StatusReply status() {
  StatusReply s{};
  const int fd = raw_connect();
  if (fd < 0) return s;
  Request q;
  q.op = Op::Status;
  Reply r;
  if (exchange(fd, &q, roce::verbs::service::kRequestHeader, &r) == 0) std::memcpy(&s, r.body, sizeof s);
  ::close(fd);
  s.connections -= 1;  // not counting this probe
  return s;
}

// Waits until the service holds `contexts` contexts; false after kEventBound.
inline bool wait_for_contexts(std::uint32_t contexts) {
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  while (std::chrono::steady_clock::now() < until) {
    if (status().contexts == contexts) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Debian's programs the live tests run (ibverbs-utils, perftest); a test without them is
// skipped and says why.
inline bool installed(const char* program) {
  const std::string cmd = std::string("command -v ") + program + " > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}
#define REQUIRE_PROGRAM(p) \
  if (!installed(p)) GTEST_SKIP() << p << " is not installed (apt-get install ibverbs-utils perftest)"

class Service : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = std::getenv("ROCE_VERBSD");
    ASSERT_NE(bin, nullptr) << "ROCE_VERBSD (the roce-verbsd binary) is not set";
    g_socket = "/tmp/roce-verbs-service-test-" + std::to_string(::getpid()) + ".sock";
    g_service = ::fork();
    ASSERT_GE(g_service, 0);
    if (g_service == 0) {
      ::execl(bin, bin, "--ip", "10.99.0.3", "--vdev", "net_ring0", "--memory", "128", "--name", "svc0", "--allow-probe", "--max-per-client", "32", "--max-map-mb", "64", "--socket",
              g_socket.c_str(), static_cast<char*>(nullptr));
      std::perror("exec roce-verbsd");
      ::_exit(127);
    }
    const auto until = std::chrono::steady_clock::now() + kStartBound;
    for (;;) {
      if (const int fd = raw_connect(); fd >= 0) {
        ::close(fd);
        break;
      }
      int st = 0;
      ASSERT_EQ(::waitpid(g_service, &st, WNOHANG), 0) << "roce-verbsd exited at start-up";
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "roce-verbsd did not listen on " << g_socket;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // The library in this process reads its configuration on first use: service mode.
    ::setenv("ROCE_VERBS_SERVICE", g_socket.c_str(), 1);
  }

  static void TearDownTestSuite() {
    if (g_service <= 0) return;
    ::kill(g_service, SIGTERM);
    int st = 0;
    ::waitpid(g_service, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "roce-verbsd status " << st;
    EXPECT_NE(::access(g_socket.c_str(), F_OK), 0) << "the socket file stayed";
  }

  void SetUp() override {
    int n = 0;
    list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 1);
    ctx = ibv_open_device(list[0]);
    ASSERT_NE(ctx, nullptr) << std::strerror(errno);
  }
  void TearDown() override {
    if (ctx) {
      EXPECT_EQ(ibv_close_device(ctx), 0);
    }
    if (list) ibv_free_device_list(list);
  }

  ibv_device** list = nullptr;
  ibv_context* ctx = nullptr;
};

// A QP of the looped-back port moved to RTS toward `peer` (a QPN of the same device).
inline int to_rts(ibv_qp* qp, std::uint32_t peer, const ibv_gid& gid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return rc;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer;
  a.rq_psn = 7;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (int rc = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return rc;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

// Polls until one completion came (a generous bound for a loaded machine); -1 if none.
inline int poll_one(ibv_cq* cq, ibv_wc& wc) {
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  while (std::chrono::steady_clock::now() < until) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n != 0) return n;
    std::this_thread::yield();
  }
  return -1;
}

struct Program {
  pid_t pid = -1;
  std::string out;  // stdout and stderr land here
};

inline Program spawn(const std::vector<std::string>& args, const std::string& out) {
  Program p;
  p.out = out;
  p.pid = ::fork();
  if (p.pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return p;
}

inline std::string slurp(const std::string& path) {
  std::string s;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
    std::fclose(f);
  }
  return s;
}

inline bool wait_for_output(const Program& p, const std::string& text) {
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  while (std::chrono::steady_clock::now() < until) {
    if (slurp(p.out).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The exit status, or -1 when the program did not end within the bound (then it is killed).
inline int wait_exit(Program& p, std::chrono::seconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  int st = 0;
  int rc = -1;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(p.pid, &st, WNOHANG) == p.pid) {
      rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (rc < 0) {
    ::kill(p.pid, SIGKILL);
    ::waitpid(p.pid, &st, 0);
  }
  p.pid = -1;
  return rc;
}

}  // namespace service_test
