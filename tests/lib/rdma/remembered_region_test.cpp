// RememberedRegion (lib/rdma/memory.hpp): the region an R_Key named, remembered by the responder's
// runs and the worker's destination prefetch, must stop answering for its key as soon as
// MrTable::find would: deregistered, invalidated, its slot registered again; never a window.
#include <gtest/gtest.h>

#include <vector>

#include "lib/rdma/memory.hpp"

namespace roce::test::remembered_region_test {
namespace {

constexpr std::uint64_t kIova = 0x7000'0000;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND;

TEST(RememberedRegion, ARegionAnswersForItsKeyWithinItsBounds) {
  rdma::MrTable mrs;
  const rdma::PdHandle pd = mrs.alloc_pd();
  std::vector<std::byte> bytes(4096);
  auto mr = mrs.register_region(pd, bytes.data(), bytes.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t key = (*mr)->rkey();
  rdma::RememberedRegion r;
  EXPECT_FALSE(r.holds(key)) << "nothing remembered yet";
  r.remember(mrs, key, **mr);
  EXPECT_TRUE(r.holds(key));
  EXPECT_FALSE(r.holds(key ^ 1)) << "another generation of the key";
  EXPECT_FALSE(r.holds(key + 0x100)) << "another slot";
  EXPECT_EQ(r.translate(kIova, 4096), bytes.data());
  EXPECT_EQ(r.translate(kIova + 64, 64), bytes.data() + 64);
  EXPECT_EQ(r.translate(kIova + 4032, 64), bytes.data() + 4032);
  EXPECT_EQ(r.translate(kIova + 4033, 64), nullptr);
  EXPECT_EQ(r.translate(kIova - 1, 64), nullptr);
  EXPECT_EQ(r.translate(kIova + 64, UINT64_MAX), nullptr);
  EXPECT_EQ(r.translate(UINT64_MAX, 2), nullptr);
  EXPECT_EQ(r.address_of(kIova + 4095), bytes.data() + 4095);
  EXPECT_EQ(r.address_of(kIova + 4096), nullptr);
  EXPECT_EQ(r.address_of(kIova - 1), nullptr);
  r.forget();
  EXPECT_FALSE(r.holds(key));
}

TEST(RememberedRegion, ADeregisteredInvalidatedOrRegisteredAgainRegionIsNotHeld) {
  rdma::MrTable mrs(1);  // one slot: a registration after a deregistration takes it again
  const rdma::PdHandle pd = mrs.alloc_pd();
  std::vector<std::byte> first(4096), second(8192);
  auto mr = mrs.register_region(pd, first.data(), first.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t key = (*mr)->rkey();
  rdma::RememberedRegion r;
  r.remember(mrs, key, **mr);
  ASSERT_TRUE(mrs.deregister(key).ok());
  EXPECT_FALSE(r.holds(key));

  mr = mrs.register_region(pd, second.data(), second.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t again = (*mr)->rkey();
  ASSERT_EQ(again >> 8, key >> 8) << "the slot is used again";
  EXPECT_FALSE(r.holds(key)) << "the old key names nothing now";
  EXPECT_FALSE(r.holds(again)) << "the new region was never remembered";
  r.remember(mrs, again, **mr);
  EXPECT_TRUE(r.holds(again));
  EXPECT_EQ(r.translate(kIova + 4096, 4096), second.data() + 4096);
  ASSERT_TRUE(mrs.invalidate(again, pd).ok());
  EXPECT_FALSE(r.holds(again));
}

TEST(RememberedRegion, AWindowIsNeverRemembered) {
  rdma::MrTable mrs;
  const rdma::PdHandle pd = mrs.alloc_pd();
  std::vector<std::byte> bytes(8192);
  auto mr = mrs.register_region(pd, bytes.data(), bytes.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t region = (*mr)->rkey();
  auto mw = mrs.alloc_window(pd, 1);
  ASSERT_TRUE(mw.ok());
  ASSERT_TRUE(mrs.bind_window(*mw, *mw, pd, 0, region, kIova, 1024, IBV_ACCESS_REMOTE_WRITE).ok());
  const rdma::MemoryRegion* window = mrs.find(*mw);
  ASSERT_NE(window, nullptr);
  rdma::RememberedRegion r;
  r.remember(mrs, *mw, *window);
  EXPECT_FALSE(r.holds(*mw));
  r.remember(mrs, region, **mr);
  r.remember(mrs, *mw, *window);
  EXPECT_FALSE(r.holds(*mw));
  EXPECT_TRUE(r.holds(region)) << "what was remembered stays";
}

}  // namespace
}  // namespace roce::test::remembered_region_test

namespace roce::test::remembered_region_test {
namespace {

// renew keeps a region across worker iterations only while its key names it: not after the
// slot's 256th registration since, which brings the same key back for other memory.
TEST(RememberedRegion, RenewKeepsARegionUntilItsSlotIsRegisteredAgainEvenUnderTheSameKey) {
  rdma::MrTable mrs(1);
  const rdma::PdHandle pd = mrs.alloc_pd();
  std::vector<std::byte> first(4096), second(4096);
  auto mr = mrs.register_region(pd, first.data(), first.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t key = (*mr)->rkey();
  rdma::RememberedRegion r;
  r.renew();
  EXPECT_FALSE(r.holds(key)) << "nothing remembered, nothing renewed";
  r.remember(mrs, key, **mr);
  r.renew();
  ASSERT_TRUE(r.holds(key)) << "still registered: kept";
  EXPECT_EQ(r.translate(kIova, 64), first.data());

  ASSERT_TRUE(mrs.deregister(key).ok());
  std::uint32_t again = 0;
  for (int i = 0; i < 256 && again != key; ++i) {
    mr = mrs.register_region(pd, second.data(), second.size(), kAccess, kIova);
    ASSERT_TRUE(mr.ok());
    again = (*mr)->rkey();
    if (again != key) {
      ASSERT_TRUE(mrs.deregister(again).ok());
    }
  }
  ASSERT_EQ(again, key) << "the key's generation came back";
  EXPECT_TRUE(r.holds(key)) << "the key alone cannot tell (hence renew once per iteration)";
  r.renew();
  EXPECT_FALSE(r.holds(key)) << "registered again since: forgotten";
  EXPECT_EQ(r.translate(kIova, 64), nullptr);

  r.remember(mrs, key, **mr);
  r.renew();
  EXPECT_EQ(r.translate(kIova, 64), second.data());
  ASSERT_TRUE(mrs.invalidate(key, pd).ok());
  r.renew();
  EXPECT_FALSE(r.holds(key)) << "invalidated: forgotten";
}

}  // namespace
}  // namespace roce::test::remembered_region_test
