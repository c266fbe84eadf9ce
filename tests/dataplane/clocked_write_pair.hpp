// Two dataplanes over a ring pair with one RC QP each, side a polled on a clock the test owns so
// that it decides when a's worker runs and how much time passed (stalls, deadlines, idle polls).
// a WRITEs 256 B into b.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/dataplane/dataplane_pair.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test {

class ClockedWritePair : public ::testing::Test {
 protected:
  void start(const std::string& name, PairOptions o, std::byte fill) {
    pair_ = DataplanePair::create(name, o);
    ASSERT_TRUE(pair_);
    t_ = pair_->a->now();
    a_ = make_endpoint(pair_->a->worker(0).engine(), QpOptions{});
    b_ = make_endpoint(pair_->b->worker(0).engine(), QpOptions{});
    connect_pair(a_, b_, QpOptions{});
    src_.assign(256, fill);
    dst_.assign(256, std::byte{0});
    src_mr_ = reg(*a_.engine, a_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    dst_mr_ = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  void TearDown() override {
    if (pair_) pair_->expect_no_mbuf_leak();
  }
  // One iteration of a's worker, `advance` after the last.
  void poll_a(Nanos advance = kMicro) { poll_a_at(t_ + advance); }
  void poll_a_at(Nanos t) {
    t_ = t;
    pair_->a->worker(0).poll(t_);
  }
  void post_write(std::uint64_t id) {
    ibv_sge g = sge(src_.data(), 256, src_mr_);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, id, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dst_mr_->rkey()), 0);
  }
  // Steps both sides until a's `writes` WRITEs complete, each successfully.
  void complete(std::size_t writes = 1) {
    std::vector<ibv_wc> wcs;
    for (int i = 0; i < 100000 && wcs.size() < writes; ++i) {
      poll_a();
      pair_->b->poll_once();
      for (const ibv_wc& wc : drain(a_)) wcs.push_back(wc);
    }
    ASSERT_EQ(wcs.size(), writes);
    for (const ibv_wc& wc : wcs) EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
  }

  std::unique_ptr<DataplanePair> pair_;
  Nanos t_ = 0;
  Endpoint a_, b_;
  std::vector<std::byte> src_, dst_;
  const rdma::MemoryRegion *src_mr_ = nullptr, *dst_mr_ = nullptr;
};

}  // namespace roce::test
