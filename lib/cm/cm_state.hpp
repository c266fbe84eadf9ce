// The states of one communication ID (IBA 12.9 figures 140-144; Linux's enum ib_cm_state),
// and which moves between them the CM makes. CommunicationManager changes a connection's
// state in one place, which checks every move against this table.
#pragma once

#include <cstdint>
#include <string>

namespace roce::cm {

enum class CmState : std::uint8_t {
  Idle,          // no exchange (an ID about to be freed)
  ReqSent,       // active: REQ out, waiting for REP/MRA/REJ
  MraReqRcvd,    // active: the passive side asked for more time for the REQ
  ReqRcvd,       // passive: REQ delivered, waiting for the consumer to accept or reject
  MraReqSent,    // passive: MRA sent for the REQ (the consumer is still deciding)
  RepSent,       // passive: REP out, waiting for RTU
  MraRepRcvd,    // passive: the active side asked for more time for the REP
  RepRcvd,       // active: REP delivered, waiting for the consumer's RTU
  MraRepSent,    // active: MRA sent for the REP
  Established,
  DreqSent,      // DREQ out, waiting for DREP
  DreqRcvd,      // DREQ received, DREP not yet sent
  Timewait,      // the connection is over; its IDs and QPN stay reserved for a while
  SidrReqSent,   // active SIDR: SIDR_REQ out, waiting for SIDR_REP
  SidrReqRcvd,   // passive SIDR: waiting for the consumer's answer
  Count,
};

std::string to_string(CmState s);

// The moves the CM makes (from -> to); anything else is a bug.
bool transition_allowed(CmState from, CmState to);

// States that hold passive-side resources before the connection is established (the cap on
// half-open connections counts these).
constexpr bool is_half_open(CmState s) {
  return s == CmState::ReqRcvd || s == CmState::MraReqSent || s == CmState::RepSent || s == CmState::MraRepRcvd ||
         s == CmState::SidrReqRcvd;
}

}  // namespace roce::cm
