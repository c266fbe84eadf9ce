// post_send's per-call checks (QueuePair::post_send): the QP's state is tested once per list and
// the send queue's room counted once, not per WR. Each refusal stays what it was per WR: the
// same error, bad_wr at the same WR, the WRs before it posted, the same counter. The region the
// last SGE named is kept from call to call, and asked at each call whether it still holds.
#include <gtest/gtest.h>

#include <array>

#include "tests/support/verbs_helpers.hpp"

namespace roce::test::post_send_refusal_test {
namespace {

rdma::EngineConfig two_hosts_in_one() {
  rdma::EngineConfig cfg;
  cfg.path.local.mac = {2, 0, 0, 0, 0, 1};
  cfg.path.local.ip = rdma::IpAddress::ipv4({10, 0, 0, 1});
  cfg.path.resolve_mac = [](const rdma::IpAddress&) -> std::optional<proto::MacAddr> { return proto::MacAddr{2, 0, 0, 0, 0, 2}; };
  return cfg;
}

// A list of `N` valid 64 B WRITEs from `buf`, wr_id 100, 101, ...
template <std::size_t N>
struct WriteList {
  std::array<ibv_sge, N> sg{};
  std::array<ibv_send_wr, N> wr{};
  WriteList(std::vector<std::byte>& buf, const rdma::MemoryRegion* mr) {
    for (std::size_t i = 0; i < N; ++i) {
      sg[i] = sge(buf.data(), 64, mr);
      wr[i].wr_id = 100 + i;
      wr[i].opcode = IBV_WR_RDMA_WRITE;
      wr[i].sg_list = &sg[i];
      wr[i].num_sge = 1;
      wr[i].send_flags = IBV_SEND_SIGNALED;
      wr[i].wr.rdma.remote_addr = 0x10000;
      wr[i].wr.rdma.rkey = 0x1234;
      wr[i].next = i + 1 < N ? &wr[i + 1] : nullptr;
    }
  }
};

struct Pair {
  rdma::MrTable mrs;
  rdma::Engine e{two_hosts_in_one(), mrs};
  QpOptions o;
  Endpoint a, b;
  std::vector<std::byte> buf = std::vector<std::byte>(64);
  const rdma::MemoryRegion* mr = nullptr;
  explicit Pair(std::uint32_t depth, std::size_t max_mrs = 4096) : mrs(max_mrs) {
    o.depth = depth;
    a = make_endpoint(e, o);
    b = make_endpoint(e, o);
    mr = reg(e, a.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  }
  int post_list(ibv_send_wr* first, ibv_send_wr** bad) { return e.post_send(a.qp, first, bad); }
  std::uint64_t full_hits() const { return e.limit_hits(rdma::EngineLimit::SendQueueFull); }
};

// RESET, INIT and RTR: the list is refused at its first WR with EINVAL, a valid first WR or not
// (the state is the first thing a WR was tested for), nothing is posted and no queue-full
// counted; an empty list is no error in any state. In RTS the same list posts.
TEST(PostSendRefusal, AQpThatDoesNotSendYetRefusesTheListAtItsFirstWr) {
  Pair p(8);
  WriteList<3> list(p.buf, p.mr);
  const auto expect_refused = [&](const char* state) {
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(p.post_list(nullptr, &bad), 0) << state;
    EXPECT_EQ(bad, nullptr) << state;
    EXPECT_EQ(p.post_list(list.wr.data(), &bad), EINVAL) << state;
    EXPECT_EQ(bad, &list.wr[0]) << state;
    // A first WR that is bad itself, and a last one: the same answer, at the first.
    list.wr[0].num_sge = 9;
    list.wr[2].opcode = static_cast<ibv_wr_opcode>(200);
    bad = nullptr;
    EXPECT_EQ(p.post_list(list.wr.data(), &bad), EINVAL) << state;
    EXPECT_EQ(bad, &list.wr[0]) << state;
    list.wr[0].num_sge = 1;
    list.wr[2].opcode = IBV_WR_RDMA_WRITE;
    // From the second WR on: refused there, at that WR.
    bad = nullptr;
    EXPECT_EQ(p.post_list(&list.wr[1], &bad), EINVAL) << state;
    EXPECT_EQ(bad, &list.wr[1]) << state;
    EXPECT_EQ(p.a.qp->context().sq.size(), 0u) << state;
    EXPECT_EQ(p.full_hits(), 0u) << state;
  };
  expect_refused("RESET");
  rdma::PeerPath path;
  path.mtu = p.o.mtu;
  path.dest_qpn = p.b.qp->qpn();
  path.rq_psn = p.o.rq_psn;
  path.dgid = gid_of(p.e);
  path.hop_limit = 1;
  path.max_dest_rd_atomic = p.o.max_rd_atomic;
  path.min_rnr_timer = p.o.min_rnr_timer;
  const rdma::QpTransition init = rdma::init_transition(p.o.type, p.o.access, p.o.qkey);
  ASSERT_TRUE(p.e.modify_qp(p.a.qp, init.attr, init.mask).ok());
  expect_refused("INIT");
  const rdma::QpTransition rtr = rdma::rtr_transition(p.o.type, path);
  ASSERT_TRUE(p.e.modify_qp(p.a.qp, rtr.attr, rtr.mask).ok());
  expect_refused("RTR");
  const rdma::QpTransition rts =
      rdma::rts_transition(p.o.type, rdma::SendSide{p.o.sq_psn, p.o.timeout, p.o.retry_cnt, p.o.rnr_retry, p.o.max_rd_atomic});
  ASSERT_TRUE(p.e.modify_qp(p.a.qp, rts.attr, rts.mask).ok());
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(p.post_list(list.wr.data(), &bad), 0);
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(p.a.qp->context().sq.size(), 3u);
}

// A list that fills the queue: ENOMEM at the first WR with no slot, the WRs before it posted, one
// queue-full counted per refused post; a WR refused for itself before the queue is full is
// EINVAL, as ever (the room is tested first, then the WR).
TEST(PostSendRefusal, AFullQueueRefusesAtTheWrWithNoSlotAndCountsEachRefusal) {
  Pair p(3);
  connect_pair(p.a, p.b, p.o);
  WriteList<3> first(p.buf, p.mr);
  first.wr[1].next = nullptr;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.post_list(first.wr.data(), &bad), 0);  // two of three slots
  WriteList<3> list(p.buf, p.mr);
  list.wr[0].num_sge = 9;
  EXPECT_EQ(p.post_list(list.wr.data(), &bad), EINVAL);
  EXPECT_EQ(bad, &list.wr[0]);
  EXPECT_EQ(p.full_hits(), 0u);
  list.wr[0].num_sge = 1;
  list.wr[1].num_sge = 9;  // no slot for it: the room's answer comes first
  bad = nullptr;
  EXPECT_EQ(p.post_list(list.wr.data(), &bad), ENOMEM);
  EXPECT_EQ(bad, &list.wr[1]);
  EXPECT_EQ(p.a.qp->context().sq.size(), 3u);
  EXPECT_EQ(p.full_hits(), 1u);
  bad = nullptr;
  EXPECT_EQ(p.post_list(&list.wr[2], &bad), ENOMEM);
  EXPECT_EQ(bad, &list.wr[2]);
  EXPECT_EQ(p.full_hits(), 2u);
}

// In ERR every WR is flushed as it is posted and its slot given back at once: a list longer than
// the queue posts whole, each WR completing with IBV_WC_WR_FLUSH_ERR in order. A WR refused for
// itself still stops the list there (EINVAL, bad_wr at it) after the ones before it flushed.
TEST(PostSendRefusal, AQpInErrorFlushesAListLongerThanItsQueue) {
  Pair p(3);
  connect_pair(p.a, p.b, p.o);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_TRUE(p.e.modify_qp(p.a.qp, attr, IBV_QP_STATE).ok());
  WriteList<7> list(p.buf, p.mr);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(p.post_list(list.wr.data(), &bad), 0);
  EXPECT_EQ(bad, nullptr);
  std::vector<ibv_wc> wcs = drain(p.a);
  ASSERT_EQ(wcs.size(), 7u);
  for (std::size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].wr_id, 100 + i);
    EXPECT_EQ(wcs[i].status, IBV_WC_WR_FLUSH_ERR);
  }
  list.wr[5].num_sge = 9;
  EXPECT_EQ(p.post_list(list.wr.data(), &bad), EINVAL);
  EXPECT_EQ(bad, &list.wr[5]);
  EXPECT_EQ(drain(p.a).size(), 5u);
  EXPECT_EQ(p.full_hits(), 0u);
}

// The WQE the last post made: its first local segment, and whether its SGE failed the check.
const rdma::LocalSegment& last_segment(const Pair& p) {
  const rdma::QpContext& c = p.a.qp->context();
  return c.send_segs(c.sq.at(c.sq.tail() - 1))[0];
}
bool last_local_error(const Pair& p) {
  const rdma::QpContext& c = p.a.qp->context();
  return c.sq.at(c.sq.tail() - 1).local_error;
}

// One MR slot, so every registration takes it and its key's 8-bit generation comes back after
// 256. A post after the region was invalidated or deregistered fails its local check (the WQE's
// local error); a region registered again under the very key the QP's last post named, with no
// post in between, is looked up again: its own memory, not the old region's bounds and address.
TEST(PostSendLkey, ARegionGoneOrRegisteredAgainUnderTheSameKeyIsLookedUpAgain) {
  for (const bool post_between : {true, false}) {
    SCOPED_TRACE(post_between ? "posts while the key is gone" : "no post until the key is back");
    Pair p(16, 1);
    connect_pair(p.a, p.b, p.o);
    ASSERT_NE(p.mr, nullptr);
    const std::uint32_t key = p.mr->lkey();
    WriteList<1> w(p.buf, p.mr);
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);
    EXPECT_FALSE(last_local_error(p));
    EXPECT_EQ(last_segment(p).ptr, p.buf.data());
    ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);  // the kept region
    EXPECT_EQ(last_segment(p).ptr, p.buf.data());
    if (post_between) {
      ASSERT_TRUE(p.mrs.invalidate(key, p.a.pd).ok());
      ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);
      EXPECT_TRUE(last_local_error(p)) << "an invalidated key";
    }
    ASSERT_TRUE(p.mrs.deregister(key).ok());
    if (post_between) {
      ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);
      EXPECT_TRUE(last_local_error(p)) << "a deregistered key";
    }
    // Registered again under other keys, then under `key` for other memory.
    std::vector<std::byte> other(4096);
    const rdma::MemoryRegion* again = nullptr;
    for (int i = 0; i < 300 && again == nullptr; ++i) {
      auto r = p.mrs.register_region(p.a.pd, other.data(), other.size(), IBV_ACCESS_LOCAL_WRITE);
      ASSERT_TRUE(r.ok()) << r.error().message;
      if ((*r)->lkey() == key) again = *r;
      else ASSERT_TRUE(p.mrs.deregister((*r)->lkey()).ok());
    }
    ASSERT_NE(again, nullptr) << "the slot's key never came back";
    w.sg[0] = sge(other.data() + 1024, 64, again);
    ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);
    EXPECT_FALSE(last_local_error(p)) << "the region registered again under the same key";
    EXPECT_EQ(last_segment(p).ptr, other.data() + 1024);
  }
}

// The kept region is one QP's: another QP's post looks its own key up, and a key of another
// protection domain is refused there as ever.
TEST(PostSendLkey, AnotherQpsPostChecksItsOwnKeyAndDomain) {
  Pair p(16);
  connect_pair(p.a, p.b, p.o);
  WriteList<1> w(p.buf, p.mr);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);
  EXPECT_FALSE(last_local_error(p));
  // B's PD is not A's: B posting A's key fails its check; A's post still goes.
  ASSERT_EQ(p.e.post_send(p.b.qp, w.wr.data(), &bad), 0);
  const rdma::QpContext& cb = p.b.qp->context();
  EXPECT_TRUE(cb.sq.at(cb.sq.tail() - 1).local_error);
  ASSERT_EQ(p.post_list(w.wr.data(), &bad), 0);
  EXPECT_FALSE(last_local_error(p));
  EXPECT_EQ(last_segment(p).ptr, p.buf.data());
}

}  // namespace
}  // namespace roce::test::post_send_refusal_test
