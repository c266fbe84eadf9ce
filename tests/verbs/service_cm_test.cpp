// Service mode, slice 5 (docs/verbs.md): rdma_cm programs through the service. The rdma_cma.h
// calls of programs on one roce-verbsd (the harness's, on its looped-back port) run on the
// service's CM: records checked by the service, an rping-style client and server (events,
// private data, a SEND over the connected QPs, disconnect), a program SIGKILLed with a
// connection up (its peer gets DISCONNECTED, the service frees its IDs), and Debian's rping and
// ib_write_bw -R with their own verdicts. Every rdma_cm call runs in a forked child: a program's
// rdma_cm connection is made once per process, and children must not share their parent's.
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <array>
#include <random>

#include "tests/verbs/cm_events.hpp"
#include "tests/verbs/service_harness.hpp"
#include "verbs/cm_proto.hpp"

namespace service_test {
namespace {

using cm_test::expect_event;
using cm_test::next_event;
using roce::verbs::service::CmOp;
using roce::verbs::service::CmReply;
using roce::verbs::service::CmRequest;

constexpr const char* kServiceIp = "10.99.0.3";  // the harness's roce-verbsd

sockaddr_in service_addr(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, kServiceIp, &a.sin_addr);
  return a;
}

std::uint16_t test_port(int k) { return static_cast<std::uint16_t>(20000 + (::getpid() * 7 + k) % 20000); }

// Runs `body` in a forked child, which exits 0 when it made no test failure; the child's exit
// status, or -1 when it did not end within the bound.
template <typename Body>
int in_child(Body body, std::chrono::seconds bound = std::chrono::seconds(60)) {
  Program p;
  p.pid = ::fork();
  if (p.pid == 0) {
    body();
    ::_exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  return wait_exit(p, bound);
}

bool wait_for_cm_ids(std::uint32_t n) {
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  while (std::chrono::steady_clock::now() < until) {
    if (status().cm_ids == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// One CmOp record on a raw connection; the answer's errno (-1: none).
int cm_exchange(int fd, CmOp op, std::uint32_t handle, const CmRequest& q, CmReply* out = nullptr, int file = -1) {
  Request r;
  r.op = Op::Cm;
  r.arg = static_cast<std::uint32_t>(op);
  r.handle = handle;
  std::memcpy(r.body, &q, sizeof q);
  iovec iov{&r, roce::verbs::service::kRequestHeader + sizeof q};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (file >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &file, sizeof file);
  }
  if (::sendmsg(fd, &m, MSG_NOSIGNAL) < 0) return -1;
  Reply rep;
  if (::recv(fd, &rep, sizeof rep, 0) < static_cast<ssize_t>(roce::verbs::service::kReplyHeader)) return -1;
  if (out) std::memcpy(out, rep.body, sizeof *out);
  return rep.err;
}

// What the service refuses on an rdma_cm connection, answered with an errno while it goes on.
TEST_F(Service, CmRecordsAreCheckedByTheService) {
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  CmRequest q;
  CmReply rep;
  EXPECT_EQ(cm_exchange(fd, CmOp::CreateId, 0, q), EINVAL);  // not opened as an rdma_cm connection
  EXPECT_EQ(cm_exchange(fd, CmOp::Open, 0, q), 0);
  EXPECT_EQ(cm_exchange(fd, CmOp::Open, 0, q), EBUSY);
  Request open;
  open.op = Op::Open;  // nor a context on it
  EXPECT_EQ(exchange(fd, &open, roce::verbs::service::kRequestHeader), EBUSY);
  EXPECT_EQ(cm_exchange(fd, CmOp::CreateChannel, 0, q), EINVAL);  // no socket given
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  EXPECT_EQ(cm_exchange(fd, CmOp::CreateChannel, 0, q, nullptr, p[0]), EINVAL);  // not a socket
  int stream[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, stream), 0);
  EXPECT_EQ(cm_exchange(fd, CmOp::CreateChannel, 0, q, nullptr, stream[1]), EINVAL);  // not one of records
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  ASSERT_EQ(cm_exchange(fd, CmOp::CreateChannel, 0, q, &rep, sv[1]), 0);
  const std::uint32_t channel = rep.handle;
  EXPECT_EQ(cm_exchange(fd, CmOp::DestroyChannel, 0, q), EINVAL);  // an ID's op
  EXPECT_EQ(cm_exchange(fd, CmOp::AttachQp, 0, q, nullptr, sv[1]), EINVAL);  // a file where none belongs
  q.channel = channel + 1000;
  q.ps = RDMA_PS_TCP;
  EXPECT_EQ(cm_exchange(fd, CmOp::CreateId, 0, q), EINVAL);  // no such channel
  q.channel = channel;
  q.ps = RDMA_PS_IB;
  EXPECT_EQ(cm_exchange(fd, CmOp::CreateId, 0, q), EAFNOSUPPORT);  // library mode's errno
  q.ps = RDMA_PS_TCP;
  ASSERT_EQ(cm_exchange(fd, CmOp::CreateId, 0, q, &rep), 0);
  const std::uint32_t id = rep.handle;
  EXPECT_EQ(cm_exchange(fd, CmOp::Listen, id + 1000, q), EINVAL);  // no such ID
  EXPECT_EQ(cm_exchange(fd, CmOp::Listen, id, q), EINVAL);         // not bound: library mode's rule
  const sockaddr_in a = service_addr(test_port(0));
  std::memcpy(&q.src, &a, sizeof a);
  EXPECT_EQ(cm_exchange(fd, CmOp::BindAddr, id, q, &rep), 0);
  EXPECT_EQ(rep.id.state, 1);  // address bound
  EXPECT_EQ(cm_exchange(fd, CmOp::Listen, id, q), 0);
  q.qpn = 0x123;
  EXPECT_EQ(cm_exchange(fd, CmOp::AttachQp, id, q), EINVAL);  // no QP of this program's
  q.conn.private_len = 250;
  EXPECT_EQ(cm_exchange(fd, CmOp::Accept, id, q), EINVAL);  // more private data than any message holds
  q.conn.private_len = 0;
  q.optlen = 200;
  EXPECT_EQ(cm_exchange(fd, CmOp::SetOption, id, q), EINVAL);
  EXPECT_EQ(cm_exchange(fd, static_cast<CmOp>(99), id, q), EOPNOTSUPP);
  EXPECT_EQ(cm_exchange(fd, CmOp::DestroyChannel, channel, q), EBUSY);  // its ID first

  // A QP is named by its number, and only one of this program's (a context of the same
  // process) is taken, by one ID at a time.
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &qa);
  ASSERT_NE(qp, nullptr);
  q = CmRequest{};
  q.channel = channel;
  q.ps = RDMA_PS_TCP;
  ASSERT_EQ(cm_exchange(fd, CmOp::CreateId, 0, q, &rep), 0);
  const std::uint32_t a1 = rep.handle;
  ASSERT_EQ(cm_exchange(fd, CmOp::CreateId, 0, q, &rep), 0);
  const std::uint32_t a2 = rep.handle;
  q.qpn = qp->qp_num;
  const int child = in_child([&q, a1] {
    // Another program (this one's child, on a connection of its own) cannot name it.
    const int other = raw_connect();
    ASSERT_GE(other, 0);
    CmRequest o;
    CmReply r;
    ASSERT_EQ(cm_exchange(other, CmOp::Open, 0, o), 0);
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    ASSERT_EQ(cm_exchange(other, CmOp::CreateChannel, 0, o, &r, pair[1]), 0);
    o.channel = r.handle;
    o.ps = RDMA_PS_TCP;
    ASSERT_EQ(cm_exchange(other, CmOp::CreateId, 0, o, &r), 0);
    o.qpn = q.qpn;
    EXPECT_EQ(cm_exchange(other, CmOp::AttachQp, r.handle, o), EINVAL);
    EXPECT_EQ(cm_exchange(other, CmOp::AttachQp, a1, o), EINVAL);  // nor name another's ID
    ::close(other);
  });
  EXPECT_EQ(child, 0) << "the child's failures are above";
  ASSERT_EQ(cm_exchange(fd, CmOp::AttachQp, a1, q, &rep), 0);
  EXPECT_EQ(rep.id.qp_state, IBV_QPS_INIT);  // moved as rdma_create_qp does
  EXPECT_EQ(cm_exchange(fd, CmOp::AttachQp, a2, q), EBUSY);
  EXPECT_EQ(cm_exchange(fd, CmOp::AttachQp, a1, q), EINVAL);  // it has one
  // Destroyed under the ID: the ID no longer holds it (no answer reads a freed QP).
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  q.level = RDMA_OPTION_ID;
  q.optname = RDMA_OPTION_ID_TOS;
  q.optlen = 1;
  ASSERT_EQ(cm_exchange(fd, CmOp::SetOption, a1, q, &rep), 0);
  EXPECT_EQ(rep.id.qp_state, -1);
  EXPECT_EQ(cm_exchange(fd, CmOp::DetachQp, a1, q), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);

  EXPECT_EQ(status().cm_ids, 3u);
  ::close(fd);  // the service destroys the IDs and the channel
  EXPECT_TRUE(wait_for_cm_ids(0));
  for (int f : {p[0], p[1], stream[0], stream[1], sv[0], sv[1]}) ::close(f);
}

// The per-program cap covers rdma_cm IDs; a program that reads none of its events is not
// waited for: once its channel's socket is full the service closes it (the program reads the
// events queued so far, then end of file) and goes on serving.
TEST_F(Service, CmProgramThatReadsNoEventsIsNotWaitedFor) {
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  CmRequest q;
  CmReply rep;
  ASSERT_EQ(cm_exchange(fd, CmOp::Open, 0, q), 0);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  ASSERT_EQ(cm_exchange(fd, CmOp::CreateChannel, 0, q, &rep, sv[1]), 0);
  q.channel = rep.handle;
  q.ps = RDMA_PS_TCP;
  std::vector<std::uint32_t> ids;
  int err = 0;
  while ((err = cm_exchange(fd, CmOp::CreateId, 0, q, &rep)) == 0 && ids.size() < 100) ids.push_back(rep.handle);
  EXPECT_EQ(err, ENOMEM);
  EXPECT_EQ(ids.size(), 32u);  // the harness's --max-per-client
  // Each address resolution queues an event; nobody reads them.
  const sockaddr_in a = service_addr(test_port(6));
  std::memcpy(&q.dst, &a, sizeof a);
  q.timeout_ms = 1000;
  int answered = 0;
  for (int i = 0; i < 3000; ++i) answered += cm_exchange(fd, CmOp::ResolveAddr, ids[0], q) == 0;
  EXPECT_EQ(answered, 3000);
  ::close(sv[1]);
  // What was queued can be read, then the service's end is closed.
  roce::verbs::service::CmEventRecord r;
  int records = 0;
  ssize_t n;
  while ((n = ::recv(sv[0], &r, sizeof r, MSG_DONTWAIT)) == static_cast<ssize_t>(sizeof r)) {
    EXPECT_EQ(r.event, RDMA_CM_EVENT_ADDR_RESOLVED);
    ++records;
  }
  EXPECT_EQ(n, 0) << "the service kept the channel open after " << records << " events";
  EXPECT_GT(records, 0);
  EXPECT_LT(records, 3000);
  EXPECT_EQ(status().cm_ids, 32u);  // served all the same
  // Every event the program did not get is counted where an operator can see it.
  const std::uint64_t undelivered = 3000u - static_cast<unsigned>(records);
  for (int i = 0; i < 200 && status().cm_events_dropped < undelivered; ++i) ::usleep(10000);
  EXPECT_EQ(status().cm_events_dropped, undelivered);
  ::close(fd);
  EXPECT_TRUE(wait_for_cm_ids(0));
  ::close(sv[0]);
}

// Records of random content (a fixed seed) on an rdma_cm connection: every one answered with an
// errno or done, and the service still serving afterwards.
TEST_F(Service, CmRandomRecordsNeverHurtTheService) {
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  CmRequest q;
  CmReply rep;
  ASSERT_EQ(cm_exchange(fd, CmOp::Open, 0, q), 0);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  ASSERT_EQ(cm_exchange(fd, CmOp::CreateChannel, 0, q, &rep, sv[1]), 0);
  ::fcntl(sv[0], F_SETFL, O_NONBLOCK);
  std::mt19937 gen(12345);
  const auto next = [&gen] { return static_cast<std::uint32_t>(gen()); };
  int answered = 0, done = 0;
  for (int i = 0; i < 3000; ++i) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(&q);
    for (std::size_t k = 0; k < sizeof q; ++k) bytes[k] = static_cast<std::uint8_t>(next());
    // Half the fields made plausible, so that calls get past the first checks: the real
    // channel, the port spaces, the service's own address on a random port, short options.
    q.channel %= 3;
    q.timeout_ms = 10;  // an unreachable peer's ARP wait stays short
    if (next() % 2) q.ps = next() % 2 ? RDMA_PS_TCP : RDMA_PS_UDP;
    for (auto* addr : {&q.src, &q.dst}) {
      if (next() % 2) continue;
      const sockaddr_in a = service_addr(static_cast<std::uint16_t>(next()));
      std::memcpy(addr, &a, sizeof a);
    }
    if (next() % 2) q.conn.private_len %= 64;
    if (next() % 2) q.optlen = next() % 9, q.level = RDMA_OPTION_ID, q.optname = static_cast<int>(next() % 6);
    if (next() % 2) q.qp_state = static_cast<int>(next() % 7);
    const auto op = static_cast<CmOp>(4 + next() % 18);  // every op but Open and the channel ones
    const int err = cm_exchange(fd, op, next() % 8, q);
    answered += err >= 0;
    done += err == 0;
    roce::verbs::service::CmEventRecord r;
    while (::recv(sv[0], &r, sizeof r, 0) > 0) {
    }
  }
  EXPECT_EQ(answered, 3000);
  EXPECT_GT(done, 0);  // some made IDs, bound, set options...
  std::printf("random records: %d of 3000 done\n", done);
  ::close(fd);
  EXPECT_TRUE(wait_for_cm_ids(0));
  EXPECT_EQ(status().connections, 1u);  // the fixture's context only
  ::close(sv[0]);
  ::close(sv[1]);
}

// A QP of an ID through the service, with a CQ and a buffer of its own.
struct Side {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  char* buf = nullptr;

  void make(rdma_cm_id* id) {
    ASSERT_NE(id->verbs, nullptr);
    pd = ibv_alloc_pd(id->verbs);
    ASSERT_NE(pd, nullptr);
    cq = ibv_create_cq(id->verbs, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    buf = static_cast<char*>(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(buf, MAP_FAILED);
    mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr) << std::strerror(errno);
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    ASSERT_EQ(rdma_create_qp(id, pd, &a), 0) << std::strerror(errno);
    EXPECT_EQ(id->qp->state, IBV_QPS_INIT);  // as rdma_create_qp leaves it
  }
  void destroy(rdma_cm_id* id) {
    if (id->qp) rdma_destroy_qp(id);
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (buf) ::munmap(buf, 4096);
  }
  ibv_wc completion() {
    ibv_wc wc{};
    const auto until = std::chrono::steady_clock::now() + kEventBound;
    while (std::chrono::steady_clock::now() < until)
      if (ibv_poll_cq(cq, 1, &wc) == 1) return wc;
    ADD_FAILURE() << "no completion";
    wc.status = IBV_WC_GENERAL_ERR;
    return wc;
  }
};

std::string private_text(const rdma_conn_param& c) {
  return c.private_data ? std::string(static_cast<const char*>(c.private_data), strnlen(static_cast<const char*>(c.private_data), c.private_data_len)) : "";
}

// A listener on `port` of the service's address, on channel `ch`.
rdma_cm_id* listen_on(rdma_event_channel* ch, std::uint16_t port, void* context) {
  rdma_cm_id* l = nullptr;
  EXPECT_EQ(rdma_create_id(ch, &l, context, RDMA_PS_TCP), 0) << std::strerror(errno);
  sockaddr_in a = service_addr(port);
  EXPECT_EQ(rdma_bind_addr(l, reinterpret_cast<sockaddr*>(&a)), 0) << std::strerror(errno);
  EXPECT_EQ(rdma_listen(l, 4), 0) << std::strerror(errno);
  return l;
}

// An active ID with its route to the service's address.
rdma_cm_id* resolved(rdma_event_channel* ch, std::uint16_t port) {
  rdma_cm_id* c = nullptr;
  EXPECT_EQ(rdma_create_id(ch, &c, nullptr, RDMA_PS_TCP), 0) << std::strerror(errno);
  sockaddr_in a = service_addr(port);
  EXPECT_EQ(rdma_resolve_addr(c, nullptr, reinterpret_cast<sockaddr*>(&a), 2000), 0) << std::strerror(errno);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED), 0);
  EXPECT_EQ(rdma_resolve_route(c, 2000), 0) << std::strerror(errno);
  EXPECT_EQ(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED), 0);
  return c;
}

rdma_conn_param with_private(const char* text) {
  rdma_conn_param p{};
  p.private_data = text;
  p.private_data_len = static_cast<std::uint8_t>(std::strlen(text) + 1);
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  return p;
}

// The server's side of the next connection request on `ch`: its QP made, accepted, and
// ESTABLISHED taken (nullptr when any step failed; the test failure says which).
rdma_cm_id* accept_next(rdma_event_channel* ch, Side& side, const char* text) {
  rdma_cm_event* e = next_event(ch, 30000);
  if (e == nullptr) return nullptr;
  EXPECT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST) << rdma_event_str(e->event);
  rdma_cm_id* s = e->event == RDMA_CM_EVENT_CONNECT_REQUEST ? e->id : nullptr;
  rdma_ack_cm_event(e);
  if (s == nullptr) return nullptr;
  side.make(s);
  rdma_conn_param ap = with_private(text);
  EXPECT_EQ(rdma_accept(s, &ap), 0) << std::strerror(errno);
  return expect_event(ch, RDMA_CM_EVENT_ESTABLISHED) == 0 ? s : nullptr;
}

// The end of a disconnected pair: DISCONNECTED on both channels, then the QPs, the IDs (client,
// server, listener) and the channels go.
void end_pair(Side& client, Side& server, std::array<rdma_cm_id*, 3> ids, rdma_event_channel* cch,
              rdma_event_channel* sch) {
  EXPECT_EQ(expect_event(cch, RDMA_CM_EVENT_DISCONNECTED), 0);
  EXPECT_EQ(expect_event(sch, RDMA_CM_EVENT_DISCONNECTED), 0);
  client.destroy(ids[0]);
  server.destroy(ids[1]);
  for (rdma_cm_id* id : ids) EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(cch);
  rdma_destroy_event_channel(sch);
}

// rping's shape through one service: a server and a client (two channels of one program),
// private data both ways, the QPs moved by the service's CM, a SEND checked byte for byte,
// disconnect events on both sides, and nothing left in the service afterwards.
TEST_F(Service, CmClientAndServerConnectAndSend) {
  const std::uint16_t port = test_port(1);
  const int child = in_child([port] {
    rdma_event_channel* sch = rdma_create_event_channel();
    rdma_event_channel* cch = rdma_create_event_channel();
    ASSERT_NE(sch, nullptr) << std::strerror(errno);
    ASSERT_NE(cch, nullptr);
    // The channel's fd: pollable, and non-blocking on request (EAGAIN when nothing waits).
    ASSERT_EQ(::fcntl(cch->fd, F_SETFL, ::fcntl(cch->fd, F_GETFL) | O_NONBLOCK), 0);
    rdma_cm_event* none = nullptr;
    EXPECT_EQ(rdma_get_cm_event(cch, &none), -1);
    EXPECT_EQ(errno, EAGAIN);
    ASSERT_EQ(::fcntl(cch->fd, F_SETFL, ::fcntl(cch->fd, F_GETFL) & ~O_NONBLOCK), 0);
    int context_mark = 0;
    rdma_cm_id* l = listen_on(sch, port, &context_mark);
    rdma_cm_id* c = resolved(cch, port);
    ASSERT_NE(c->verbs, nullptr);
    EXPECT_EQ(ntohs(rdma_get_dst_port(c)), port);
    Side client, server;
    client.make(c);
    rdma_conn_param cp = with_private("hello from the client");
    ASSERT_EQ(rdma_connect(c, &cp), 0) << std::strerror(errno);

    rdma_cm_event* e = next_event(sch);
    ASSERT_NE(e, nullptr);
    ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
    EXPECT_EQ(e->listen_id, l);
    rdma_cm_id* s = e->id;
    ASSERT_NE(s, l);
    EXPECT_EQ(s->context, &context_mark);  // the listener's, as librdmacm gives it
    EXPECT_EQ(private_text(e->param.conn), "hello from the client");
    EXPECT_EQ(e->param.conn.qp_num, c->qp->qp_num);
    EXPECT_EQ(ntohs(rdma_get_src_port(s)), port);
    ASSERT_EQ(rdma_ack_cm_event(e), 0);
    server.make(s);
    ibv_sge rsge{reinterpret_cast<std::uintptr_t>(server.buf), 4096, server.mr->lkey};
    ibv_recv_wr rwr{};
    rwr.wr_id = 7;
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_recv(s->qp, &rwr, &rbad), 0);
    rdma_conn_param ap = with_private("welcome from the server");
    ASSERT_EQ(rdma_accept(s, &ap), 0) << std::strerror(errno);
    EXPECT_EQ(s->qp->state, IBV_QPS_RTS);  // moved by the service's rdma_accept

    e = next_event(cch);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->event, RDMA_CM_EVENT_ESTABLISHED) << rdma_event_str(e->event) << " status " << e->status;
    EXPECT_EQ(e->id, c);
    EXPECT_EQ(private_text(e->param.conn), "welcome from the server");
    ASSERT_EQ(rdma_ack_cm_event(e), 0);
    EXPECT_EQ(c->qp->state, IBV_QPS_RTS);  // moved by the service when it took the REP
    EXPECT_EQ(expect_event(sch, RDMA_CM_EVENT_ESTABLISHED), 0);

    for (int i = 0; i < 64; ++i) client.buf[i] = static_cast<char>(i * 3 + 1);
    ibv_sge ssge{reinterpret_cast<std::uintptr_t>(client.buf), 64, client.mr->lkey};
    ibv_send_wr swr{};
    swr.wr_id = 9;
    swr.sg_list = &ssge;
    swr.num_sge = 1;
    swr.opcode = IBV_WR_SEND;
    swr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* sbad = nullptr;
    ASSERT_EQ(ibv_post_send(c->qp, &swr, &sbad), 0) << std::strerror(errno);
    const ibv_wc sent = client.completion();
    EXPECT_EQ(sent.status, IBV_WC_SUCCESS) << ibv_wc_status_str(sent.status);
    const ibv_wc got = server.completion();
    EXPECT_EQ(got.status, IBV_WC_SUCCESS) << ibv_wc_status_str(got.status);
    EXPECT_EQ(got.wr_id, 7u);
    EXPECT_EQ(got.byte_len, 64u);
    EXPECT_EQ(std::memcmp(server.buf, client.buf, 64), 0);

    ASSERT_EQ(rdma_disconnect(c), 0) << std::strerror(errno);
    EXPECT_EQ(c->qp->state, IBV_QPS_ERR);  // stopped before the DREQ, as librdmacm does
    end_pair(client, server, {c, s, l}, cch, sch);
  });
  EXPECT_EQ(child, 0) << "the child's failures are above";
  EXPECT_TRUE(wait_for_cm_ids(0));
  EXPECT_EQ(status().qps, 0u);
}

// rdma_create_srq through the service: the accepted ID's SRQ, made in the device-wide PD (none
// given), feeds the QP rdma_create_qp makes after it; a SEND lands in a receive posted to the
// SRQ, and the SRQ's limit, armed at creation, reaches the program as
// IBV_EVENT_SRQ_LIMIT_REACHED on the ID's context. The refusals are library mode's (an XRC SRQ
// EOPNOTSUPP, no type or a second SRQ EINVAL); rdma_destroy_srq after the QP frees it.
TEST_F(Service, CmIdsSrqFeedsItsQpThroughTheService) {
  const std::uint16_t port = test_port(10);
  const int child = in_child([port] {
    rdma_event_channel* sch = rdma_create_event_channel();
    rdma_event_channel* cch = rdma_create_event_channel();
    ASSERT_NE(sch, nullptr) << std::strerror(errno);
    ASSERT_NE(cch, nullptr);
    rdma_cm_id* l = listen_on(sch, port, nullptr);
    rdma_cm_id* c = resolved(cch, port);
    Side client;
    client.make(c);
    rdma_conn_param cp = with_private("srq please");
    ASSERT_EQ(rdma_connect(c, &cp), 0) << std::strerror(errno);
    rdma_cm_event* e = next_event(sch);
    ASSERT_NE(e, nullptr);
    ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST) << rdma_event_str(e->event);
    rdma_cm_id* s = e->id;
    ASSERT_EQ(rdma_ack_cm_event(e), 0);

    ibv_srq_init_attr_ex xrc{};
    xrc.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
    xrc.srq_type = IBV_SRQT_XRC;
    EXPECT_EQ(rdma_create_srq_ex(s, &xrc), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    ibv_srq_init_attr_ex untyped{};
    EXPECT_EQ(rdma_create_srq_ex(s, &untyped), -1);
    EXPECT_EQ(errno, EINVAL);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    sa.attr.srq_limit = 1;
    ASSERT_EQ(rdma_create_srq(s, nullptr, &sa), 0) << std::strerror(errno);
    ASSERT_NE(s->srq, nullptr);
    ASSERT_NE(s->pd, nullptr);  // the device-wide PD, taken for the SRQ
    EXPECT_EQ(s->srq->pd, s->pd);
    EXPECT_GE(sa.attr.max_wr, 8u);
    EXPECT_EQ(rdma_create_srq(s, nullptr, &sa), -1);  // it has one
    EXPECT_EQ(errno, EINVAL);
    ibv_cq* cq = ibv_create_cq(s->verbs, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap = {8, 0, 1, 0, 0};
    ASSERT_EQ(rdma_create_qp(s, nullptr, &qa), 0) << std::strerror(errno);
    EXPECT_EQ(s->qp->srq, s->srq);
    std::vector<char> rbuf(128);
    ibv_mr* rmr = ibv_reg_mr(s->pd, rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(rmr, nullptr) << std::strerror(errno);
    for (std::uint64_t i = 0; i < 2; ++i) {
      ibv_sge rsge{reinterpret_cast<std::uintptr_t>(rbuf.data()) + 64 * i, 64, rmr->lkey};
      ibv_recv_wr rwr{};
      rwr.wr_id = 40 + i;
      rwr.sg_list = &rsge;
      rwr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      ASSERT_EQ(ibv_post_srq_recv(s->srq, &rwr, &bad), 0);
    }
    ASSERT_EQ(rdma_accept(s, nullptr), 0) << std::strerror(errno);
    EXPECT_EQ(expect_event(cch, RDMA_CM_EVENT_ESTABLISHED), 0);
    EXPECT_EQ(expect_event(sch, RDMA_CM_EVENT_ESTABLISHED), 0);

    // Two SENDs: the second leaves no receive, fewer than the limit.
    for (std::uint64_t i = 0; i < 2; ++i) {
      std::snprintf(client.buf, 64, "via the srq %d", static_cast<int>(i));
      ibv_sge ssge{reinterpret_cast<std::uintptr_t>(client.buf), 16, client.mr->lkey};
      ibv_send_wr swr{};
      swr.sg_list = &ssge;
      swr.num_sge = 1;
      swr.opcode = IBV_WR_SEND;
      swr.send_flags = IBV_SEND_SIGNALED;
      ibv_send_wr* bad = nullptr;
      ASSERT_EQ(ibv_post_send(c->qp, &swr, &bad), 0) << std::strerror(errno);
      EXPECT_EQ(client.completion().status, IBV_WC_SUCCESS);
      ibv_wc got{};
      ASSERT_EQ(poll_one(cq, got), 1);
      EXPECT_EQ(got.status, IBV_WC_SUCCESS) << ibv_wc_status_str(got.status);
      EXPECT_EQ(got.wr_id, 40 + i);
      EXPECT_EQ(got.qp_num, s->qp->qp_num);
      EXPECT_STREQ(rbuf.data() + 64 * i, client.buf);
    }
    pollfd p{s->verbs->async_fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 30000), 1) << "no SRQ limit event";
    ibv_async_event ev{};
    ASSERT_EQ(ibv_get_async_event(s->verbs, &ev), 0) << std::strerror(errno);
    EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED) << ibv_event_type_str(ev.event_type);
    EXPECT_EQ(ev.element.srq, s->srq);
    ibv_ack_async_event(&ev);

    ASSERT_EQ(rdma_disconnect(c), 0) << std::strerror(errno);
    EXPECT_EQ(expect_event(cch, RDMA_CM_EVENT_DISCONNECTED), 0);
    EXPECT_EQ(expect_event(sch, RDMA_CM_EVENT_DISCONNECTED), 0);
    client.destroy(c);
    rdma_destroy_qp(s);
    rdma_destroy_srq(s);
    EXPECT_EQ(s->srq, nullptr);
    EXPECT_EQ(ibv_dereg_mr(rmr), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    for (rdma_cm_id* id : {c, s, l}) EXPECT_EQ(rdma_destroy_id(id), 0);
    rdma_destroy_event_channel(cch);
    rdma_destroy_event_channel(sch);
  });
  EXPECT_EQ(child, 0) << "the child's failures are above";
  EXPECT_TRUE(wait_for_cm_ids(0));
  EXPECT_EQ(status().qps, 0u);
}

// An event the service pushed before a call, read after the call's answer, carries the older
// snapshot: the ID keeps what the call left (here ESTABLISHED read after rdma_disconnect: the
// QP stays in ERR, not back to RTS).
TEST_F(Service, CmEventReadAfterALaterCallDoesNotUndoIt) {
  const std::uint16_t port = test_port(7);
  const int child = in_child([port] {
    rdma_event_channel* sch = rdma_create_event_channel();
    rdma_event_channel* cch = rdma_create_event_channel();
    ASSERT_NE(sch, nullptr) << std::strerror(errno);
    ASSERT_NE(cch, nullptr);
    rdma_cm_id* l = listen_on(sch, port, nullptr);
    rdma_cm_id* c = resolved(cch, port);
    Side client, server;
    client.make(c);
    rdma_conn_param cp = with_private("early");
    ASSERT_EQ(rdma_connect(c, &cp), 0) << std::strerror(errno);
    rdma_cm_id* s = accept_next(sch, server, "late");
    ASSERT_NE(s, nullptr);
    pollfd p{cch->fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);  // the client's ESTABLISHED waits, unread
    ASSERT_EQ(rdma_disconnect(c), 0) << std::strerror(errno);
    EXPECT_EQ(c->qp->state, IBV_QPS_ERR);
    rdma_cm_event* e = next_event(cch);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->event, RDMA_CM_EVENT_ESTABLISHED);
    EXPECT_EQ(private_text(e->param.conn), "late");
    EXPECT_EQ(c->qp->state, IBV_QPS_ERR);
    rdma_ack_cm_event(e);
    end_pair(client, server, {c, s, l}, cch, sch);
  });
  EXPECT_EQ(child, 0) << "the child's failures are above";
  EXPECT_TRUE(wait_for_cm_ids(0));
}

// A client killed with its connection up: the service destroys its ID, whose DREQ reaches the
// server (DISCONNECTED), and frees its QP; the server's program goes on.
TEST_F(Service, CmProgramKilledWithAConnectionUp) {
  const std::uint16_t port = test_port(2);
  int listening[2], connected[2];
  ASSERT_EQ(::pipe(listening), 0);
  ASSERT_EQ(::pipe(connected), 0);
  Program server;
  server.pid = ::fork();
  if (server.pid == 0) {
    rdma_event_channel* ch = rdma_create_event_channel();
    if (ch == nullptr) ::_exit(2);
    rdma_cm_id* l = listen_on(ch, port, nullptr);
    if (::write(listening[1], "l", 1) != 1) ::_exit(3);
    Side side;
    rdma_cm_id* s = accept_next(ch, side, "up");
    if (s == nullptr) ::_exit(4);
    // The peer's DREQ when its program is killed.
    if (expect_event(ch, RDMA_CM_EVENT_DISCONNECTED) != 0) ::_exit(7);
    side.destroy(s);
    rdma_destroy_id(s);
    rdma_destroy_id(l);
    rdma_destroy_event_channel(ch);
    ::_exit(::testing::Test::HasFailure() ? 8 : 0);
  }
  char b;
  ASSERT_EQ(::read(listening[0], &b, 1), 1);
  Program client;
  client.pid = ::fork();
  if (client.pid == 0) {
    rdma_event_channel* ch = rdma_create_event_channel();
    if (ch == nullptr) ::_exit(2);
    rdma_cm_id* c = resolved(ch, port);
    Side side;
    side.make(c);
    rdma_conn_param cp = with_private("client");
    if (rdma_connect(c, &cp) != 0) ::_exit(3);
    if (expect_event(ch, RDMA_CM_EVENT_ESTABLISHED) != 0) ::_exit(4);
    if (::write(connected[1], "c", 1) != 1) ::_exit(5);
    for (;;) ::pause();  // killed here, with everything up
  }
  ASSERT_EQ(::read(connected[0], &b, 1), 1);
  EXPECT_EQ(status().cm_ids, 3u);  // the listener, the server's passive ID, the client's
  ASSERT_EQ(::kill(client.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(client, std::chrono::seconds(30)), 128 + SIGKILL);
  EXPECT_EQ(wait_exit(server, std::chrono::seconds(60)), 0);
  EXPECT_TRUE(wait_for_cm_ids(0));
  EXPECT_EQ(status().qps, 0u);
  for (int f : {listening[0], listening[1], connected[0], connected[1]}) ::close(f);
}

// fork(): the child's rdma_cm is its own connection (the parent's objects are EINVAL there), and
// the parent killed while the child lives on has its IDs freed all the same (the child closed
// its copy of the parent's connection).
TEST_F(Service, CmForkedChildHasAConnectionOfItsOwn) {
  const std::uint16_t port = test_port(9);
  int to_test[2];
  ASSERT_EQ(::pipe(to_test), 0);
  Program parent, child;
  parent.pid = ::fork();
  if (parent.pid == 0) {
    rdma_event_channel* ch = rdma_create_event_channel();
    if (ch == nullptr) ::_exit(2);
    rdma_cm_id* l = listen_on(ch, port, nullptr);
    int ready[2];
    if (::pipe(ready) != 0) ::_exit(3);
    const pid_t c = ::fork();
    if (c == 0) {
      int bad = 0;
      bad += rdma_resolve_route(l, 100) == 0 || errno != EINVAL;  // the parent's ID
      ::fcntl(ch->fd, F_SETFL, O_NONBLOCK);
      rdma_cm_event* e = nullptr;
      bad += rdma_get_cm_event(ch, &e) == 0 || errno != EINVAL;  // the parent's channel
      rdma_event_channel* mine = rdma_create_event_channel();
      rdma_cm_id* own = mine ? listen_on(mine, static_cast<std::uint16_t>(port + 1), nullptr) : nullptr;
      bad += own == nullptr || ::testing::Test::HasFailure();
      const char verdict = bad ? 'x' : 'c';
      if (::write(ready[1], &verdict, 1) != 1) ::_exit(4);
      for (;;) ::pause();
    }
    char v = 0;
    if (c < 0 || ::read(ready[0], &v, 1) != 1) ::_exit(5);
    const pid_t pids[2] = {::getpid(), c};
    if (::write(to_test[1], &v, 1) != 1 || ::write(to_test[1], pids, sizeof pids) != sizeof pids) ::_exit(6);
    for (;;) ::pause();  // killed here, its listener up
  }
  char verdict = 0;
  pid_t pids[2] = {};
  ASSERT_EQ(::read(to_test[0], &verdict, 1), 1);
  ASSERT_EQ(::read(to_test[0], pids, sizeof pids), static_cast<ssize_t>(sizeof pids));
  child.pid = pids[1];
  EXPECT_EQ(verdict, 'c') << "the child could use its parent's rdma_cm objects, or not make its own";
  EXPECT_EQ(status().cm_ids, 2u);  // the parent's listener and the child's
  ASSERT_EQ(::kill(parent.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(parent, std::chrono::seconds(30)), 128 + SIGKILL);
  EXPECT_TRUE(wait_for_cm_ids(1)) << "the parent's IDs outlived it";
  ::kill(child.pid, SIGKILL);  // not this process's child: reaped by init
  EXPECT_TRUE(wait_for_cm_ids(0));
  ::close(to_test[0]);
  ::close(to_test[1]);
}

// Debian's programs, unmodified, both ends through the service: their own verdicts decide.
// `expect`: a line of the client's output its run must show (the last exchange, the result row).
void run_pair(const std::vector<std::string>& server_args, const std::vector<std::string>& client_args, const char* tag,
              const std::string& expect) {
  const std::string dir = "/tmp/roce-verbs-service-cm-" + std::to_string(::getpid()) + tag;
  const std::uint32_t before = status().cm_ids;
  Program server = spawn(server_args, dir + ".s");
  Program client;
  struct Reaper {
    std::vector<Program*> all;
    ~Reaper() {
      for (Program* p : all)
        if (p->pid > 0 && ::kill(p->pid, SIGKILL) == 0) ::waitpid(p->pid, nullptr, 0);
    }
  } reaper{{&server, &client}};
  // The server's listener is up once the service holds its ID.
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  while (status().cm_ids <= before && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // from its ID to its rdma_listen
  client = spawn(client_args, dir + ".c");
  EXPECT_EQ(wait_exit(client, std::chrono::seconds(90)), 0) << slurp(dir + ".c");
  EXPECT_NE(slurp(dir + ".c").find(expect), std::string::npos) << slurp(dir + ".c");
  EXPECT_EQ(wait_exit(server, std::chrono::seconds(30)), 0) << slurp(dir + ".s");
  EXPECT_TRUE(wait_for_cm_ids(before));
  ::unlink((dir + ".s").c_str());
  ::unlink((dir + ".c").c_str());
}

TEST_F(Service, RpingThroughTheService) {
  REQUIRE_PROGRAM("rping");
  const std::string port = std::to_string(test_port(3));
  run_pair({"rping", "-s", "-a", kServiceIp, "-p", port, "-V", "-C", "10", "-S", "4000"},
           {"rping", "-c", "-a", kServiceIp, "-p", port, "-V", "-v", "-C", "10", "-S", "4000"}, "rping", "ping data: rdma-ping-9: ");
}

TEST_F(Service, WriteBwOverRdmaCmThroughTheService) {
  REQUIRE_PROGRAM("ib_write_bw");
  const std::string port = std::to_string(test_port(4));
  run_pair({"ib_write_bw", "-d", "svc0", "-R", "-F", "-s", "65536", "-n", "200", "-p", port},
           {"ib_write_bw", "-d", "svc0", "-R", "-F", "-s", "65536", "-n", "200", "-p", port, kServiceIp}, "wbw",
           " 65536      200 ");
}

// UD through SIDR: the service's CM answers the SIDR_REQ with the server's QP and Q_Key.
TEST_F(Service, SendBwUdOverRdmaCmThroughTheService) {
  REQUIRE_PROGRAM("ib_send_bw");
  const std::string port = std::to_string(test_port(5));
  run_pair({"ib_send_bw", "-d", "svc0", "-R", "-c", "UD", "-F", "-s", "1024", "-n", "200", "-p", port},
           {"ib_send_bw", "-d", "svc0", "-R", "-c", "UD", "-F", "-s", "1024", "-n", "200", "-p", port, kServiceIp}, "sbwud",
           " 1024       200 ");
}

// Synchronous IDs (rdma_create_ep, rdma_get_request: each call waits for its event on a
// private channel, here a socket from the service like any other).
TEST_F(Service, RdmaServerAndClientThroughTheService) {
  REQUIRE_PROGRAM("rdma_server");
  const std::string port = std::to_string(test_port(8));
  run_pair({"rdma_server", "-s", kServiceIp, "-p", port}, {"rdma_client", "-s", kServiceIp, "-p", port}, "sync",
           "rdma_client: end 0");
}

}  // namespace
}  // namespace service_test
