// A scenario read off a real capture, so we can stand in for its responder: for every QP the
// capture's RC, UC or UD requests go to on the responder host, a responder QP with that QPN and
// transport, the PSN of its first request that starts a message as expected PSN (packets before
// it, the tail of a message the capture joined halfway, are left out), the peer QPN the real
// responder answered, the path MTU the packets show, a memory region per R_Key covering every
// RETH/AtomicETH range with the bytes the real responder's READ responses and atomic ACKs
// revealed, and enough receives for the SENDs. The expectation is what the real responder sent
// to those QPs, with its MSNs taken relative to where the capture joined (a capture that starts
// mid-connection); for UC and UD, which send nothing back, the receive completions. Request
// PSNs the capture lacks although the real responder acknowledged past them are reported as
// the sniffer's gaps, which explain the differences they cause (docs/replay.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/replay/compare.hpp"
#include "apps/replay/frames.hpp"
#include "apps/replay/scenario.hpp"

namespace roce::replay {

struct DeriveOptions {
  std::optional<rdma::IpAddress> responder_ip;  // default: the destination of the first RC request
};

struct Derived {
  Scenario scenario;
  std::vector<Frame> expected;     // the real responder's responses to the requests we replay
  std::vector<std::string> notes;  // one line per QP and per choice made
  std::vector<std::uint64_t> skipped_frames;  // not fed: requests before their QP's first message start
  std::vector<CaptureGap> gaps;
};

// The capture without the frames `skipped` names (frame indices, sorted).
std::vector<Frame> without_frames(const std::vector<Frame>& capture, const std::vector<std::uint64_t>& skipped);

Result<Derived> derive_scenario(const std::vector<Frame>& capture, const DeriveOptions& o, const std::string& source);

}  // namespace roce::replay
