// The appliance's ibv_srq_pingpong server: every QP of the session takes its receives from one
// shared receive queue (as ibv_srq_pingpong's own side does), stocked in batches each time the
// queue's limit event comes. A client of several QPs ping-pongs more messages than the queue
// holds: each comes back on the QP it came in on, and the refills are counted.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "client/buffers.hpp"
#include "client/oob/pingpong.hpp"
#include "client/oob_server.hpp"
#include "tests/support/dataplane_pair.hpp"

namespace roce::client::srq_pingpong_server_test {
namespace {

constexpr std::uint32_t kMsg = 64;

class SrqPingpongServer : public test::DataplanePairTest {
 protected:
  SrqPingpongServer() : DataplanePairTest("spp") {}
};

TEST_F(SrqPingpongServer, EveryQpSharesOneQueueRefilledAtItsLimitEvent) {
  constexpr unsigned kQps = 4;
  constexpr unsigned kRounds = 30;  // 120 messages through a queue of 32
  auto recv = MappedBuffer::anonymous(1 << 16);
  auto mine = MappedBuffer::anonymous(1 << 16);
  ASSERT_TRUE(recv.ok() && mine.ok());
  Connector server_conn(*server_dp_, 77);
  auto rmr = server_conn.register_memory(recv->data(), recv->size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(rmr.ok());
  DriverSet server_drivers(*server_dp_);
  ServerConfig cfg;
  cfg.recv_region = LocalBuffer{recv->data(), 4096, (*rmr)->lkey()};
  cfg.recv_depth = 32;
  cfg.pingpong_idle_timeout = kSecond / 2;
  OobServer server(server_conn, server_drivers, cfg);
  std::atomic<bool> stop{false};
  Result<SessionReport> report = make_error(EINVAL, "not run");
  std::thread srv([&] {
    auto tcp = listener_->accept(10'000);
    if (!tcp) return void(report = tcp.error());
    report = server.serve(*tcp, stop);
  });

  Connector conn(*client_dp_, 99);
  auto mr = conn.register_memory(mine->data(), mine->size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(mr.ok());
  QpParams p;
  p.max_rd_atomic = 1;
  std::vector<LocalQp> qps;
  std::vector<PingpongDest> records;
  for (unsigned i = 0; i < kQps; ++i) {
    auto q = conn.create(p, 0);
    ASSERT_TRUE(q.ok()) << q.error().message;
    qps.push_back(*q);
    records.push_back(PingpongDest{0, q->qpn, q->psn, conn.local_gid()});
  }
  {
    auto tcp = TcpStream::connect("127.0.0.1", listener_->port(), 5'000);
    ASSERT_TRUE(tcp.ok());
    auto peers = srq_pingpong_client_exchange(*tcp, records, 5'000);
    ASSERT_TRUE(peers.ok()) << peers.error().message;
    ASSERT_EQ(peers->size(), kQps);
    for (unsigned i = 0; i < kQps; ++i)
      ASSERT_TRUE(conn.connect(qps[i], RemoteQp{(*peers)[i].qpn, (*peers)[i].psn, (*peers)[i].gid}, p).ok());
  }
  // Each round: a receive and a SEND on every QP, then every echo back on its own QP.
  std::byte* base = static_cast<std::byte*>(mine->data());
  for (unsigned round = 0; round < kRounds; ++round) {
    for (unsigned i = 0; i < kQps; ++i) {
      const int rc = client_dp_->call(0, [&](rdma::Engine& e) {
        ibv_sge rs{reinterpret_cast<std::uint64_t>(base + 4096 * (i + 1)), kMsg, (*mr)->lkey()};
        ibv_recv_wr rw{};
        rw.wr_id = i;
        rw.sg_list = &rs;
        rw.num_sge = 1;
        ibv_recv_wr* rbad = nullptr;
        if (int r = e.post_recv(qps[i].qp, &rw, &rbad)) return r;
        ibv_sge ss{reinterpret_cast<std::uint64_t>(base), kMsg, (*mr)->lkey()};
        ibv_send_wr sw{};
        sw.opcode = IBV_WR_SEND;
        sw.sg_list = &ss;
        sw.num_sge = 1;
        sw.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* sbad = nullptr;
        return e.post_send(qps[i].qp, &sw, &sbad);
      });
      ASSERT_EQ(rc, 0);
    }
    unsigned echoes = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (echoes < kQps && std::chrono::steady_clock::now() < until) {
      for (unsigned i = 0; i < kQps; ++i) {
        ibv_wc wc[4];
        const int n = client_dp_->call(0, [&](rdma::Engine& e) { return e.poll_cq(qps[i].cq, 4, wc); });
        for (int k = 0; k < n; ++k) {
          ASSERT_EQ(wc[k].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[k].status);
          if (wc[k].opcode == IBV_WC_RECV) {
            EXPECT_EQ(wc[k].wr_id, i);  // the echo came back on the QP the message went out on
            EXPECT_EQ(wc[k].byte_len, kMsg);
            ++echoes;
          }
        }
      }
    }
    ASSERT_EQ(echoes, kQps) << "round " << round;
  }
  srv.join();  // the session ends once the QPs went quiet
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->tool, "ibv_srq_pingpong");
  EXPECT_EQ(report->qps, kQps);
  EXPECT_TRUE(report->shared_srq);
  EXPECT_EQ(report->received_messages, kQps * kRounds);
  // 120 messages through 32 receives with the limit at 8: refilled at every event, and only then.
  EXPECT_GE(report->srq_limit_events, (kQps * kRounds - 32) / 24);
  EXPECT_LE(report->srq_limit_events, (kQps * kRounds) / 24 + 1);
  for (const LocalQp& q : qps) EXPECT_TRUE(conn.destroy(q).ok());
  server_dp_->memory().deregister((*rmr)->rkey());
  client_dp_->memory().deregister((*mr)->rkey());
}

}  // namespace
}  // namespace roce::client::srq_pingpong_server_test
