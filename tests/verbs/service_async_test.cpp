// Asynchronous events in service mode (docs/verbs.md, "2. Service mode"): the events library
// mode raises (SRQ limit reached, last WQE reached) reach a program of the service through its
// context's async_fd, pollable and non-blocking on request, named by the program's own objects;
// a program that reads none of them is not waited for (the service counts what it drops).
#include <fcntl.h>
#include <poll.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/verbs/service_harness.hpp"

namespace service_test {
namespace {

// Waits until the context's async_fd is readable; false after kEventBound.
bool wait_readable(ibv_context* ctx) {
  pollfd p{ctx->async_fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kEventBound).count())) == 1;
}

ibv_qp* qp_on(ibv_pd* pd, ibv_cq* cq, ibv_srq* srq) {
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.cap = {8, 0, 1, 0, 0};
  ia.send_cq = ia.recv_cq = cq;
  ia.srq = srq;
  return ibv_create_qp(pd, &ia);
}

int to_state(ibv_qp* qp, ibv_qp_state s) {
  ibv_qp_attr a{};
  a.qp_state = s;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

// The library-mode test's sequence (datapath_test's SrqLimitAndLastWqeReachTheProgramAsAsyncEvents)
// through the service: a limit armed at creation, then re-armed with ibv_modify_srq, raises
// IBV_EVENT_SRQ_LIMIT_REACHED once per arming, on the program's SRQ; its QP moved to ERR raises
// IBV_EVENT_QP_LAST_WQE_REACHED on the program's QP; acknowledging counts events_completed.
TEST_F(Service, SrqLimitAndLastWqeReachTheProgramAsAsyncEvents) {
  // Non-blocking, so a missing event fails the test instead of hanging it.
  ASSERT_EQ(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK), 0);
  ibv_async_event ev{};
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(ctx, &ev), -1);  // nothing yet
  EXPECT_EQ(errno, EAGAIN);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 1;
  sa.attr.srq_limit = 2;  // armed at creation
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr) << std::strerror(errno);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 2u);
  ibv_srq_attr too_high{};
  too_high.srq_limit = q.max_wr + 1;
  EXPECT_EQ(ibv_modify_srq(srq, &too_high, IBV_SRQ_LIMIT), EINVAL);  // library mode's answer

  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.cap = {8, 8, 1, 1, 0};
  ia.send_cq = ia.recv_cq = cq;
  ibv_qp* a = ibv_create_qp(pd, &ia);
  ibv_qp* b = qp_on(pd, cq, srq);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
  ASSERT_EQ(to_rts(a, b->qp_num, gid), 0);
  ASSERT_EQ(to_rts(b, a->qp_num, gid), 0);
  std::vector<std::uint8_t> buf(16 * 64);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  const auto post_receives = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ibv_sge s{reinterpret_cast<std::uintptr_t>(buf.data()) + 64 * i, 64, mr->lkey};
      ibv_recv_wr w{};
      w.wr_id = 100 + i;
      w.sg_list = &s;
      w.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      ASSERT_EQ(ibv_post_srq_recv(srq, &w, &bad), 0);
    }
  };
  const auto send_and_take = [&](int n) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(buf.data()) + 960, 8, mr->lkey};
    ibv_send_wr w{};
    w.wr_id = 7;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    for (int i = 0; i < n; ++i) ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
    ibv_wc wc{};
    for (int i = 0; i < 2 * n; ++i) {  // each SEND and its receive
      ASSERT_EQ(poll_one(cq, wc), 1);
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    }
  };
  const auto expect_limit_event = [&](std::uint32_t completed) {
    ASSERT_TRUE(wait_readable(ctx)) << "no event";
    ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0) << std::strerror(errno);
    EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED) << ibv_event_type_str(ev.event_type);
    EXPECT_EQ(ev.element.srq, srq);
    ibv_ack_async_event(&ev);
    EXPECT_EQ(srq->events_completed, completed);
    ASSERT_EQ(ibv_query_srq(srq, &q), 0);
    EXPECT_EQ(q.srq_limit, 0u);  // the event disarms the limit, as rxe
  };

  // 3 receives, limit 2: the first SEND leaves 2 (not fewer), the second leaves 1.
  post_receives(3);
  send_and_take(1);
  // Give the service time to forward an event that must not exist, then see none.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(ctx, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
  send_and_take(1);
  expect_limit_event(1);
  send_and_take(1);  // disarmed: the last receive taken raises nothing
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ibv_get_async_event(ctx, &ev), -1);

  // Re-armed with ibv_modify_srq: 4 receives, limit 3, two SENDs leave 2.
  post_receives(4);
  ibv_srq_attr lim{};
  lim.srq_limit = 3;
  ASSERT_EQ(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
  send_and_take(2);
  expect_limit_event(2);

  ASSERT_EQ(to_state(b, IBV_QPS_ERR), 0);
  ASSERT_TRUE(wait_readable(ctx)) << "no last-WQE event";
  ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED) << ibv_event_type_str(ev.event_type);
  EXPECT_EQ(ev.element.qp, b);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(b->events_completed, 1u);

  EXPECT_EQ(ibv_destroy_qp(a), 0);
  EXPECT_EQ(ibv_destroy_qp(b), 0);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// A program that reads none of its events is not waited for: what its event socket cannot hold
// is dropped and counted (StatusReply::async_events_dropped), every event is either read or
// counted, and once it reads again its next event arrives. An event whose QP was destroyed
// before the program read it is skipped, as library mode drops it.
TEST_F(Service, AsyncEventsAProgramDoesNotReadAreCountedNotWaitedFor) {
  ASSERT_EQ(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK), 0);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr);
  std::vector<ibv_qp*> qps;
  for (int i = 0; i < 24; ++i) {
    qps.push_back(qp_on(pd, cq, srq));
    ASSERT_NE(qps.back(), nullptr) << std::strerror(errno);
  }
  const std::uint64_t dropped_before = status().async_events_dropped;
  // Each move into ERR raises one last-WQE event: 24 QPs x 25 rounds, far more than a socket
  // holds (278 records of this size with Linux's default 208 KiB buffer).
  constexpr int kRounds = 25;
  for (int r = 0; r < kRounds; ++r)
    for (ibv_qp* q : qps) {
      ASSERT_EQ(to_state(q, IBV_QPS_ERR), 0);
      ASSERT_EQ(to_state(q, IBV_QPS_RESET), 0);
    }
  const std::uint64_t raised = kRounds * qps.size();
  std::uint64_t read = 0, dropped = 0;
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  while (read + dropped < raised && std::chrono::steady_clock::now() < until) {
    ibv_async_event ev{};
    while (ibv_get_async_event(ctx, &ev) == 0) {
      EXPECT_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
      ibv_ack_async_event(&ev);
      ++read;
    }
    dropped = status().async_events_dropped - dropped_before;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(read + dropped, raised) << read << " read, " << dropped << " dropped";
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(read, 0u);

  // Reading again: the next event arrives.
  ASSERT_EQ(to_state(qps[0], IBV_QPS_ERR), 0);
  ASSERT_TRUE(wait_readable(ctx));
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0);
  EXPECT_EQ(ev.element.qp, qps[0]);
  ibv_ack_async_event(&ev);
  // An event of a QP destroyed before it is read is skipped: the next one is read instead.
  ASSERT_EQ(to_state(qps[1], IBV_QPS_ERR), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the service sends it meanwhile
  ASSERT_EQ(ibv_destroy_qp(qps[1]), 0);
  ASSERT_EQ(to_state(qps[2], IBV_QPS_ERR), 0);
  ASSERT_TRUE(wait_readable(ctx));
  const auto again = std::chrono::steady_clock::now() + kEventBound;
  int rc = -1;
  while ((rc = ibv_get_async_event(ctx, &ev)) != 0 && errno == EAGAIN && std::chrono::steady_clock::now() < again)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(ev.element.qp, qps[2]);
  ibv_ack_async_event(&ev);
  qps.erase(qps.begin() + 1);

  for (ibv_qp* q : qps) EXPECT_EQ(ibv_destroy_qp(q), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// Open takes at most one file, a SOCK_SEQPACKET UNIX socket; anything else is EINVAL, and the
// connection may try again.
TEST_F(Service, OpenRefusesABadEventSocket) {
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  Request open;
  open.op = Op::Open;
  const auto send_with = [&](const std::vector<int>& files) {
    iovec iov{&open, roce::verbs::service::kRequestHeader};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    if (!files.empty()) {
      m.msg_control = control;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * files.size());
      cmsghdr* cm = CMSG_FIRSTHDR(&m);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int) * files.size());
      std::memcpy(CMSG_DATA(cm), files.data(), sizeof(int) * files.size());
    }
    if (::sendmsg(fd, &m, MSG_NOSIGNAL) < 0) return -1;
    Reply r;
    return ::recv(fd, &r, sizeof r, 0) >= static_cast<ssize_t>(roce::verbs::service::kReplyHeader) ? r.err : -1;
  };
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  int stream[2], seq[2], seq2[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, stream), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, seq), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, seq2), 0);
  EXPECT_EQ(send_with({pipe_fds[1]}), EINVAL);
  EXPECT_EQ(send_with({stream[1]}), EINVAL);
  EXPECT_EQ(send_with({seq[1], seq2[1]}), EINVAL);
  EXPECT_EQ(send_with({seq[1]}), 0);
  EXPECT_EQ(send_with({seq2[1]}), EBUSY);  // one context per connection
  for (int f : {pipe_fds[0], pipe_fds[1], stream[0], stream[1], seq[0], seq[1], seq2[0], seq2[1]}) ::close(f);
  ::close(fd);
  EXPECT_TRUE(wait_for_contexts(1));  // this fixture's own context only
}

}  // namespace
}  // namespace service_test
