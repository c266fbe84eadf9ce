// A scenario read off a real capture, so we can stand in for its responder: for every QP the
// capture's requests go to on the responder host, a responder QP with that QPN, the first
// request's PSN as expected PSN, the peer QPN the real responder answered, the path MTU the
// packets show, a memory region per R_Key covering every RETH/AtomicETH range with the bytes the
// real responder's READ responses and atomic ACKs revealed, and enough receives for the
// SENDs. The expectation is what the real responder sent to those QPs (docs/replay.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/replay/frames.hpp"
#include "apps/replay/scenario.hpp"

namespace roce::replay {

struct DeriveOptions {
  std::optional<IpAddress> responder_ip;  // default: the destination of the first RC request
};

struct Derived {
  Scenario scenario;
  std::vector<Frame> expected;     // the real responder's responses to the requests we replay
  std::vector<std::string> notes;  // one line per QP and per choice made
};

Result<Derived> derive_scenario(const std::vector<Frame>& capture, const DeriveOptions& o, const std::string& source);

}  // namespace roce::replay
