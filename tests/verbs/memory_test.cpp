// Protection domains and memory regions: the access flags and MR kinds a verbs program may ask
// for, and the errno each unsupported one gets.
#include <sys/mman.h>

#include "tests/verbs/loopback.hpp"

namespace verbs_test {
namespace memory_test {

TEST_F(DeviceTest, RegisterAndDeregister) {
  std::vector<std::uint8_t> buf(8192);
  ibv_mr* mr = reg(buf);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr, buf.data());
  EXPECT_EQ(mr->length, buf.size());
  EXPECT_EQ(mr->lkey, mr->rkey);
  EXPECT_EQ(mr->pd, pd);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);  // the MR still uses it
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(DeviceTest, RemoteWriteOrAtomicNeedLocalWrite) {
  std::vector<std::uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(reg(buf, IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(reg(buf, IBV_ACCESS_REMOTE_ATOMIC), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_mr* ro = reg(buf, IBV_ACCESS_REMOTE_READ);  // read-only remote access is fine
  ASSERT_NE(ro, nullptr);
  ibv_dereg_mr(ro);
}

TEST_F(DeviceTest, UnsupportedAccessFlags) {
  std::vector<std::uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(reg(buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);  // no on-demand paging
  errno = 0;
  EXPECT_EQ(reg(buf, IBV_ACCESS_LOCAL_WRITE | (1 << 12)), nullptr);
  EXPECT_EQ(errno, EINVAL);  // not an access flag at all
  // Optional flags (bits 20-29) are hints: accepted and ignored, as libibverbs does for devices
  // without optional access support.
  for (int flag : {static_cast<int>(IBV_ACCESS_RELAXED_ORDERING), 1 << 28}) {
    ibv_mr* hinted = reg(buf, IBV_ACCESS_LOCAL_WRITE | flag);
    ASSERT_NE(hinted, nullptr);
    ibv_dereg_mr(hinted);
  }
}

TEST_F(DeviceTest, BadRegions) {
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, nullptr, 4096, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  std::vector<std::uint8_t> buf(64);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, buf.data(), 0, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Unmapped memory fails now (EFAULT, as pinning does), not when the peer writes to it.
  void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  munmap(p, 8192);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, p, 8192, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
}

TEST_F(DeviceTest, ChosenIova) {
  std::vector<std::uint8_t> buf(4096);
  ibv_mr* mr = ibv_reg_mr_iova2(pd, buf.data(), buf.size(), 0x100000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(mr, nullptr);
  ibv_dereg_mr(mr);
  mr = ibv_reg_mr_iova(pd, buf.data(), buf.size(), 0, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ibv_dereg_mr(mr);
}

TEST_F(DeviceTest, MrKindsThisDeviceLacks) {
  std::vector<std::uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_mr* mr = reg(buf);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE), EOPNOTSUPP);
  ibv_dereg_mr(mr);
  errno = 0;
  EXPECT_EQ(ibv_alloc_mw(pd, static_cast<ibv_mw_type>(3)), nullptr);  // windows exist, type 3 does not
  EXPECT_EQ(errno, EINVAL);
  ibv_alloc_dm_attr dm{4096, 0, 0};
  errno = 0;
  EXPECT_EQ(ibv_alloc_dm(ctx, &dm), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_import_pd(ctx, 1), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(DeviceTest, DeallocPdBusyUntilItsObjectsGo) {
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(pd, cq, IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
  EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);  // the QP uses it
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  pd = nullptr;
}

}  // namespace memory_test
}  // namespace verbs_test
