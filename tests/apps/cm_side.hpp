// One side of the rdma_cm tests over two dataplanes (cm_service_test, cm_lossy_test): its
// drivers, Connector, a registered buffer and, once started, its CmService; helpers that wait
// for rdma_cm events, post and poll work requests from the test thread, and serve the passive
// side of one RC connection.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "client/buffers.hpp"
#include "client/cm_service.hpp"
#include "client/connector.hpp"

namespace roce::test {

inline const proto::IpAddress kClientIp = proto::IpAddress::of(proto::Ipv4Addr{10, 0, 0, 1});
inline const proto::IpAddress kServerIp = proto::IpAddress::of(proto::Ipv4Addr{10, 0, 0, 2});
inline constexpr std::size_t kBuf = 4096;

struct Side {
  Side(dp::Dataplane& d, std::uint64_t seed) : dp(d), drivers(d), conn(d, seed) {
    auto b = client::MappedBuffer::anonymous(kBuf);
    EXPECT_TRUE(b.ok());
    buf = std::move(*b);
    auto m = conn.register_memory(buf.data(), buf.size(),
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    EXPECT_TRUE(m.ok());
    mr = *m;
  }
  void start_cm() { cms = std::make_unique<client::CmService>(dp, drivers); }

  // The next event of `type` within `wait`; the others are kept in `seen`.
  std::optional<cm::RdmaCmEvent> wait_for(cm::RdmaCmEventType type, Nanos wait = 3 * kSecond) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
    for (;;) {
      for (std::size_t i = 0; i < pending.size(); ++i)
        if (pending[i].type == type) {
          cm::RdmaCmEvent e = pending[i];
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          return e;
        }
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) return std::nullopt;
      for (auto& e : cms->wait_events(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count())) {
        seen.push_back(e);
        pending.push_back(std::move(e));
      }
    }
  }
  int post_send(const client::LocalQp& q, ibv_send_wr& wr) {
    return dp.call(q.worker, [&](rdma::Engine& e) {
      ibv_send_wr* bad = nullptr;
      return e.post_send(q.qp, &wr, &bad);
    });
  }
  int post_recv(const client::LocalQp& q, std::uint32_t len) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(buf.data()), len, mr->lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = 7;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return dp.call(q.worker, [&](rdma::Engine& e) {
      ibv_recv_wr* bad = nullptr;
      return e.post_recv(q.qp, &wr, &bad);
    });
  }
  std::vector<ibv_wc> poll(const client::LocalQp& q, std::size_t n) {
    std::vector<ibv_wc> got;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (got.size() < n && std::chrono::steady_clock::now() < until) {
      ibv_wc wc[4];
      const int k = dp.call(q.worker, [&](rdma::Engine& e) { return e.poll_cq(q.cq, 4, wc); });
      for (int i = 0; i < k; ++i) got.push_back(wc[i]);
      if (k <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return got;
  }

  // The whole passive side of one RC connection: QP, a receive, RTR/RTS, REP.
  client::LocalQp serve_one(std::uint32_t recv_len, Nanos wait = 3 * kSecond) {
    auto req = wait_for(cm::RdmaCmEventType::ConnectRequest, wait);
    EXPECT_TRUE(req);
    if (!req) return {};
    const auto& info = std::get<cm::ReqInfo>(req->detail);
    auto q = conn.create(client::QpParams{});
    EXPECT_TRUE(q.ok());
    EXPECT_EQ(post_recv(*q, recv_len), 0);
    const cm::CmQpAttrs a = cm::passive_qp_attrs(info, q->psn, cms->qp_limits());
    EXPECT_TRUE(cms->connect_qp(*q, IBV_QPT_RC, a).ok());
    cm::AcceptParams ap;
    ap.local_qpn = q->qpn;
    ap.starting_psn = q->psn;
    ap.responder_resources = 1;
    ap.initiator_depth = 1;
    EXPECT_TRUE(cms->accept(req->id, ap).ok());
    return *q;
  }

  dp::Dataplane& dp;
  client::DriverSet drivers;
  client::Connector conn;
  client::MappedBuffer buf;
  const rdma::MemoryRegion* mr = nullptr;
  std::unique_ptr<client::CmService> cms;
  std::vector<cm::RdmaCmEvent> seen, pending;
};

// rdma_cm's REQ with short timers (packet lifetime 10: a 256 ms TIMEWAIT; response timeouts
// of 4 ms), so that lost MADs cost milliseconds.
inline cm::RdmaConnectParams short_timer_request(const client::LocalQp& q, std::uint16_t port, std::uint8_t retries = 15) {
  cm::RdmaConnectParams p;
  p.port_space = proto::RdmaPortSpace::Tcp;
  p.src = kClientIp;
  p.dst = kServerIp;
  p.src_port = 41000;
  p.dst_port = port;
  p.ib.local_qpn = q.qpn;
  p.ib.starting_psn = q.psn;
  p.ib.responder_resources = 1;
  p.ib.initiator_depth = 1;
  p.ib.path_mtu = proto::PathMtu::Mtu1024;
  p.ib.path.packet_life_time = 10;
  p.ib.remote_cm_response_timeout = 10;
  p.ib.local_cm_response_timeout = 10;
  p.ib.max_cm_retries = retries;
  return p;
}

}  // namespace roce::test
