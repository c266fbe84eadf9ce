// Both ends of one TCP connection over loopback, for exchange tests.
#pragma once

#include <gtest/gtest.h>

#include <thread>

#include "client/tcp.hpp"

namespace roce::test {

struct LoopbackPair {
  client::TcpStream client, server;
  LoopbackPair() {
    auto l = client::TcpListener::listen("127.0.0.1", 0);
    EXPECT_TRUE(l.ok());
    std::thread t([&] {
      auto c = client::TcpStream::connect("127.0.0.1", l->port(), 2000);
      EXPECT_TRUE(c.ok());
      client = std::move(*c);
    });
    auto s = l->accept(5000);
    t.join();
    EXPECT_TRUE(s.ok());
    server = std::move(*s);
  }
};

}  // namespace roce::test
