// The switched fabric: forwarding by destination IP, store-and-forward timing in link bytes,
// CE marking the engines accept, tail drop the transport recovers from, and the port window.
#include "tests/support/sim_fabric.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "lib/cc/pacer.hpp"
#include "protocol/parser.hpp"
#include "tests/support/ip_frame.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test {
namespace {

using namespace roce::proto;

constexpr int kRemoteWrite = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

// Senders bounded only by their 256-packet go-back-N window, so that line-rate senders fill the
// switch queue as these tests expect (the 256 KiB byte window would keep it shallow).
rdma::EngineConfig line_rate_config() {
  rdma::EngineConfig cfg;
  cfg.tuning.max_inflight_bytes = 0;
  return cfg;
}

// Hosts h0..h(n-1) at 10.0.0.(i+1); flows from every host but h0 to h0.
struct Star {
  SimFabric fabric{7};
  std::vector<std::size_t> hosts;
  std::vector<Endpoint> senders, receivers;
  std::vector<std::vector<std::byte>> src, dst;
  std::vector<std::uint64_t> delivered_to;
  QpOptions opts;

  Star(int n, cc::CpParams port, FabricLink link = {}, QpOptions o = {}) : opts(o) {
    opts.mtu = IBV_MTU_4096;
    for (int i = 0; i < n; ++i) {
      const auto b = static_cast<std::uint8_t>(i + 1);
      hosts.push_back(fabric.add_host("h" + std::to_string(i), {2, 0, 0, 0, 0, b}, {10, 0, 0, b}, line_rate_config(), link, port));
    }
    delivered_to.assign(hosts.size(), 0);
    fabric.on_deliver = [this](std::size_t h, std::span<const std::byte>, Nanos) { ++delivered_to[h]; };
    for (int i = 1; i < n; ++i) {
      senders.push_back(make_endpoint(fabric.host(hosts[static_cast<std::size_t>(i)]), opts));
      receivers.push_back(make_endpoint(fabric.host(hosts[0]), opts));
      connect_pair(senders.back(), receivers.back(), opts);
    }
  }
  // One WRITE of `bytes` from every sender; returns when all completed.
  bool write_all(std::uint32_t bytes, Nanos limit = kSecond) {
    src.assign(senders.size(), {});
    dst.assign(senders.size(), std::vector<std::byte>(bytes));
    for (std::size_t i = 0; i < senders.size(); ++i) {
      src[i].resize(bytes);
      for (std::size_t k = 0; k < bytes; ++k) src[i][k] = static_cast<std::byte>((k * 7 + i * 31) & 0xFF);
      auto* sm = reg(*senders[i].engine, senders[i].pd, src[i], IBV_ACCESS_LOCAL_WRITE);
      auto* dm = reg(*receivers[i].engine, receivers[i].pd, dst[i], kRemoteWrite);
      ibv_sge g = sge(src[i].data(), bytes, sm);
      const auto remote = reinterpret_cast<std::uint64_t>(dst[i].data());
      EXPECT_EQ(post(senders[i], IBV_WR_RDMA_WRITE, i, &g, 1, remote, dm->rkey()), 0);
    }
    std::size_t done = 0;
    return fabric.run_until(
        [&] {
          for (auto& s : senders)
            for (const ibv_wc& wc : drain(s)) {
              EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
              ++done;
            }
          return done == senders.size();
        },
        fabric.now() + limit);
  }
  bool data_intact() const { return src == dst; }
};

TEST(SimFabric, ForwardsByDestinationIpAndDeliversAWriteByteExact) {
  Star s(3, {});
  ASSERT_TRUE(s.write_all(100'000));
  EXPECT_TRUE(s.data_intact());
  // h1 and h2 get only ACKs from h0, h0 gets data; nothing is unroutable or dropped.
  EXPECT_GT(s.delivered_to[0], 2 * 24u);
  EXPECT_GT(s.delivered_to[1], 0u);
  EXPECT_GT(s.delivered_to[2], 0u);
  EXPECT_EQ(s.fabric.unroutable(), 0u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(s.fabric.egress(i).counters().dropped_buffer_full, 0u);
}

TEST(SimFabric, AFrameTakesBothLinkTimesAndBothDelaysStoreAndForward) {
  FabricLink link{10e9, 3 * kMicro};
  Star s(2, {}, link);
  std::vector<Nanos> at;
  std::vector<std::size_t> len;
  s.fabric.on_deliver = [&](std::size_t h, std::span<const std::byte> f, Nanos t) {
    if (h == 0) {
      at.push_back(t);
      len.push_back(f.size());
    }
  };
  const Nanos t0 = s.fabric.now();
  ASSERT_TRUE(s.write_all(1000));
  ASSERT_FALSE(at.empty());
  // Link bytes at 10 Gb/s: 0.8 ns per byte, on the host link and again on the switch port.
  const double wire_ns = cc::link_bytes(static_cast<std::uint32_t>(len[0])) * 0.8;
  EXPECT_NEAR(static_cast<double>(at[0] - t0), 2 * wire_ns + 2 * 3000, 2.0);
}

TEST(SimFabric, TwoLineRateSendersQueueInTheSwitchAndMarkedFramesStayValid) {
  cc::CpParams port;
  port.red = {20'000, 200'000, 0.2};
  port.capacity_bytes = 4'000'000;
  Star s(3, port);
  std::uint64_t ce_seen = 0, bad = 0;
  s.fabric.on_deliver = [&](std::size_t h, std::span<const std::byte> f, Nanos) {
    if (h != 0) return;
    Packet p;
    if (parse_frame(f, {}, p) != ParseError::None || p.icrc_status != IcrcStatus::Ok || !p.ipv4_checksum_ok) ++bad;
    ce_seen += p.ecn() == Ecn::Ce;
  };
  ASSERT_TRUE(s.write_all(2'000'000));
  EXPECT_TRUE(s.data_intact());
  const cc::CpCounters& k = s.fabric.egress(0).counters();
  // 2 x 10 Gb/s into 10 Gb/s: about half of the 4 MB, or what the go-back-N windows let into
  // flight if that is less (2 x 256 frames: 1.86 MB), waits in the switch; the hosts' TX rings
  // hold a few frames at most. Above Kmin the port marks.
  EXPECT_GT(k.max_occupancy_bytes, 1'500'000u);
  EXPECT_EQ(k.dropped_buffer_full, 0u);
  EXPECT_GT(k.marked_ce, 0u);
  EXPECT_EQ(ce_seen, k.marked_ce);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(s.fabric.host(s.hosts[0]).drops(rdma::EngineDrop::IcrcBad), 0u);
  EXPECT_EQ(s.receivers[0].qp->counters().get(rdma::Counter::EcnCeReceived) +
                s.receivers[1].qp->counters().get(rdma::Counter::EcnCeReceived),
            k.marked_ce);
}

TEST(SimFabric, TailDropIsCountedAndGoBackNStillDeliversEverything) {
  cc::CpParams port;
  port.capacity_bytes = 64 * 1024;  // 15 full frames
  QpOptions o;
  o.timeout = 8;  // 1 ms: a tail loss is not left to a 67 ms timer
  Star s(4, port, {}, o);
  ASSERT_TRUE(s.write_all(1'000'000, 10 * kSecond));
  EXPECT_TRUE(s.data_intact());
  const cc::CpCounters& k = s.fabric.egress(0).counters();
  EXPECT_GT(k.dropped_buffer_full, 0u);
  EXPECT_EQ(s.fabric.window(0).dropped, k.dropped_buffer_full + k.dropped_no_slot);
  EXPECT_LE(k.max_occupancy_bytes, port.capacity_bytes);
  std::uint64_t retx = 0;
  for (const auto& e : s.senders) retx += e.qp->counters().get(rdma::Counter::RetransmittedPkts);
  EXPECT_GT(retx, 0u);
}

TEST(SimFabric, PortWindowCountsWhatLeftAndTheTimeWeightedQueue) {
  Star s(3, {});
  s.fabric.run_to(10 * kMicro);
  s.fabric.start_window();
  const Nanos from = s.fabric.now();
  std::uint64_t link_bytes = 0;
  s.fabric.on_deliver = [&](std::size_t h, std::span<const std::byte> f, Nanos) {
    if (h == 0) link_bytes += cc::link_bytes(static_cast<std::uint32_t>(f.size()));
  };
  ASSERT_TRUE(s.write_all(500'000));
  s.fabric.run_to(s.fabric.now() + 100 * kMicro);  // everything has arrived
  const PortWindow& w = s.fabric.window(0);
  EXPECT_EQ(w.departed_bytes, link_bytes);
  const double elapsed = static_cast<double>(s.fabric.now() - from);
  EXPECT_LE(w.departed_bytes * 8.0, 10e9 * elapsed * 1e-9);
  // Two senders at line rate: the queue grows and drains again. Their send windows (on by
  // default, lib/rdma/send_window.hpp) bound it at about half a message (263 kB); without them
  // it grew to about one message.
  EXPECT_GT(w.queue_max_bytes, 200'000u);
  EXPECT_GT(w.mean_queue_bytes(s.fabric.now()), 0.1 * static_cast<double>(w.queue_max_bytes));
  EXPECT_LT(w.mean_queue_bytes(s.fabric.now()), 0.6 * static_cast<double>(w.queue_max_bytes));
  EXPECT_EQ(s.fabric.egress(0).occupancy_bytes(), 0u);
}

TEST(SimFabric, FramesForAnUnknownAddressAreCountedUnroutable) {
  SimFabric fabric{3};
  rdma::EngineConfig cfg;
  cfg.path.resolve_mac = [](const rdma::IpAddress&) -> std::optional<MacAddr> { return MacAddr{2, 0, 0, 0, 0, 9}; };
  const std::size_t a = fabric.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
  const std::size_t b = fabric.add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
  // a's peer is an engine outside the fabric, at an address no port has.
  rdma::EngineConfig away = cfg;
  away.path.local.ip = rdma::IpAddress::ipv4({10, 0, 0, 99});
  rdma::MrTable away_mrs;
  rdma::Engine ghost(away, away_mrs);
  QpOptions o;
  Endpoint ea = make_endpoint(fabric.host(a), o);
  Endpoint eg = make_endpoint(ghost, o);
  bring_up(ea, eg, o, o.sq_psn, o.rq_psn);
  std::vector<std::byte> buf(64);
  auto* mr = reg(fabric.host(a), ea.pd, buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge g = sge(buf.data(), 64, mr);
  ASSERT_EQ(post(ea, IBV_WR_SEND, 1, &g, 1), 0);
  fabric.run_to(100 * kMicro);
  EXPECT_EQ(fabric.unroutable(), 1u);
  EXPECT_EQ(fabric.egress(a).counters().enqueued + fabric.egress(b).counters().enqueued, 0u);
}

TEST(SimFabric, RefusesAPortWhoseQueueParametersAreUnusable) {
  SimFabric fabric{3};
  cc::CpParams bad;
  bad.red = {200'000, 5'000, 0.01};
  EXPECT_THROW(fabric.add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, {}, {}, bad), std::invalid_argument);
}

}  // namespace
}  // namespace roce::test
