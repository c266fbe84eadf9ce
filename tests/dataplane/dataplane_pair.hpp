// Two dataplanes a (10.0.0.1) and b (10.0.0.2) over a net_ring pair in one process, stepped
// by hand from the test thread, with ARP resolved both ways and an mbuf leak check.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"

namespace roce::test {

struct PairOptions {
  dp::Mode mode = dp::Mode::RunToCompletion;
  unsigned workers = 1;
  rdma::EngineConfig engine{};
  Nanos stats_interval_ns = 10 * kMilli;
  Nanos tx_flush_ns = 20 * kMicro;
  // Both dataplanes on one mbuf pool (DataplaneOptions::pool), which the pair frees after them:
  // each receives the other's frames in mbufs of its own pool (Worker::recycle).
  bool shared_pool = false;
  bool group_qp_runs = true;  // DataplaneOptions::group_qp_runs of both
};

class DataplanePair {
 public:
  // Names its ports and dataplanes after `tag` and a counter (ring and pool names must be new
  // in the process, also under --gtest_repeat); nullptr after a failure reported to gtest.
  static std::unique_ptr<DataplanePair> create(const std::string& base, const PairOptions& o) {
    static int serial = 0;
    const std::string tag = base + std::to_string(serial++);
    std::unique_ptr<DataplanePair> p(new DataplanePair());
    auto pair = dp::make_ring_pair("ring" + tag + "a", "ring" + tag + "b");
    if (!pair.ok()) {
      ADD_FAILURE() << pair.error().message;
      return nullptr;
    }
    p->ports = *pair;
    if (o.shared_pool) {
      p->pool = rte_pktmbuf_pool_create(("ring" + tag + "p").c_str(), 2 * 4095 + 1, 256, 0,
                                        dp::DataplaneOptions{}.mbuf_data_room, SOCKET_ID_ANY);
      if (p->pool == nullptr) {
        ADD_FAILURE() << "cannot create the shared pool";
        return nullptr;
      }
    }
    p->a = make(tag + "a", p->ports.a, {10, 0, 0, 1}, {2, 0, 0, 0, 0, 1}, o, p->pool);
    p->b = make(tag + "b", p->ports.b, {10, 0, 0, 2}, {2, 0, 0, 0, 0, 2}, o, p->pool);
    if (!p->a || !p->b) return nullptr;
    p->a->worker(0).request_arp({10, 0, 0, 2});
    p->b->worker(0).request_arp({10, 0, 0, 1});
    if (!p->step_until([&] { return p->a->arp().lookup({10, 0, 0, 2}) && p->b->arp().lookup({10, 0, 0, 1}); })) {
      ADD_FAILURE() << "ARP over the ring pair did not resolve";
      return nullptr;
    }
    return p;
  }

  // Polls both dataplanes until `done`, `max_rounds` polls or 30 s of wall time.
  bool step_until(const std::function<bool()>& done, long max_rounds = 50'000'000) {
    const Nanos limit = a->now() + 30 * kSecond;
    for (long i = 0; i < max_rounds && a->now() < limit; ++i) {
      if (done()) return true;
      a->poll_once();
      b->poll_once();
    }
    return done();
  }

  // Lets the last frames settle, returns the stashed mbufs and expects every mbuf of both
  // pools back: nothing leaked on any path.
  void expect_no_mbuf_leak() {
    step_until([] { return false; }, 2000);
    for (dp::Dataplane* d : {a.get(), b.get()}) d->flush();
    step_until([] { return false; }, 500);
    for (dp::Dataplane* d : {a.get(), b.get()})  // all of them first: a shared pool counts both
      for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
    for (dp::Dataplane* d : {a.get(), b.get()}) EXPECT_EQ(d->mbufs_in_use(), 0u) << "mbufs leaked by " << d->name();
  }

  ~DataplanePair() {
    a.reset();
    b.reset();
    rte_mempool_free(pool);
  }

  dp::RingPair ports;
  rte_mempool* pool = nullptr;  // PairOptions::shared_pool: both dataplanes'
  std::unique_ptr<dp::Dataplane> a, b;

 private:
  DataplanePair() = default;
  static std::unique_ptr<dp::Dataplane> make(const std::string& name, std::uint16_t port, proto::Ipv4Addr ip,
                                             proto::MacAddr mac, const PairOptions& po, rte_mempool* pool) {
    dp::DataplaneOptions o;
    o.pool = pool;
    o.name = name;
    o.port.name = std::to_string(port);
    o.ip = rdma::IpAddress::ipv4(ip);
    o.mac = mac;
    o.mode = po.mode;
    o.workers = po.workers;
    o.mbufs = 4095;
    o.engine = po.engine;
    o.stats_interval_ns = po.stats_interval_ns;
    o.tx_flush_ns = po.tx_flush_ns;
    o.group_qp_runs = po.group_qp_runs;
    auto d = dp::Dataplane::create(o);
    if (!d.ok()) {
      ADD_FAILURE() << d.error().message;
      return nullptr;
    }
    return std::move(*d);
  }
};

}  // namespace roce::test
