// roce-gen ud-pingpong: ibv_ud_pingpong's client. The same 52-byte record exchange as the RC
// pingpong, then one UD datagram out and one back per iteration (Q_Key 0x11111111, the
// receive buffer 40 bytes larger for the GRH the receiver writes in front of the payload).
#pragma once

#include "client/connector.hpp"
#include "client/traffic/results.hpp"

namespace roce::client {

struct UdPingpongRun {
  LatFigures lat;
  RunCounters counters;
  std::uint64_t payload_mismatches = 0;  // echoes whose payload differs from what we sent
};

Result<UdPingpongRun> run_ud_pingpong_client(dp::Dataplane& dp, const std::string& server, std::uint16_t port,
                                             const TrafficSpec& spec);

}  // namespace roce::client
