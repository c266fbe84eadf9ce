// The service's checks on what a program passes with a create request: a ring file it maps,
// and a request body it reads (service_datapath.cpp, service_srq.cpp).
#pragma once

#include <cstddef>
#include <cstring>

#include "verbs/service_proto.hpp"

namespace roce::verbs {

// Maps a program's ring file: sealed against shrinking (a shrunk file would SIGBUS the service)
// and at least `bytes` long. nullptr if it is not.
void* map_ring(int fd, std::size_t bytes);

// The request's body as a T, if the record carried that much.
template <typename T>
bool read_body(const service::Request& r, std::size_t len, T& out) {
  if (len < sizeof(T)) return false;
  std::memcpy(&out, r.body, sizeof(T));
  return true;
}

}  // namespace roce::verbs
