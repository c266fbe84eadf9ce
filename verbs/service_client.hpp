// The client half of libroce-verbs.so (service mode): a program's connection to roce-verbsd,
// one per ibv_context, carrying one request and its answer at a time (service_proto.hpp). The
// program runs no EAL and no dataplane; the verbs that make, change or query objects become
// requests, answered with the errnos the in-process device gives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "lib/status.hpp"
#include "verbs/service_proto.hpp"

namespace roce::verbs {

class ServiceConnection {
 public:
  // Connects and says hello (protocol version); the answer names the device.
  static Result<std::unique_ptr<ServiceConnection>> connect(const std::string& path);
  ~ServiceConnection();
  ServiceConnection(const ServiceConnection&) = delete;
  ServiceConnection& operator=(const ServiceConnection&) = delete;

  const std::string& device_name() const { return device_name_; }

  // Sends one request and waits for its answer; returns the answer's errno (0: done), and
  // ECONNRESET when the service is gone. Up to out_len bytes of the answer land in `out`.
  // `fds` cross with the request (SCM_RIGHTS); the service gets copies.
  int call(service::Op op, std::uint32_t handle, std::uint32_t arg, const void* body, std::size_t len, void* out,
           std::size_t out_len, const int* fds = nullptr, std::size_t nfds = 0);
  int call(service::Op op, void* out, std::size_t out_len, std::uint32_t arg = 0) {
    return call(op, 0, arg, nullptr, 0, out, out_len);
  }

 private:
  explicit ServiceConnection(int fd) : fd_(fd) {}
  int fd_;
  std::mutex mutex_;  // one request in flight per connection
  std::string device_name_;
};

}  // namespace roce::verbs
