// Two dataplanes joined by a net_ring pair (10.0.0.1 and 10.0.0.2, or with IPv6 fd00::1 and
// fd00::2, neighbours found by NDP), polled by one thread, and a
// loopback TCP listener for the out-of-band exchange: the set-up of the tests that run a
// perftest client against a server in one process. TearDown checks no mbuf leaked.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "client/tcp.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"

namespace roce::test {

class DataplanePairTest : public ::testing::Test {
 protected:
  // `tag`: a short name for the rings and pools, unique per test program.
  explicit DataplanePairTest(std::string tag, proto::IpVersion family = proto::IpVersion::V4)
      : tag_(std::move(tag)), family_(family) {}

  // The client's (host 1) and the server's (host 2) address in the fixture's family.
  rdma::IpAddress host_ip(std::uint8_t host) const {
    if (family_ == proto::IpVersion::V4) return rdma::IpAddress::ipv4({10, 0, 0, host});
    return rdma::IpAddress::ipv6({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, host});
  }

  void SetUp() override {
    static int n = 0;
    const std::string sfx = std::to_string(n++);
    auto pair = dp::make_ring_pair(tag_ + "_a" + sfx, tag_ + "_b" + sfx);
    ASSERT_TRUE(pair.ok());
    client_dp_ = make_dp(tag_ + "a" + sfx, pair->a, host_ip(1));
    server_dp_ = make_dp(tag_ + "b" + sfx, pair->b, host_ip(2));
    ASSERT_TRUE(client_dp_ && server_dp_);
    client_dp_->set_driven_by_other_thread(true);
    server_dp_->set_driven_by_other_thread(true);
    poller_ = std::thread([this] {
      while (!stop_poller_) {
        client_dp_->poll_once();
        server_dp_->poll_once();
      }
    });
    auto l = client::TcpListener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l.ok());
    listener_ = std::make_unique<client::TcpListener>(std::move(*l));
  }

  void TearDown() override {
    stop_poller_ = true;
    if (poller_.joinable()) poller_.join();
    if (!client_dp_ || !server_dp_) return;
    // Every mbuf back in its pool once the last frames have settled: nothing leaked on any path.
    for (int i = 0; i < 2000; ++i)
      for (dp::Dataplane* d : {client_dp_.get(), server_dp_.get()}) d->poll_once();
    for (dp::Dataplane* d : {client_dp_.get(), server_dp_.get()}) d->flush();
    for (int i = 0; i < 500; ++i)
      for (dp::Dataplane* d : {client_dp_.get(), server_dp_.get()}) d->poll_once();
    for (dp::Dataplane* d : {client_dp_.get(), server_dp_.get()}) {
      for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
      EXPECT_EQ(d->mbufs_in_use(), 0u) << "mbufs leaked by " << d->name();
    }
  }

  std::unique_ptr<dp::Dataplane> make_dp(const std::string& name, std::uint16_t port, const rdma::IpAddress& ip) {
    dp::DataplaneOptions o;
    o.name = name;
    o.port.name = std::to_string(port);
    o.ip = ip;
    o.mbufs = 8191;
    o.engine.max_inline = 912;  // perftest's largest -I, as roce-gen configures its engine
    auto d = dp::Dataplane::create(o);
    EXPECT_TRUE(d.ok()) << d.error().message;
    return d.ok() ? std::move(*d) : nullptr;
  }

  std::string tag_;
  proto::IpVersion family_;
  std::unique_ptr<dp::Dataplane> client_dp_, server_dp_;
  std::thread poller_;
  std::atomic<bool> stop_poller_{false};
  std::unique_ptr<client::TcpListener> listener_;
};

}  // namespace roce::test
