// The application work each worker runs once per poll-loop iteration, added and removed from
// the control thread. Each worker's list is touched only on that worker's thread (through
// Dataplane::call), so the loop needs no lock.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "dataplane/dataplane.hpp"

namespace roce::client {

using DriverFn = std::function<void(rdma::Engine&, Nanos)>;

class DriverSet {
 public:
  explicit DriverSet(dp::Dataplane& dp);
  ~DriverSet();
  DriverSet(const DriverSet&) = delete;
  DriverSet& operator=(const DriverSet&) = delete;

  std::uint64_t add(unsigned worker, DriverFn fn);
  void remove(unsigned worker, std::uint64_t id);
  // Runs `fn` on the worker's thread (to read a driver's state safely).
  template <typename Fn>
  auto inspect(unsigned worker, Fn&& fn) {
    return dp_.call(worker, [&](rdma::Engine&) { return fn(); });
  }

 private:
  struct Entry {
    std::uint64_t id;
    DriverFn fn;
  };
  dp::Dataplane& dp_;
  std::vector<std::vector<Entry>> per_worker_;
  std::atomic<std::uint64_t> next_id_{1};
};

}  // namespace roce::client
