// Helpers of the rdma_cm tests: the next event on a channel, taken within a time limit.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstring>

namespace cm_test {

// The next event within 5 s (nullptr and a test failure otherwise).
inline rdma_cm_event* next_event(rdma_event_channel* ch, int timeout_ms = 5000) {
  pollfd p{ch->fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) {
    ADD_FAILURE() << "no rdma_cm event within " << timeout_ms << " ms";
    return nullptr;
  }
  rdma_cm_event* e = nullptr;
  EXPECT_EQ(rdma_get_cm_event(ch, &e), 0) << std::strerror(errno);
  return e;
}

// Takes the next event, checks its type, acknowledges it; returns its status.
inline int expect_event(rdma_event_channel* ch, rdma_cm_event_type type) {
  rdma_cm_event* e = next_event(ch);
  if (e == nullptr) return -1000;
  EXPECT_STREQ(rdma_event_str(e->event), rdma_event_str(type));
  const int status = e->status;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  return status;
}

}  // namespace cm_test
