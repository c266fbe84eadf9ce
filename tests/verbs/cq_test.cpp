// Completion queues and completion channels: sizes, comp vectors, arming, the channel's fd
// (poll()able, O_NONBLOCK), ibv_get_cq_event / ibv_ack_cq_events and destroy ordering.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "tests/verbs/loopback.hpp"

namespace verbs_test {
namespace cq_test {

TEST_F(DeviceTest, CqSizesAndVectors) {
  ibv_device_attr d{};
  ASSERT_EQ(ibv_query_device(ctx, &d), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, 0, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, d.max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, 16, nullptr, nullptr, 1), nullptr);  // one completion vector
  EXPECT_EQ(errno, EINVAL);
  ibv_cq* cq = ibv_create_cq(ctx, 16, this, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_GE(cq->cqe, 16);
  EXPECT_EQ(cq->cq_context, this);
  EXPECT_EQ(ibv_resize_cq(cq, 64), EOPNOTSUPP);
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(PairTest, CompletionChannelDeliversTheArmedCq) {
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  ASSERT_NE(ch, nullptr);
  ASSERT_GE(ch->fd, 0);
  ibv_cq* cq = ibv_create_cq(ctx, 16, this, ch, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);  // a CQ uses it
  cq_a = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  a = make_qp(pd, cq_a, IBV_QPT_RC);
  b = make_qp(pd, cq, IBV_QPT_RC);
  ASSERT_EQ(connect(a, IBV_QPT_RC, gid, b->qp_num), 0);
  ASSERT_EQ(connect(b, IBV_QPT_RC, gid, a->qp_num), 0);
  std::vector<std::uint8_t> buf(256);
  ibv_mr* mr = reg(buf);

  // Nothing armed, nothing readable.
  const int fl = fcntl(ch->fd, F_GETFL);
  ASSERT_EQ(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(fcntl(ch->fd, F_SETFL, fl), 0);

  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
    ASSERT_EQ(post_recv(b, mr, 0, 64, 100 + round), 0);
    ASSERT_EQ(post(a, IBV_WR_SEND, mr, 128, 16), 0);
    pollfd p{ch->fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 5000), 1) << "no completion event";
    ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    EXPECT_EQ(ev_cq, cq);
    EXPECT_EQ(ev_ctx, this);
    ibv_ack_cq_events(ev_cq, 1);
    ibv_wc wc{};
    ASSERT_EQ(poll_n(cq, &wc, 1), 1);
    EXPECT_EQ(wc.wr_id, static_cast<std::uint64_t>(100 + round));
    ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  }
  // Arming with entries already waiting raises the event at once.
  ASSERT_EQ(post_recv(b, mr, 0, 64), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, mr, 128, 16), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_n(cq_a, &wc, 1), 1);
  usleep(100000);  // the dataplane thread completes the receive; nobody polls it
  ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
  pollfd p{ch->fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
  ibv_ack_cq_events(ev_cq, 1);

  ASSERT_EQ(ibv_destroy_qp(b), 0);
  b = nullptr;
  EXPECT_EQ(ibv_destroy_cq(cq), 0);  // every event acknowledged: no wait
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(DeviceTest, ChannelOfAnotherContextIsRefused) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* other = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  ASSERT_NE(other, nullptr);
  ibv_comp_channel* ch = ibv_create_comp_channel(other);
  ASSERT_NE(ch, nullptr);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, 4, nullptr, ch, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_close_device(other), 0);
}

}  // namespace cq_test
}  // namespace verbs_test
