#include "client/driver_set.hpp"

#include <algorithm>

namespace roce::client {

DriverSet::DriverSet(dp::Dataplane& dp) : dp_(dp), per_worker_(dp.worker_count()) {
  for (unsigned w = 0; w < dp.worker_count(); ++w) {
    auto* list = &per_worker_[w];
    dp_.call(w, [&dp, w, list](rdma::Engine&) {
      dp.worker(w).app_hook = [list](rdma::Engine& e, Nanos now) {
        for (Entry& d : *list) d.fn(e, now);
      };
    });
  }
}

DriverSet::~DriverSet() {
  for (unsigned w = 0; w < dp_.worker_count(); ++w) {
    dp_.call(w, [this, w](rdma::Engine&) {
      dp_.worker(w).app_hook = nullptr;
      per_worker_[w].clear();
    });
  }
}

std::uint64_t DriverSet::add(unsigned worker, DriverFn fn) {
  const std::uint64_t id = next_id_++;
  dp_.call(worker, [&](rdma::Engine&) { per_worker_[worker].push_back(Entry{id, std::move(fn)}); });
  return id;
}

void DriverSet::remove(unsigned worker, std::uint64_t id) {
  dp_.call(worker, [&](rdma::Engine&) {
    auto& l = per_worker_[worker];
    l.erase(std::remove_if(l.begin(), l.end(), [id](const Entry& e) { return e.id == id; }), l.end());
  });
}

}  // namespace roce::client
