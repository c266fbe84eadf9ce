// roce-gen pingpong: ibv_rc_pingpong's client, timing each SEND round trip.
#pragma once

#include "apps/common/connector.hpp"
#include "apps/common/traffic/results.hpp"

namespace roce::app {

struct PingpongRun {
  LatFigures lat;
  RunCounters counters;
};

Result<PingpongRun> run_pingpong_client(dp::Dataplane& dp, const std::string& server, std::uint16_t port,
                                        const TrafficSpec& spec, const QpParams& qp);

}  // namespace roce::app
