// The verbs of service mode's client half that make and free objects: each is a request to the
// service (service_proto.hpp) on the context's connection, answered with library mode's errno;
// the program's object here holds the handle the service gave it.
#pragma once

#include "verbs/objects.hpp"

namespace roce::verbs {

ibv_pd* service_alloc_pd(Context& c);
int service_dealloc_pd(Context& c, Pd& p);
// After the library-mode argument checks; moves the buffer's pages to a shared memfd first.
ibv_mr* service_reg_mr(Context& c, Pd& p, void* addr, std::size_t length, std::uint64_t iova, unsigned access);
int service_dereg_mr(Context& c, Mr& m);
// ibv_close_device: the connection is closed (the service frees its side), then ours.
void service_close(Context& c);

}  // namespace roce::verbs
