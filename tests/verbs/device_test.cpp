// What a program sees of the device: the list, the names and the queries, with their answers
// to out-of-range arguments.
#include <arpa/inet.h>

#include "tests/verbs/loopback.hpp"

namespace verbs_test {
namespace device_test {

TEST(DeviceList, OneDeviceNamedByTheConfiguration) {
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(n, 1);
  EXPECT_STREQ(ibv_get_device_name(list[0]), "rocedp0");
  EXPECT_EQ(list[1], nullptr);
  EXPECT_EQ(list[0]->node_type, IBV_NODE_CA);
  EXPECT_EQ(list[0]->transport_type, IBV_TRANSPORT_IB);
  EXPECT_NE(ibv_get_device_guid(list[0]), 0u);
  ibv_free_device_list(list);
}

TEST_F(DeviceTest, DeviceAttributesAreTheEngineLimits) {
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx, &a), 0);
  EXPECT_EQ(a.phys_port_cnt, 1);
  EXPECT_EQ(a.vendor_id, 0xFFFFFFu);
  EXPECT_GT(a.max_qp, 0);
  EXPECT_GT(a.max_qp_wr, 0);
  EXPECT_GT(a.max_sge, 0);
  EXPECT_GT(a.max_cqe, 0);
  EXPECT_GT(a.max_qp_rd_atom, 0);
  EXPECT_EQ(a.max_srq, 65536);
  EXPECT_EQ(a.max_srq_wr, a.max_qp_wr);
  EXPECT_EQ(a.max_mw, a.max_mr);  // windows share the region table
  EXPECT_TRUE(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
  EXPECT_TRUE(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
  EXPECT_EQ(a.atomic_cap, IBV_ATOMIC_HCA);
  EXPECT_NE(a.node_guid, 0u);
  EXPECT_STRNE(a.fw_ver, "");
}

TEST_F(DeviceTest, QueryDeviceExThroughTheInline) {
  ibv_device_attr_ex x{};
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &x), 0);
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx, &a), 0);
  EXPECT_EQ(x.orig_attr.max_qp, a.max_qp);
  EXPECT_EQ(x.phys_port_cnt_ex, 1u);
  EXPECT_EQ(x.odp_caps.general_caps, 0u);
  ibv_query_device_ex_input in{};
  in.comp_mask = 1;
  EXPECT_EQ(ibv_query_device_ex(ctx, &in, &x), EINVAL);
}

TEST_F(DeviceTest, PortIsRoceOnEthernet) {
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
  EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(p.gid_tbl_len, 1);
  EXPECT_EQ(p.pkey_tbl_len, 1);
  EXPECT_GE(p.active_mtu, IBV_MTU_256);
  EXPECT_LE(p.active_mtu, p.max_mtu);
  EXPECT_TRUE(p.flags & IBV_QPF_GRH_REQUIRED);
  EXPECT_EQ(p.max_msg_sz, 1u << 31);
  EXPECT_NE(ibv_query_port(ctx, 2, &p), 0);
}

TEST_F(DeviceTest, GidZeroIsTheIpv4MappedAddress) {
  ibv_gid g{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
  const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  EXPECT_EQ(std::memcmp(g.raw, prefix, 12), 0);
  in_addr want{};
  ASSERT_EQ(inet_pton(AF_INET, "10.99.0.1", &want), 1);  // the --ip the test runs with
  EXPECT_EQ(std::memcmp(g.raw + 12, &want, 4), 0);
  EXPECT_EQ(ibv_query_gid(ctx, 1, 1, &g), -1);

  ibv_gid_entry e{};
  ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(e.port_num, 1u);
  EXPECT_EQ(ibv_query_gid_ex(ctx, 1, 1, &e, 0), ENODATA);
  EXPECT_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 1), EINVAL);

  ibv_gid_entry table[4]{};
  EXPECT_EQ(ibv_query_gid_table(ctx, table, 4, 0), 1);
}

TEST_F(DeviceTest, DefaultPartitionOnly) {
  __be16 pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
  EXPECT_EQ(pkey, htons(0xFFFF));
  EXPECT_EQ(ibv_query_pkey(ctx, 1, 1, &pkey), -1);
  EXPECT_EQ(ibv_get_pkey_index(ctx, 1, htons(0xFFFF)), 0);
  EXPECT_LT(ibv_get_pkey_index(ctx, 1, htons(0x8001)), 0);
}

TEST_F(DeviceTest, ContextFieldsProgramsRead) {
  EXPECT_EQ(ctx->num_comp_vectors, 1);
  EXPECT_GE(ctx->async_fd, 0);
  EXPECT_STREQ(ctx->device->name, "rocedp0");
}

// Objects that are not ours (another provider's, or already destroyed) get EINVAL. The check
// reads past the libibverbs struct, so the fakes here are zeroed memory of ample size.
TEST_F(DeviceTest, ForeignObjectsAreRejected) {
  alignas(64) static std::uint8_t mem[3][4096];
  std::memset(mem, 0, sizeof mem);
  auto* fake_pd = reinterpret_cast<ibv_pd*>(mem[0]);
  fake_pd->context = ctx;
  EXPECT_EQ(ibv_dealloc_pd(fake_pd), EINVAL);
  auto* fake_qp = reinterpret_cast<ibv_qp*>(mem[1]);
  fake_qp->context = ctx;
  EXPECT_EQ(ibv_destroy_qp(fake_qp), EINVAL);
  auto* fake_cq = reinterpret_cast<ibv_cq*>(mem[2]);
  fake_cq->context = ctx;
  EXPECT_EQ(ibv_destroy_cq(fake_cq), EINVAL);
  ibv_wc wc{};
  EXPECT_LT(ibv_poll_cq(fake_cq, 1, &wc), 0);
}

TEST(DeviceLifetime, ReopenAfterCloseWithLeftovers) {
  for (int round = 0; round < 3; ++round) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_EQ(n, 1);
    ibv_context* ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    ASSERT_NE(ctx, nullptr);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    ASSERT_NE(make_qp(pd, cq, IBV_QPT_RC), nullptr);
    static std::vector<std::uint8_t> buf(4096);
    ASSERT_NE(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE), nullptr);
    ASSERT_EQ(ibv_close_device(ctx), 0);  // frees the QP, CQ, MR and PD
  }
}

}  // namespace device_test
}  // namespace verbs_test
