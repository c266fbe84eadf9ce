// roce-gen pingpong: ibv_rc_pingpong's client, timing each SEND round trip.
#pragma once

#include <functional>

#include "client/connector.hpp"
#include "client/traffic/results.hpp"

namespace roce::client {

struct PingpongRun {
  LatFigures lat;
  RunCounters counters;
};

// `progress` gets a line each second of the run (round trips so far) when set.
Result<PingpongRun> run_pingpong_client(dp::Dataplane& dp, const std::string& server, std::uint16_t port,
                                        const TrafficSpec& spec, const QpParams& qp,
                                        const std::function<void(const std::string&)>& progress = {});

}  // namespace roce::client
