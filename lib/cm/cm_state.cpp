#include "lib/cm/cm_state.hpp"

#include <array>

namespace roce::cm {

namespace {

constexpr std::size_t kStates = static_cast<std::size_t>(CmState::Count);
using Row = std::array<bool, kStates>;

constexpr std::array<Row, kStates> build_table() {
  std::array<Row, kStates> t{};
  auto allow = [&t](CmState from, std::initializer_list<CmState> tos) {
    for (CmState to : tos) t[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)] = true;
  };
  using S = CmState;
  allow(S::Idle, {S::ReqSent, S::ReqRcvd, S::SidrReqSent, S::SidrReqRcvd});
  allow(S::ReqSent, {S::MraReqRcvd, S::RepRcvd, S::Idle, S::Timewait});
  allow(S::MraReqRcvd, {S::RepRcvd, S::Idle, S::Timewait});
  allow(S::ReqRcvd, {S::MraReqSent, S::RepSent, S::Idle, S::Timewait});
  allow(S::MraReqSent, {S::RepSent, S::Idle, S::Timewait});
  allow(S::RepSent, {S::MraRepRcvd, S::Established, S::DreqRcvd, S::Idle, S::Timewait});
  allow(S::MraRepRcvd, {S::Established, S::DreqRcvd, S::Idle, S::Timewait});
  allow(S::RepRcvd, {S::MraRepSent, S::Established, S::Idle, S::Timewait});
  allow(S::MraRepSent, {S::Established, S::Idle, S::Timewait});
  allow(S::Established, {S::DreqSent, S::DreqRcvd, S::Timewait});
  allow(S::DreqSent, {S::DreqRcvd, S::Timewait});
  allow(S::DreqRcvd, {S::Timewait});
  allow(S::Timewait, {S::Idle});
  allow(S::SidrReqSent, {S::Idle});
  allow(S::SidrReqRcvd, {S::Idle});
  return t;
}

constexpr auto kTable = build_table();

}  // namespace

bool transition_allowed(CmState from, CmState to) {
  if (from >= CmState::Count || to >= CmState::Count) return false;
  return kTable[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
}

std::string to_string(CmState s) {
  switch (s) {
    case CmState::Idle: return "IDLE";
    case CmState::ReqSent: return "REQ_SENT";
    case CmState::MraReqRcvd: return "MRA_REQ_RCVD";
    case CmState::ReqRcvd: return "REQ_RCVD";
    case CmState::MraReqSent: return "MRA_REQ_SENT";
    case CmState::RepSent: return "REP_SENT";
    case CmState::MraRepRcvd: return "MRA_REP_RCVD";
    case CmState::RepRcvd: return "REP_RCVD";
    case CmState::MraRepSent: return "MRA_REP_SENT";
    case CmState::Established: return "ESTABLISHED";
    case CmState::DreqSent: return "DREQ_SENT";
    case CmState::DreqRcvd: return "DREQ_RCVD";
    case CmState::Timewait: return "TIMEWAIT";
    case CmState::SidrReqSent: return "SIDR_REQ_SENT";
    case CmState::SidrReqRcvd: return "SIDR_REQ_RCVD";
    case CmState::Count: break;
  }
  return "UNKNOWN";
}

}  // namespace roce::cm
