// librdmacm's entry points on the verbs device, through the plain rdma_cma.h API as rping and
// perftest -R call them: run under roce-run on a looped-back net_ring0 port, so an active ID
// connects to a listener of the same process through the device's own CM (MADs on QP1 out of
// the port and back). Event channels (poll, O_NONBLOCK, acknowledgements), the calls' state
// rules and errnos, connect/accept/reject/disconnect with private data, data over the
// connected QPs, rdma_init_qp_attr and rdma_getaddrinfo.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/verbs/cm_events.hpp"

namespace {

constexpr const char* kOurIp = "10.99.0.1";  // roce-run --ip (tests/verbs/meson.build)
// An int: verbs.h's ibv_reg_mr macro mixes two enum types with a constant flag (clang warns).
constexpr int kLocalWrite = IBV_ACCESS_LOCAL_WRITE;

sockaddr_in addr_of(const char* ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

using cm_test::expect_event;
using cm_test::next_event;

class RdmaCm : public ::testing::Test {
 protected:
  void SetUp() override {
    ch = rdma_create_event_channel();
    ASSERT_NE(ch, nullptr) << "run under roce-run: " << std::strerror(errno);
  }
  void TearDown() override {
    if (ch) rdma_destroy_event_channel(ch);
  }
  rdma_event_channel* ch = nullptr;
};

TEST_F(RdmaCm, ChannelFdIsPollableAndNonBlockingWhenAsked) {
  pollfd p{ch->fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // nothing queued
  ASSERT_EQ(::fcntl(ch->fd, F_SETFL, ::fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
  rdma_cm_event* e = nullptr;
  EXPECT_EQ(rdma_get_cm_event(ch, &e), -1);
  EXPECT_EQ(errno, EAGAIN);
  // An event makes it readable: ADDR_RESOLVED of our own address.
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = addr_of(kOurIp, 7000);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  EXPECT_EQ(::poll(&p, 1, 1000), 1);
  ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_EQ(e->id, id);
  EXPECT_NE(id->verbs, nullptr);
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

// rping's pattern: a detached thread loops on rdma_get_cm_event while the main thread destroys
// the channel and returns. The late call must wait (as it would in the kernel), not fail and make
// the program exit with an error: rping -s exited 255 that way ("rdma_get_cm_event: Invalid
// argument") when its event thread was preempted after acknowledging DISCONNECTED.
TEST_F(RdmaCm, EventThreadCallingOnADestroyedChannelWaitsInsteadOfFailing) {
  rdma_event_channel* doomed = ch;
  ch = nullptr;
  rdma_destroy_event_channel(doomed);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  std::thread([doomed, returned] {
    rdma_cm_event* e = nullptr;
    rdma_get_cm_event(doomed, &e);
    returned->store(true);
  }).detach();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(returned->load()) << "rdma_get_cm_event returned on a destroyed channel";
}

TEST_F(RdmaCm, CreateIdRefusesWhatTheDeviceDoesNotOffer) {
  rdma_cm_id* id = nullptr;
  EXPECT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_IB), -1);  // AF_IB, synchronous or not
  EXPECT_EQ(errno, EAFNOSUPPORT);
  EXPECT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_IB), -1);  // AF_IB
  EXPECT_EQ(errno, EAFNOSUPPORT);
  EXPECT_EQ(rdma_create_id(ch, &id, nullptr, static_cast<rdma_port_space>(0x4242)), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_create_id(ch, nullptr, nullptr, RDMA_PS_TCP), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(RdmaCm, CallsOutOfOrderAreEinval) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  rdma_conn_param p{};
  EXPECT_EQ(rdma_listen(id, 1), -1);  // not bound
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_resolve_route(id, 1000), -1);  // no address yet
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_connect(id, &p), -1);  // no route
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_accept(id, &p), -1);  // not a connection request
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_reject(id, nullptr, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_disconnect(id), -1);  // never connected
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_establish(id), -1);
  EXPECT_EQ(errno, EINVAL);
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(rdma_init_qp_attr(id, &a, &mask), -1);  // no peer to tell
  EXPECT_EQ(errno, EINVAL);
  // Bad addresses.
  sockaddr_in foreign = addr_of("10.98.0.7", 7001);
  EXPECT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&foreign)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  // An IPv6 address is not the device's (its one address is IPv4); AF_IB is not for RoCE.
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "fd99::1", &v6.sin6_addr);
  EXPECT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&v6)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  sockaddr_storage ib{};
  ib.ss_family = AF_IB;
  EXPECT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&ib)), -1);
  EXPECT_EQ(errno, EAFNOSUPPORT);
  // No route from an IPv4 device to an IPv6 peer; a source of another family than the peer.
  v6.sin6_port = htons(7001);
  EXPECT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&v6), 100), -1);
  EXPECT_EQ(errno, EAFNOSUPPORT);
  sockaddr_in ours4 = addr_of(kOurIp, 0);
  EXPECT_EQ(rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&ours4), reinterpret_cast<sockaddr*>(&v6), 100), -1);
  EXPECT_EQ(errno, EINVAL);
  // Options: TOS and the ACK timeout are kept; IB path records are not for RoCE.
  std::uint8_t tos = 0x20, timeout = 14;
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1), 0);
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, 1), 0);
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &tos, 1), -1);
  EXPECT_EQ(errno, ENOSYS);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  // A second listener on a port already listened on.
  rdma_cm_id* first = nullptr;
  rdma_cm_id* second = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &first, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_create_id(ch, &second, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in ours = addr_of(kOurIp, 7002);
  ASSERT_EQ(rdma_bind_addr(first, reinterpret_cast<sockaddr*>(&ours)), 0);
  ASSERT_EQ(rdma_bind_addr(second, reinterpret_cast<sockaddr*>(&ours)), 0);
  EXPECT_EQ(rdma_listen(first, 1), 0);
  EXPECT_EQ(rdma_listen(second, 1), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  EXPECT_EQ(rdma_destroy_id(first), 0);
  EXPECT_EQ(rdma_destroy_id(second), 0);
}

// UD services: a SIDR_REQ from an RDMA_PS_UDP ID, the listener's SIDR_REP with its QP and
// rdma_cm's Q_Key, then a datagram to it through an AH made from the event (udaddy's way).
TEST_F(RdmaCm, UdServiceResolvedThroughSidr) {
  rdma_event_channel* sch = rdma_create_event_channel();
  ASSERT_NE(sch, nullptr);
  rdma_cm_id* listener = nullptr;
  rdma_cm_id* client = nullptr;
  ASSERT_EQ(rdma_create_id(sch, &listener, nullptr, RDMA_PS_UDP), 0);
  sockaddr_in any = addr_of("0.0.0.0", 7174);
  ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&any)), 0);
  ASSERT_EQ(rdma_listen(listener, 4), 0);
  ASSERT_EQ(rdma_create_id(ch, &client, nullptr, RDMA_PS_UDP), 0);
  sockaddr_in dst = addr_of(kOurIp, 7174);
  ASSERT_EQ(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  ASSERT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED), 0);
  ASSERT_EQ(rdma_resolve_route(client, 2000), 0);
  ASSERT_EQ(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED), 0);

  ibv_pd* pd = ibv_alloc_pd(client->verbs);
  ibv_cq* cq = ibv_create_cq(client->verbs, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  ibv_qp_init_attr qa{};
  qa.send_cq = cq;
  qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_UD;
  qa.cap = {8, 8, 1, 1, 0};
  ASSERT_EQ(rdma_create_qp(client, pd, &qa), 0);
  EXPECT_EQ(client->qp->state, IBV_QPS_RTS);  // UD needs no peer
  const char hello[] = "ud hello";
  rdma_conn_param p{};
  p.private_data = hello;
  p.private_data_len = sizeof hello;
  ASSERT_EQ(rdma_connect(client, &p), 0) << std::strerror(errno);

  rdma_cm_event* e = next_event(sch);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  ASSERT_NE(e->param.ud.private_data, nullptr);
  EXPECT_STREQ(static_cast<const char*>(e->param.ud.private_data), hello);
  rdma_cm_id* server = e->id;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
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
  EXPECT_EQ(e->param.ud.qkey, 0x01234567u);  // RDMA_UDP_QKEY
  ibv_ah* ah = ibv_create_ah(pd, &e->param.ud.ah_attr);
  ASSERT_NE(ah, nullptr);
  const std::uint32_t qpn = e->param.ud.qp_num, qkey = e->param.ud.qkey;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);

  std::vector<char> sbuf(64);
  std::strcpy(sbuf.data(), "datagram");
  ibv_mr* smr = ibv_reg_mr(pd, sbuf.data(), sbuf.size(), 0);
  ibv_sge ssge{reinterpret_cast<std::uintptr_t>(sbuf.data()), 9, smr->lkey};
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
  int completions = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (completions < 2 && std::chrono::steady_clock::now() < until) {
    ibv_wc wc{};
    if (ibv_poll_cq(cq, 1, &wc) == 1) {
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
      ++completions;
    }
  }
  EXPECT_EQ(completions, 2);
  EXPECT_STREQ(rbuf.data() + 40, "datagram");  // after the GRH

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
  rdma_destroy_event_channel(sch);
}

// A SIDR_REQ for a port nobody listens on: the SIDR_REP says so, the program sees UNREACHABLE
// with the SIDR status (1, service ID not supported) and can tear everything down.
TEST_F(RdmaCm, UdServiceWithoutListenerIsUnreachable) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_UDP), 0);
  sockaddr_in dst = addr_of(kOurIp, 7175);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  ASSERT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED), 0);
  ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
  ASSERT_EQ(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED), 0);
  ibv_pd* pd = ibv_alloc_pd(id->verbs);
  ibv_cq* cq = ibv_create_cq(id->verbs, 4, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  ibv_qp_init_attr qa{};
  qa.send_cq = cq;
  qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_UD;
  qa.cap = {2, 2, 1, 1, 0};
  ASSERT_EQ(rdma_create_qp(id, pd, &qa), 0);
  ASSERT_EQ(rdma_connect(id, nullptr), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_UNREACHABLE), 1);
  rdma_destroy_qp(id);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
}

TEST_F(RdmaCm, UnreachablePeerIsAddrError) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = addr_of("10.99.0.77", 7003);  // nobody on the ring answers ARP for it
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 50), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_ERROR), -ETIMEDOUT);
  EXPECT_EQ(rdma_resolve_route(id, 1000), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

// A connection of the device to itself: listener and active ID on two channels.
class Connected : public RdmaCm {
 protected:
  void SetUp() override {
    RdmaCm::SetUp();
    server_ch = rdma_create_event_channel();
    ASSERT_NE(server_ch, nullptr);
    ASSERT_EQ(rdma_create_id(server_ch, &listener, this, RDMA_PS_TCP), 0);
    sockaddr_in any = addr_of("0.0.0.0", port);
    ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&any)), 0);
    EXPECT_EQ(listener->verbs, nullptr);  // a wildcard names no device, as in librdmacm
    ASSERT_EQ(rdma_listen(listener, 4), 0);
    EXPECT_EQ(rdma_get_src_port(listener), htons(port));

    ASSERT_EQ(rdma_create_id(ch, &client, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in dst = addr_of(kOurIp, port);
    ASSERT_EQ(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
    ASSERT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED), 0);
    ASSERT_EQ(rdma_resolve_route(client, 2000), 0);
    ASSERT_EQ(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED), 0);
    ASSERT_EQ(client->route.num_paths, 1);
    EXPECT_EQ(rdma_get_dst_port(client), htons(port));
    EXPECT_NE(rdma_get_src_port(client), 0);
    make_qp(client, client_pd, client_cq);
    client_qpn = client->qp->qp_num;
  }
  void TearDown() override {
    for (rdma_cm_id* id : {client, accepted}) {
      if (id == nullptr) continue;
      ibv_pd* pd = id->qp ? id->qp->pd : nullptr;
      ibv_cq* cq = id->qp ? id->qp->send_cq : nullptr;
      rdma_destroy_qp(id);
      EXPECT_EQ(rdma_destroy_id(id), 0);
      if (cq) ibv_destroy_cq(cq);
      if (pd) ibv_dealloc_pd(pd);
    }
    if (listener) {
      EXPECT_EQ(rdma_destroy_id(listener), 0);
    }
    if (server_ch) rdma_destroy_event_channel(server_ch);
    RdmaCm::TearDown();
  }
  void make_qp(rdma_cm_id* id, ibv_pd*& pd, ibv_cq*& cq) {
    pd = ibv_alloc_pd(id->verbs);
    ASSERT_NE(pd, nullptr);
    cq = ibv_create_cq(id->verbs, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap = {8, 8, 1, 1, 0};
    ASSERT_EQ(rdma_create_qp(id, pd, &a), 0) << std::strerror(errno);
    ASSERT_NE(id->qp, nullptr);
    EXPECT_EQ(id->qp->state, IBV_QPS_INIT);
  }
  // The passive ID of the next connection request, with the client's private data.
  rdma_cm_id* take_request(std::string* private_data = nullptr) {
    rdma_cm_event* e = next_event(server_ch);
    if (e == nullptr) return nullptr;
    EXPECT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
    EXPECT_EQ(e->listen_id, listener);
    EXPECT_EQ(e->id->context, this);  // the listener's
    EXPECT_NE(e->id->verbs, nullptr);
    EXPECT_EQ(e->param.conn.private_data_len, 56);  // 92 less the cma_hdr
    EXPECT_EQ(e->param.conn.qp_num, client_qpn);
    EXPECT_EQ(e->param.conn.responder_resources, 1);  // the client's initiator depth
    if (private_data && e->param.conn.private_data)
      *private_data = std::string(static_cast<const char*>(e->param.conn.private_data));
    rdma_cm_id* id = e->id;
    EXPECT_EQ(rdma_ack_cm_event(e), 0);
    return id;
  }
  void connect(const char* data) {
    rdma_conn_param p{};
    p.private_data = data;
    p.private_data_len = static_cast<std::uint8_t>(std::strlen(data) + 1);
    p.responder_resources = 1;
    p.initiator_depth = 1;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    ASSERT_EQ(rdma_connect(client, &p), 0) << std::strerror(errno);
  }

  static inline std::uint16_t next_port = 7100;
  std::uint16_t port = next_port++;
  rdma_event_channel* server_ch = nullptr;
  rdma_cm_id* listener = nullptr;
  rdma_cm_id* client = nullptr;
  rdma_cm_id* accepted = nullptr;
  ibv_pd* client_pd = nullptr;
  ibv_cq* client_cq = nullptr;
  std::uint32_t client_qpn = 0;
};

TEST_F(Connected, AcceptSendDisconnect) {
  connect("hello from the client");
  std::string got;
  accepted = take_request(&got);
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(got, "hello from the client");
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  make_qp(accepted, pd, cq);

  // A receive waits for the client's SEND before the connection is up.
  std::vector<char> rbuf(64), sbuf(64);
  ibv_mr* rmr = ibv_reg_mr(pd, rbuf.data(), rbuf.size(), kLocalWrite);
  ibv_mr* smr = ibv_reg_mr(client_pd, sbuf.data(), sbuf.size(), 0);
  ASSERT_TRUE(rmr && smr);
  ibv_sge rsge{reinterpret_cast<std::uintptr_t>(rbuf.data()), 64, rmr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(accepted->qp, &rwr, &bad_r), 0);

  const char reply[] = "welcome";
  rdma_conn_param p{};
  p.private_data = reply;
  p.private_data_len = sizeof reply;
  p.responder_resources = 1;
  p.initiator_depth = 1;
  ASSERT_EQ(rdma_accept(accepted, &p), 0) << std::strerror(errno);
  EXPECT_EQ(accepted->qp->state, IBV_QPS_RTS);

  rdma_cm_event* e = next_event(ch);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_GE(e->param.conn.private_data_len, sizeof reply);  // the REP's private data
  EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), reply);
  EXPECT_EQ(e->param.conn.qp_num, accepted->qp->qp_num);
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  EXPECT_EQ(client->qp->state, IBV_QPS_RTS);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_ESTABLISHED), 0);

  // Data over the connection rdma_cm set up.
  std::strcpy(sbuf.data(), "rdma_cm data");
  ibv_sge ssge{reinterpret_cast<std::uintptr_t>(sbuf.data()), 13, smr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(client->qp, &swr, &bad_s), 0);
  int completions = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (completions < 2 && std::chrono::steady_clock::now() < until) {
    ibv_wc wc{};
    for (ibv_cq* q : {client_cq, cq}) {
      if (ibv_poll_cq(q, 1, &wc) == 1) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        ++completions;
      }
    }
  }
  EXPECT_EQ(completions, 2);
  EXPECT_STREQ(rbuf.data(), "rdma_cm data");

  // The client disconnects: its QP stops, both sides see DISCONNECTED.
  EXPECT_EQ(rdma_disconnect(client), 0);
  EXPECT_EQ(client->qp->state, IBV_QPS_ERR);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_DISCONNECTED), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_DISCONNECTED), 0);
  EXPECT_EQ(rdma_disconnect(accepted), 0);  // after the peer's DREQ: nothing left to end
  ibv_dereg_mr(rmr);
  ibv_dereg_mr(smr);
}

// librdmacm's SRQ helpers: rdma_create_srq keeps the SRQ in id->srq and the QP rdma_create_qp
// makes afterwards takes its receives from it; XRC is refused, a second SRQ and no type EINVAL.
TEST_F(Connected, AnIdsSrqFeedsTheQpMadeAfterIt) {
  connect("srq please");
  accepted = take_request();
  ASSERT_NE(accepted, nullptr);
  ibv_pd* pd = ibv_alloc_pd(accepted->verbs);
  ibv_cq* cq = ibv_create_cq(accepted->verbs, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  ibv_srq_init_attr_ex xrc{};
  xrc.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
  xrc.srq_type = IBV_SRQT_XRC;
  EXPECT_EQ(rdma_create_srq_ex(accepted, &xrc), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_srq_init_attr_ex untyped{};
  EXPECT_EQ(rdma_create_srq_ex(accepted, &untyped), -1);
  EXPECT_EQ(errno, EINVAL);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 8;
  sa.attr.max_sge = 1;
  ASSERT_EQ(rdma_create_srq(accepted, pd, &sa), 0) << std::strerror(errno);
  ASSERT_NE(accepted->srq, nullptr);
  EXPECT_GE(sa.attr.max_wr, 8u);
  EXPECT_EQ(rdma_create_srq(accepted, pd, &sa), -1);  // it has one
  EXPECT_EQ(errno, EINVAL);
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {8, 0, 1, 0, 0};
  ASSERT_EQ(rdma_create_qp(accepted, pd, &a), 0) << std::strerror(errno);
  EXPECT_EQ(accepted->qp->srq, accepted->srq);

  std::vector<char> rbuf(64), sbuf(64);
  ibv_mr* rmr = ibv_reg_mr(pd, rbuf.data(), rbuf.size(), kLocalWrite);
  ibv_mr* smr = ibv_reg_mr(client_pd, sbuf.data(), sbuf.size(), 0);
  ASSERT_TRUE(rmr && smr);
  ibv_sge rsge{reinterpret_cast<std::uintptr_t>(rbuf.data()), 64, rmr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_srq_recv(accepted->srq, &rwr, &bad_r), 0);
  ASSERT_EQ(rdma_accept(accepted, nullptr), 0) << std::strerror(errno);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  std::strcpy(sbuf.data(), "via the srq");
  ibv_sge ssge{reinterpret_cast<std::uintptr_t>(sbuf.data()), 12, smr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(client->qp, &swr, &bad_s), 0);
  int completions = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (completions < 2 && std::chrono::steady_clock::now() < until) {
    ibv_wc wc{};
    for (ibv_cq* q : {client_cq, cq}) {
      if (ibv_poll_cq(q, 1, &wc) == 1) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        ++completions;
      }
    }
  }
  EXPECT_EQ(completions, 2);
  EXPECT_STREQ(rbuf.data(), "via the srq");

  EXPECT_EQ(rdma_disconnect(client), 0);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_DISCONNECTED), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_DISCONNECTED), 0);
  rdma_destroy_qp(accepted);
  rdma_destroy_srq(accepted);
  EXPECT_EQ(accepted->srq, nullptr);
  ibv_dereg_mr(rmr);
  ibv_dereg_mr(smr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
}

TEST_F(Connected, RejectCarriesPrivateData) {
  connect("may I");
  accepted = take_request();
  ASSERT_NE(accepted, nullptr);
  const char no[] = "no";
  ASSERT_EQ(rdma_reject(accepted, no, sizeof no), 0);
  rdma_cm_event* e = next_event(ch);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(e->status, 28);  // consumer defined
  ASSERT_NE(e->param.conn.private_data, nullptr);
  EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), no);
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  EXPECT_EQ(rdma_accept(accepted, nullptr), -1);  // decided already
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(Connected, NoListenerIsRejected) {
  // The same route to a port nobody listens on.
  sockaddr_in other = addr_of(kOurIp, static_cast<std::uint16_t>(port + 1000));
  std::memcpy(&client->route.addr.dst_sin, &other, sizeof other);
  connect("anyone?");
  // After the retry window (CmPort::kNoListenerWindow): nobody came to listen.
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_REJECTED), 8);  // invalid service ID
}

TEST_F(Connected, ListenerThatComesAfterTheRequestIsReached) {
  // perftest -R: the client connects as soon as the handshake ends, its server listens only
  // after it. The refused request is sent again until the listener is there.
  const std::uint16_t late_port = static_cast<std::uint16_t>(port + 1002);
  sockaddr_in other = addr_of(kOurIp, late_port);
  std::memcpy(&client->route.addr.dst_sin, &other, sizeof other);
  connect("early");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the REJ came and went meanwhile
  rdma_cm_id* late = nullptr;
  ASSERT_EQ(rdma_create_id(server_ch, &late, this, RDMA_PS_TCP), 0);
  sockaddr_in any = addr_of("0.0.0.0", late_port);
  ASSERT_EQ(rdma_bind_addr(late, reinterpret_cast<sockaddr*>(&any)), 0);
  ASSERT_EQ(rdma_listen(late, 4), 0);
  rdma_cm_event* e = next_event(server_ch);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  EXPECT_EQ(e->listen_id, late);
  accepted = e->id;
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  make_qp(accepted, pd, cq);
  ASSERT_EQ(rdma_accept(accepted, nullptr), 0);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  // TearDown frees the accepted ID's QP; the late listener goes here.
  rdma_destroy_qp(accepted);
  EXPECT_EQ(rdma_destroy_id(accepted), 0);
  accepted = nullptr;
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  EXPECT_EQ(rdma_destroy_id(late), 0);
}

TEST_F(Connected, SelfManagedQpWithInitQpAttrAndEstablish) {
  // rping -q: the program moves its QP with rdma_init_qp_attr and calls rdma_establish.
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(rdma_init_qp_attr(client, &a, &mask), 0);
  EXPECT_EQ(a.qp_access_flags, 0u);  // no connection yet: no remote access
  EXPECT_TRUE(mask & IBV_QP_ACCESS_FLAGS);
  ibv_qp* qp = client->qp;
  client->qp = nullptr;  // the ID no longer owns it: the program does
  rdma_conn_param p{};
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.qp_num = qp->qp_num;
  ASSERT_EQ(rdma_connect(client, &p), 0);
  accepted = take_request();
  ASSERT_NE(accepted, nullptr);
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  make_qp(accepted, pd, cq);
  ASSERT_EQ(rdma_accept(accepted, nullptr), 0);
  rdma_cm_event* e = next_event(ch);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
  EXPECT_EQ(e->param.conn.qp_num, accepted->qp->qp_num);
  EXPECT_EQ(rdma_ack_cm_event(e), 0);
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    a = {};
    a.qp_state = s;
    ASSERT_EQ(rdma_init_qp_attr(client, &a, &mask), 0);
    if (s == IBV_QPS_INIT) {
      EXPECT_EQ(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
    }
    if (s == IBV_QPS_RTR) {
      EXPECT_EQ(a.dest_qp_num, accepted->qp->qp_num);
    }
    ASSERT_EQ(ibv_modify_qp(qp, &a, mask), 0);
  }
  ASSERT_EQ(rdma_establish(client), 0);
  EXPECT_EQ(expect_event(server_ch, RDMA_CM_EVENT_ESTABLISHED), 0);
  // No ESTABLISHED for the client: CONNECT_RESPONSE was its event (as librdmacm).
  pollfd pf{ch->fd, POLLIN, 0};
  EXPECT_EQ(::poll(&pf, 1, 200), 0);
  ibv_destroy_qp(qp);
}

TEST_F(Connected, DestroyIdWaitsForItsEventsToBeAcknowledged) {
  connect("wait");
  rdma_cm_event* e = next_event(server_ch);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  accepted = e->id;
  std::atomic<bool> acked{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    acked = true;
    rdma_ack_cm_event(e);
  });
  // The CONNECT_REQUEST counts against the listener until acknowledged.
  EXPECT_EQ(rdma_destroy_id(listener), 0);
  EXPECT_TRUE(acked.load());
  listener = nullptr;
  t.join();
}

TEST(RdmaAddrinfo, PassiveActiveAndRefusals) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* r = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, "18515", &hints, &r), 0);
  ASSERT_NE(r->ai_src_addr, nullptr);
  EXPECT_EQ(r->ai_dst_addr, nullptr);
  EXPECT_EQ(r->ai_qp_type, IBV_QPT_RC);
  EXPECT_EQ(reinterpret_cast<sockaddr_in*>(r->ai_src_addr)->sin_port, htons(18515));
  EXPECT_EQ(reinterpret_cast<sockaddr_in*>(r->ai_src_addr)->sin_addr.s_addr, htonl(INADDR_ANY));
  rdma_freeaddrinfo(r);

  r = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(kOurIp, "7174", nullptr, &r), 0);
  ASSERT_NE(r->ai_dst_addr, nullptr);
  EXPECT_EQ(r->ai_port_space, RDMA_PS_TCP);
  sockaddr_in want = addr_of(kOurIp, 7174);
  EXPECT_EQ(reinterpret_cast<sockaddr_in*>(r->ai_dst_addr)->sin_addr.s_addr, want.sin_addr.s_addr);
  rdma_freeaddrinfo(r);

  hints = {};
  hints.ai_qp_type = IBV_QPT_UD;
  ASSERT_EQ(rdma_getaddrinfo(kOurIp, "7174", &hints, &r), 0);
  EXPECT_EQ(r->ai_port_space, RDMA_PS_UDP);
  rdma_freeaddrinfo(r);

  // IPv6 when asked for (the device, being IPv4, then has no route to it); AF_IB never.
  hints = {};
  hints.ai_family = AF_INET6;
  ASSERT_EQ(rdma_getaddrinfo("fd99::7", "1", &hints, &r), 0);
  EXPECT_EQ(r->ai_family, AF_INET6);
  ASSERT_NE(r->ai_dst_addr, nullptr);
  EXPECT_EQ(r->ai_dst_addr->sa_family, AF_INET6);
  rdma_freeaddrinfo(r);
  hints.ai_family = AF_IB;
  EXPECT_EQ(rdma_getaddrinfo("::1", "1", &hints, &r), EAI_FAMILY);
  EXPECT_EQ(rdma_getaddrinfo(nullptr, "1", nullptr, &r), EAI_NONAME);  // active needs a node
}

// rdma_server / rdma_client's way: synchronous endpoints from rdma_getaddrinfo, the passive
// one's QP made by rdma_get_request, CQs made by librdmacm's rules (none given), each call
// waiting for its event, and the rdma_verbs.h helpers on top.
// An RC endpoint's address (passive: the wildcard) and rdma_server's QP: one 16-byte message.
rdma_addrinfo* tcp_addrinfo(const char* node, const char* service) {
  rdma_addrinfo hints{};
  hints.ai_flags = node ? 0 : RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* r = nullptr;
  EXPECT_EQ(rdma_getaddrinfo(node, service, &hints, &r), 0);
  return r;
}
ibv_qp_init_attr one_message_qp() {
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = 16;
  attr.sq_sig_all = 1;
  return attr;
}

TEST(RdmaCmSync, EndpointsConnectExchangeAndDisconnect) {
  rdma_addrinfo* passive = tcp_addrinfo(nullptr, "7480");
  ASSERT_NE(passive, nullptr);
  ibv_qp_init_attr attr = one_message_qp();
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
    const bool ok = id->qp && id->recv_cq && id->send_cq && mr && id->event &&
                    id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST && rdma_post_recv(id, nullptr, msg, sizeof msg, mr) == 0 &&
                    rdma_accept(id, nullptr) == 0 && rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
                    rdma_post_send(id, nullptr, msg, sizeof msg, nullptr, IBV_SEND_INLINE) == 0 &&
                    rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
    rdma_disconnect(id);
    if (mr) rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
    server_result = ok ? 0 : 1;
  });

  rdma_addrinfo* active = tcp_addrinfo(kOurIp, "7480");
  ASSERT_NE(active, nullptr);
  ibv_qp_init_attr cattr = one_message_qp();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &cattr), 0) << std::strerror(errno);
  EXPECT_EQ(cattr.qp_type, IBV_QPT_RC);
  ASSERT_NE(id->qp, nullptr);
  ASSERT_NE(id->recv_cq_channel, nullptr);
  EXPECT_EQ(id->recv_cq->cq_context, static_cast<void*>(id));  // rdma_get_recv_comp's check
  char recv_msg[16] = {}, send_msg[16] = "sync hello";
  ibv_mr* mr = rdma_reg_msgs(id, recv_msg, sizeof recv_msg);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(rdma_post_recv(id, nullptr, recv_msg, sizeof recv_msg, mr), 0);
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << std::strerror(errno);  // returns once ESTABLISHED
  ASSERT_NE(id->event, nullptr);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_EQ(rdma_post_send(id, nullptr, send_msg, sizeof send_msg, nullptr, IBV_SEND_INLINE), 0);
  ibv_wc wc{};
  EXPECT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(rdma_get_recv_comp(id, &wc), 1);  // the server's echo
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_STREQ(recv_msg, "sync hello");
  server.join();
  EXPECT_EQ(server_result.load(), 0);
  EXPECT_EQ(rdma_disconnect(id), 0);  // the server's DREQ came first: its DISCONNECTED is taken
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_DISCONNECTED);
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen_id);
  rdma_freeaddrinfo(active);
  rdma_freeaddrinfo(passive);
}

TEST(RdmaCmSync, ConnectWithNobodyListeningFailsWithEconnrefused) {
  rdma_addrinfo* res = tcp_addrinfo(kOurIp, "7481");
  ASSERT_NE(res, nullptr);
  ibv_qp_init_attr attr = one_message_qp();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, res, nullptr, &attr), 0);
  EXPECT_EQ(rdma_connect(id, nullptr), -1);  // after the no-listener retry window
  EXPECT_EQ(errno, ECONNREFUSED);
  rdma_destroy_ep(id);
  rdma_freeaddrinfo(res);
}

TEST(RdmaCmNames, EventStrings) {
  EXPECT_STREQ(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");
  EXPECT_STREQ(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
  EXPECT_STREQ(rdma_event_str(static_cast<rdma_cm_event_type>(99)), "UNKNOWN EVENT");
}

TEST(RdmaCmRefused, FeaturesTheDeviceLacksAnswerWithAnErrno) {
  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in mc = addr_of("239.1.1.1", 0);
  EXPECT_EQ(rdma_join_multicast(id, reinterpret_cast<sockaddr*>(&mc), nullptr), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  rdma_cm_id* req = nullptr;
  EXPECT_EQ(rdma_get_request(id, &req), -1);  // not a synchronous listener
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_create_ep(&req, nullptr, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_migrate_id(id, nullptr), 0);  // synchronous now, on a channel of its own
  EXPECT_NE(id->channel, ch);
  EXPECT_NE(id->channel, nullptr);
  rdma_event_channel* other = rdma_create_event_channel();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(rdma_migrate_id(id, other), 0);
  EXPECT_EQ(id->channel, other);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(other);
  rdma_destroy_event_channel(ch);
  int n = 0;
  ibv_context** devs = rdma_get_devices(&n);
  ASSERT_NE(devs, nullptr);
  EXPECT_EQ(n, 1);
  EXPECT_NE(devs[0], nullptr);
  rdma_free_devices(devs);
}

}  // namespace
