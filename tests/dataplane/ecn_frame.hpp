// A SEND_ONLY frame from 10.0.0.1 to 10.0.0.2 carrying the given ECN codepoint: what the marking
// tests (overrun_test, rx_backlog_test) feed a marker to see which frames it may mark CE.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "protocol/builder.hpp"
#include "protocol/ecn_mark.hpp"

namespace roce::test {

inline std::vector<std::byte> frame_with(proto::Ecn ecn, proto::IpVersion v = proto::IpVersion::V4) {
  using namespace roce::proto;
  FrameSpec s;
  s.eth.src = {2, 0, 0, 0, 0, 1};
  s.eth.dst = {2, 0, 0, 0, 0, 2};
  s.ip_version = v;
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.set_ecn(ecn);
  s.bth.opcode = raw(Opcode::RcSendOnly);
  s.bth.dest_qp.set(0x11);
  std::vector<std::byte> out(512);
  const std::vector<std::byte> payload(64, std::byte{0x5a});
  const auto l = build_frame(s, payload, out, CrcBackend::Isal);
  EXPECT_TRUE(l.ok());
  out.resize(l.length);
  return out;
}

}  // namespace roce::test
