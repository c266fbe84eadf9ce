// librdmacm's entry points on a verbs device whose address is IPv6 (roce-run --ip fd99::1 on a
// looped-back net_ring0 port): sockaddr_in6 through bind/resolve/listen/connect/accept, the
// CMA header's IPv6 addresses reaching the passive ID, GIDs that are the IPv6 address itself,
// SIDR for UD services, rdma_getaddrinfo picking the device's family, and the refusals of the
// other family.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/verbs/cm_events.hpp"

namespace {

using cm_test::expect_event;
using cm_test::next_event;

constexpr const char* kOurIp = "fd99::1";  // roce-run --ip (tests/verbs/meson.build)
constexpr int kLocalWrite = IBV_ACCESS_LOCAL_WRITE;

sockaddr_in6 addr6_of(const char* ip, std::uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  EXPECT_EQ(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
  return a;
}

sockaddr* sa(sockaddr_in6& a) { return reinterpret_cast<sockaddr*>(&a); }

std::string text_of(const sockaddr* s) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (s->sa_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(s)->sin6_addr, buf, sizeof buf);
  else if (s->sa_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(s)->sin_addr, buf, sizeof buf);
  return buf;
}

std::uint16_t port_of(const sockaddr* s) { return ntohs(reinterpret_cast<const sockaddr_in6*>(s)->sin6_port); }

// The GID of an IPv6 address is the address (RoCE v2), never an IPv4-mapped form.
bool gid_is(const ibv_gid& g, const char* ip) {
  in6_addr a{};
  inet_pton(AF_INET6, ip, &a);
  return std::memcmp(g.raw, &a, 16) == 0;
}

void poll_completions(std::initializer_list<ibv_cq*> cqs, int want) {
  int got = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < want && std::chrono::steady_clock::now() < until) {
    for (ibv_cq* q : cqs) {
      ibv_wc wc{};
      if (ibv_poll_cq(q, 1, &wc) == 1) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        ++got;
      }
    }
  }
  EXPECT_EQ(got, want);
}

class RdmaCmV6 : public ::testing::Test {
 protected:
  void SetUp() override {
    ch = rdma_create_event_channel();
    ASSERT_NE(ch, nullptr) << "run under roce-run: " << std::strerror(errno);
    server_ch = rdma_create_event_channel();
    ASSERT_NE(server_ch, nullptr);
  }
  void TearDown() override {
    if (server_ch) rdma_destroy_event_channel(server_ch);
    if (ch) rdma_destroy_event_channel(ch);
  }
  // An active ID of the port space, resolved to our address at `port`.
  rdma_cm_id* resolved(rdma_port_space ps, std::uint16_t port) {
    rdma_cm_id* id = nullptr;
    EXPECT_EQ(rdma_create_id(ch, &id, nullptr, ps), 0);
    sockaddr_in6 dst = addr6_of(kOurIp, port);
    EXPECT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0) << std::strerror(errno);
    EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED), 0);
    EXPECT_EQ(rdma_resolve_route(id, 2000), 0);
    EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED), 0);
    return id;
  }
  rdma_event_channel* ch = nullptr;
  rdma_event_channel* server_ch = nullptr;
};

// The whole RC connection over IPv6: the listener on the IPv6 wildcard, the active ID's source
// becoming the device's IPv6 address, the path's GIDs, the CMA header's addresses and port on
// the passive ID, a SEND over the connected QPs and the disconnect.
TEST_F(RdmaCmV6, RcConnectionCarriesIpv6AddressesEndToEnd) {
  rdma_cm_id* listener = nullptr;
  ASSERT_EQ(rdma_create_id(server_ch, &listener, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in6 any = addr6_of("::", 7600);
  ASSERT_EQ(rdma_bind_addr(listener, sa(any)), 0) << std::strerror(errno);
  EXPECT_EQ(listener->verbs, nullptr);  // a wildcard names no device
  ASSERT_EQ(rdma_listen(listener, 4), 0);
  EXPECT_EQ(rdma_get_local_addr(listener)->sa_family, AF_INET6);
  EXPECT_EQ(rdma_get_src_port(listener), htons(7600));

  rdma_cm_id* client = resolved(RDMA_PS_TCP, 7600);
  ASSERT_NE(client, nullptr);
  const sockaddr* src = rdma_get_local_addr(client);
  ASSERT_EQ(src->sa_family, AF_INET6);
  EXPECT_EQ(text_of(src), kOurIp);
  const std::uint16_t client_port = port_of(src);
  EXPECT_NE(client_port, 0);
  EXPECT_EQ(rdma_get_peer_addr(client)->sa_family, AF_INET6);
  EXPECT_EQ(rdma_get_dst_port(client), htons(7600));
  ASSERT_EQ(client->route.num_paths, 1);
  EXPECT_TRUE(gid_is(client->route.path_rec->sgid, kOurIp));
  EXPECT_TRUE(gid_is(client->route.path_rec->dgid, kOurIp));

  ibv_pd* pd = ibv_alloc_pd(client->verbs);
  ibv_cq* ccq = ibv_create_cq(client->verbs, 16, nullptr, nullptr, 0);
  ibv_cq* scq = ibv_create_cq(client->verbs, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && ccq && scq);
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.cap = {8, 8, 1, 1, 0};
  qa.send_cq = qa.recv_cq = ccq;
  ASSERT_EQ(rdma_create_qp(client, pd, &qa), 0) << std::strerror(errno);
  const char hello[] = "hello over IPv6";
  rdma_conn_param p{};
  p.private_data = hello;
  p.private_data_len = sizeof hello;
  p.responder_resources = p.initiator_depth = 1;
  p.retry_count = p.rnr_retry_count = 7;
  ASSERT_EQ(rdma_connect(client, &p), 0) << std::strerror(errno);

  rdma_cm_event* e = next_event(server_ch);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_NE(e->param.conn.private_data, nullptr);
  EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), hello);
  rdma_cm_id* server = e->id;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  // What the CMA header said: the active side's IPv6 address and port, the address it asked for.
  const sockaddr* peer = rdma_get_peer_addr(server);
  ASSERT_EQ(peer->sa_family, AF_INET6);
  EXPECT_EQ(text_of(peer), kOurIp);
  EXPECT_EQ(port_of(peer), client_port);
  const sockaddr* local = rdma_get_local_addr(server);
  ASSERT_EQ(local->sa_family, AF_INET6);
  EXPECT_EQ(text_of(local), kOurIp);
  EXPECT_EQ(port_of(local), 7600);
  EXPECT_TRUE(gid_is(server->route.path_rec->sgid, kOurIp));
  EXPECT_TRUE(gid_is(server->route.path_rec->dgid, kOurIp));

  qa.send_cq = qa.recv_cq = scq;
  ASSERT_EQ(rdma_create_qp(server, pd, &qa), 0);
  std::vector<char> rbuf(64), sbuf(64);
  ibv_mr* rmr = ibv_reg_mr(pd, rbuf.data(), rbuf.size(), kLocalWrite);
  ibv_mr* smr = ibv_reg_mr(pd, sbuf.data(), sbuf.size(), 0);
  ASSERT_TRUE(rmr && smr);
  ibv_sge rsge{reinterpret_cast<std::uintptr_t>(rbuf.data()), 64, rmr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(server->qp, &rwr, &bad_r), 0);
  ASSERT_EQ(rdma_accept(server, nullptr), 0) << std::strerror(errno);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  // The QPs' address vectors: the IPv6 GIDs.
  ibv_qp_attr qattr{};
  ibv_qp_init_attr qinit{};
  ASSERT_EQ(ibv_query_qp(client->qp, &qattr, IBV_QP_AV, &qinit), 0);
  EXPECT_TRUE(qattr.ah_attr.is_global);
  EXPECT_TRUE(gid_is(qattr.ah_attr.grh.dgid, kOurIp));

  std::strcpy(sbuf.data(), "v6 data");
  ibv_sge ssge{reinterpret_cast<std::uintptr_t>(sbuf.data()), 8, smr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(client->qp, &swr, &bad_s), 0);
  poll_completions({ccq, scq}, 2);
  EXPECT_STREQ(rbuf.data(), "v6 data");

  EXPECT_EQ(rdma_disconnect(client), 0);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_DISCONNECTED), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_DISCONNECTED), 0);
  rdma_destroy_qp(server);
  rdma_destroy_qp(client);
  EXPECT_EQ(rdma_destroy_id(server), 0);
  EXPECT_EQ(rdma_destroy_id(client), 0);
  EXPECT_EQ(rdma_destroy_id(listener), 0);
  ibv_dereg_mr(rmr);
  ibv_dereg_mr(smr);
  ibv_destroy_cq(ccq);
  ibv_destroy_cq(scq);
  ibv_dealloc_pd(pd);
}

// A UD service over IPv6 (udaddy's way): the SIDR_REQ's CMA header with IPv6 addresses, the
// ESTABLISHED event's address handle on the IPv6 GID, a datagram through it.
TEST_F(RdmaCmV6, UdServiceResolvedThroughSidr) {
  rdma_cm_id* listener = nullptr;
  ASSERT_EQ(rdma_create_id(server_ch, &listener, nullptr, RDMA_PS_UDP), 0);
  sockaddr_in6 ours = addr6_of(kOurIp, 7601);
  ASSERT_EQ(rdma_bind_addr(listener, sa(ours)), 0);
  EXPECT_NE(listener->verbs, nullptr);  // bound to the device's address
  ASSERT_EQ(rdma_listen(listener, 4), 0);
  rdma_cm_id* client = resolved(RDMA_PS_UDP, 7601);
  ASSERT_NE(client, nullptr);

  ibv_pd* pd = ibv_alloc_pd(client->verbs);
  ibv_cq* cq = ibv_create_cq(client->verbs, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_UD;
  qa.cap = {8, 8, 1, 1, 0};
  ASSERT_EQ(rdma_create_qp(client, pd, &qa), 0);
  ASSERT_EQ(rdma_connect(client, nullptr), 0) << std::strerror(errno);

  rdma_cm_event* e = next_event(server_ch);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  rdma_cm_id* server = e->id;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  ASSERT_EQ(rdma_get_peer_addr(server)->sa_family, AF_INET6);
  EXPECT_EQ(text_of(rdma_get_peer_addr(server)), kOurIp);
  EXPECT_EQ(port_of(rdma_get_peer_addr(server)), ntohs(rdma_get_src_port(client)));
  ASSERT_EQ(rdma_create_qp(server, pd, &qa), 0);
  std::vector<char> rbuf(40 + 64);
  ibv_mr* rmr = ibv_reg_mr(pd, rbuf.data(), rbuf.size(), kLocalWrite);
  ASSERT_NE(rmr, nullptr);
  ibv_sge rsge{reinterpret_cast<std::uintptr_t>(rbuf.data()), static_cast<std::uint32_t>(rbuf.size()), rmr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(server->qp, &rwr, &bad_r), 0);
  ASSERT_EQ(rdma_accept(server, nullptr), 0) << std::strerror(errno);

  e = next_event(ch);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->event, RDMA_CM_EVENT_ESTABLISHED);
  EXPECT_EQ(e->param.ud.qp_num, server->qp->qp_num);
  EXPECT_TRUE(e->param.ud.ah_attr.is_global);
  EXPECT_TRUE(gid_is(e->param.ud.ah_attr.grh.dgid, kOurIp));
  ibv_ah* ah = ibv_create_ah(pd, &e->param.ud.ah_attr);
  ASSERT_NE(ah, nullptr);
  const std::uint32_t qpn = e->param.ud.qp_num, qkey = e->param.ud.qkey;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);

  std::vector<char> sbuf(64);
  std::strcpy(sbuf.data(), "v6 datagram");
  ibv_mr* smr = ibv_reg_mr(pd, sbuf.data(), sbuf.size(), 0);
  ibv_sge ssge{reinterpret_cast<std::uintptr_t>(sbuf.data()), 12, smr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.wr.ud.ah = ah;
  swr.wr.ud.remote_qpn = qpn;
  swr.wr.ud.remote_qkey = qkey;
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(client->qp, &swr, &bad_s), 0);
  poll_completions({cq}, 2);
  EXPECT_STREQ(rbuf.data() + 40, "v6 datagram");  // after the GRH (an IPv6 header fills all 40 bytes)

  ibv_destroy_ah(ah);
  rdma_destroy_qp(server);
  rdma_destroy_qp(client);
  EXPECT_EQ(rdma_destroy_id(server), 0);
  EXPECT_EQ(rdma_destroy_id(client), 0);
  EXPECT_EQ(rdma_destroy_id(listener), 0);
  ibv_dereg_mr(rmr);
  ibv_dereg_mr(smr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
}

// The device's one address is IPv6: another IPv6 address or an IPv4 one is not ours, an IPv4
// peer has no route, a source of another family than the peer is EINVAL (as the kernel's
// rdma_resolve_addr), an IPv4 wildcard listens all the same (the device has one address), an
// IPv6 peer nobody answers neighbour discovery for is ADDR_ERROR.
TEST_F(RdmaCmV6, AddressFamilyRules) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in6 other = addr6_of("fd99::2", 7602);
  EXPECT_EQ(rdma_bind_addr(id, sa(other)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(7602);
  inet_pton(AF_INET, "10.99.0.1", &v4.sin_addr);
  EXPECT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&v4)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  EXPECT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&v4), 100), -1);
  EXPECT_EQ(errno, EAFNOSUPPORT);
  sockaddr_in6 ours = addr6_of(kOurIp, 0);
  EXPECT_EQ(rdma_resolve_addr(id, sa(ours), reinterpret_cast<sockaddr*>(&v4), 100), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_destroy_id(id), 0);

  // An IPv4 wildcard listener hears IPv6 requests to its port.
  rdma_cm_id* listener = nullptr;
  ASSERT_EQ(rdma_create_id(server_ch, &listener, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in any4{};
  any4.sin_family = AF_INET;
  any4.sin_port = htons(7603);
  ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&any4)), 0);
  ASSERT_EQ(rdma_listen(listener, 1), 0);
  rdma_cm_id* client = resolved(RDMA_PS_TCP, 7603);
  ASSERT_NE(client, nullptr);
  ibv_pd* pd = ibv_alloc_pd(client->verbs);
  ibv_cq* cq = ibv_create_cq(client->verbs, 4, nullptr, nullptr, 0);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap = {2, 2, 1, 1, 0};
  ASSERT_EQ(rdma_create_qp(client, pd, &qa), 0);
  ASSERT_EQ(rdma_connect(client, nullptr), 0);
  rdma_cm_event* e = next_event(server_ch);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  EXPECT_EQ(rdma_get_peer_addr(e->id)->sa_family, AF_INET6);
  rdma_cm_id* server = e->id;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  ASSERT_EQ(rdma_reject(server, nullptr, 0), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_REJECTED), 28);
  rdma_destroy_qp(client);
  EXPECT_EQ(rdma_destroy_id(server), 0);
  EXPECT_EQ(rdma_destroy_id(client), 0);
  EXPECT_EQ(rdma_destroy_id(listener), 0);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);

  // Nobody on the ring answers a Neighbor Solicitation for this one.
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in6 nobody = addr6_of("fd99::77", 7604);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(nobody), 50), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_ERROR), -ETIMEDOUT);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

// rdma_getaddrinfo on an IPv6 device: numeric IPv6 names, the passive wildcard of the device's
// family when none is asked for, IPv4 when asked for, AF_IB never.
TEST(RdmaAddrinfoV6, PicksTheDevicesFamily) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* r = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, "18515", &hints, &r), 0);
  ASSERT_NE(r->ai_src_addr, nullptr);
  EXPECT_EQ(r->ai_family, AF_INET6);
  ASSERT_EQ(r->ai_src_addr->sa_family, AF_INET6);
  EXPECT_EQ(text_of(r->ai_src_addr), "::");
  EXPECT_EQ(port_of(r->ai_src_addr), 18515);
  rdma_freeaddrinfo(r);

  ASSERT_EQ(rdma_getaddrinfo(kOurIp, "7605", nullptr, &r), 0);
  ASSERT_NE(r->ai_dst_addr, nullptr);
  EXPECT_EQ(r->ai_family, AF_INET6);
  EXPECT_EQ(text_of(r->ai_dst_addr), kOurIp);
  EXPECT_EQ(r->ai_dst_len, sizeof(sockaddr_in6));
  rdma_freeaddrinfo(r);

  hints = {};
  hints.ai_family = AF_INET;
  hints.ai_flags = RAI_PASSIVE;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, "1", &hints, &r), 0);
  EXPECT_EQ(r->ai_src_addr->sa_family, AF_INET);
  rdma_freeaddrinfo(r);
  hints.ai_family = AF_IB;
  EXPECT_EQ(rdma_getaddrinfo(kOurIp, "1", &hints, &r), EAI_FAMILY);
}

// rdma_server / rdma_client's way over IPv6: synchronous endpoints from rdma_getaddrinfo (the
// passive one on "::"), one 16-byte message each way.
TEST(RdmaCmSyncV6, EndpointsConnectExchangeAndDisconnect) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* passive = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, "7606", &hints, &passive), 0);
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = 16;
  attr.sq_sig_all = 1;
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen_id, passive, nullptr, &attr), 0) << std::strerror(errno);
  ASSERT_EQ(rdma_listen(listen_id, 0), 0);

  std::atomic<int> server_result{-1};
  std::thread server([&] {
    rdma_cm_id* id = nullptr;
    if (rdma_get_request(listen_id, &id) != 0) return;
    char msg[16] = {};
    ibv_mr* mr = rdma_reg_msgs(id, msg, sizeof msg);
    ibv_wc wc{};
    const bool ok = mr && rdma_get_peer_addr(id)->sa_family == AF_INET6 && rdma_post_recv(id, nullptr, msg, sizeof msg, mr) == 0 &&
                    rdma_accept(id, nullptr) == 0 && rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
                    rdma_post_send(id, nullptr, msg, sizeof msg, nullptr, IBV_SEND_INLINE) == 0 &&
                    rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
    rdma_disconnect(id);
    if (mr) rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
    server_result = ok ? 0 : 1;
  });

  hints = {};
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* active = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(kOurIp, "7606", &hints, &active), 0);
  ibv_qp_init_attr cattr = attr;
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &cattr), 0) << std::strerror(errno);
  EXPECT_EQ(rdma_get_local_addr(id)->sa_family, AF_INET6);
  char recv_msg[16] = {}, send_msg[16] = "v6 sync hello";
  ibv_mr* mr = rdma_reg_msgs(id, recv_msg, sizeof recv_msg);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(rdma_post_recv(id, nullptr, recv_msg, sizeof recv_msg, mr), 0);
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(rdma_post_send(id, nullptr, send_msg, sizeof send_msg, nullptr, IBV_SEND_INLINE), 0);
  ibv_wc wc{};
  EXPECT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(rdma_get_recv_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_STREQ(recv_msg, "v6 sync hello");
  server.join();
  EXPECT_EQ(server_result.load(), 0);
  EXPECT_EQ(rdma_disconnect(id), 0);
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen_id);
  rdma_freeaddrinfo(active);
  rdma_freeaddrinfo(passive);
}

}  // namespace

namespace {

// Plain verbs on the IPv6 device (no rdma_cm): an RC QP's RTR and an address handle resolve
// their IPv6 peer by neighbour discovery as IPv4 ones by ARP. The device's own GID resolves at
// once (loopback); a peer nobody answers for is EHOSTUNREACH after the wait; an IPv4 peer (the
// other family) is EINVAL. Until session 9 only IPv4 peers were resolved, and an IPv6 one
// failed RTR without a frame sent (ibv_rc_pingpong toward rxe's fd77:: GID).
TEST(VerbsV6, RtrAndAddressHandlesResolveTheirIpv6Peer) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_EQ(n, 1);
  ibv_context* ctx = ibv_open_device(list[0]);
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  const auto rtr_toward = [&](const char* peer) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap = {1, 1, 1, 1, 0};
    ibv_qp* qp = ibv_create_qp(pd, &ia);
    EXPECT_NE(qp, nullptr);
    if (qp == nullptr) return -1;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = 0x77;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    in6_addr d{};
    if (inet_pton(AF_INET6, peer, &d) == 1) {
      std::memcpy(a.ah_attr.grh.dgid.raw, &d, 16);
    } else {  // IPv4: the mapped GID ::ffff:a.b.c.d
      a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
      EXPECT_EQ(inet_pton(AF_INET, peer, a.ah_attr.grh.dgid.raw + 12), 1);
    }
    const int rc = ibv_modify_qp(qp, &a,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    return rc;
  };
  EXPECT_EQ(rtr_toward(kOurIp), 0);
  EXPECT_EQ(rtr_toward("fd99::77"), EHOSTUNREACH);  // nobody on the ring answers for it
  EXPECT_EQ(rtr_toward("10.99.0.77"), EINVAL);

  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.port_num = 1;
  ah.grh.hop_limit = 64;
  in6_addr own{};
  ASSERT_EQ(inet_pton(AF_INET6, kOurIp, &own), 1);
  std::memcpy(ah.grh.dgid.raw, &own, 16);
  ibv_ah* mine = ibv_create_ah(pd, &ah);
  EXPECT_NE(mine, nullptr) << std::strerror(errno);
  if (mine) {
    EXPECT_EQ(ibv_destroy_ah(mine), 0);
  }
  in6_addr nobody{};
  ASSERT_EQ(inet_pton(AF_INET6, "fd99::78", &nobody), 1);
  std::memcpy(ah.grh.dgid.raw, &nobody, 16);
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd, &ah), nullptr);
  EXPECT_EQ(errno, EHOSTUNREACH);

  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  ibv_free_device_list(list);
}

}  // namespace
