#include "lib/rdma/responder_checks.hpp"

#include <array>

#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

using A = ErrorAction;
using S = RespState;
using C = Counter;

struct PolicyRow {
  S state;
  ErrorPolicy rc, uc, ud;
};

// What each error does per transport (IBA 9.9: class B answers and carries on, class C answers
// and fails the QP; UC and UD answer nothing: a broken UC message is dropped up to its next
// FIRST/ONLY, a UD datagram on its own). Rows follow rxe's error states.
constexpr ErrorPolicy kDrop{A::Drop, NakCode::InvalidRequest, C::Count, IBV_WC_SUCCESS};
constexpr ErrorPolicy nak(NakCode code, C c, ibv_wc_status recv = IBV_WC_SUCCESS) { return {A::NakFatal, code, c, recv}; }
constexpr ErrorPolicy drop_message(C c, ibv_wc_status recv = IBV_WC_SUCCESS) {
  return {A::DropMessage, NakCode::InvalidRequest, c, recv};
}
constexpr ErrorPolicy drop(C c) { return {A::Drop, NakCode::InvalidRequest, c, IBV_WC_SUCCESS}; }
constexpr ErrorPolicy complete(ibv_wc_status recv) { return {A::Complete, NakCode::InvalidRequest, C::Count, recv}; }

constexpr PolicyRow kPolicy[] = {
    // state                  RC                                                        UC                                          UD
    {S::ErrCorrupted, kDrop, kDrop, kDrop},  // counted by the engine as icrc_bad
    {S::ErrBusy, drop(C::ResponderBusyDrops), kDrop, kDrop},
    {S::ErrPsnOutOfSeq, {A::NakSequence, NakCode::PsnSequenceError, C::OutOfSeqRequest, IBV_WC_SUCCESS},
     drop_message(C::OpcodeSequenceErrors), kDrop},
    {S::ErrMissingFirst, nak(NakCode::InvalidRequest, C::OpcodeSequenceErrors), drop_message(C::OpcodeSequenceErrors),
     drop(C::OpcodeSequenceErrors)},
    {S::ErrMissingLast, nak(NakCode::InvalidRequest, C::OpcodeSequenceErrors),
     {A::AbandonOpen, NakCode::InvalidRequest, C::UcMessagesDropped, IBV_WC_SUCCESS}, drop(C::OpcodeSequenceErrors)},
    {S::ErrUnsupportedOpcode, nak(NakCode::InvalidRequest, C::InvalidRequests), drop_message(C::RemoteAccessErrors),
     kDrop},  // UD: unreachable, the engine drops other transports' opcodes
    {S::ErrQkeyViolation, kDrop, kDrop, drop(C::QkeyViolations)},
    {S::ErrTooManyRdAtomic, nak(NakCode::InvalidRequest, C::InvalidRequests), kDrop, kDrop},
    // RC's RNR NAK is counted as send_rnr_err where it is queued.
    {S::ErrRnr, {A::NakRnr, NakCode::InvalidRequest, C::Count, IBV_WC_SUCCESS}, drop_message(C::UdNoReceiveDrops),
     drop(C::UdNoReceiveDrops)},
    // UC's DropMessage counts the lost message as uc_messages_dropped itself.
    {S::ErrLength, nak(NakCode::InvalidRequest, C::InvalidRequests), drop_message(C::Count), drop(C::UdNoReceiveDrops)},
    {S::ErrMalformedWqe, nak(NakCode::RemoteOperationalError, C::RemoteOperationalErrors, IBV_WC_LOC_PROT_ERR),
     drop_message(C::Count, IBV_WC_LOC_PROT_ERR), complete(IBV_WC_LOC_PROT_ERR)},
    {S::ErrRecvTooSmall, nak(NakCode::InvalidRequest, C::InvalidRequests, IBV_WC_LOC_LEN_ERR),
     drop_message(C::Count, IBV_WC_LOC_LEN_ERR), complete(IBV_WC_LOC_LEN_ERR)},
    {S::ErrMisalignedAtomic, nak(NakCode::InvalidRequest, C::InvalidRequests), kDrop, kDrop},
    {S::ErrRkeyViolation, nak(NakCode::RemoteAccessError, C::RemoteAccessErrors), drop_message(C::RemoteAccessErrors),
     kDrop},
    {S::ErrInvalidateRkey, nak(NakCode::InvalidRequest, C::InvalidRequests, IBV_WC_REM_INV_REQ_ERR), kDrop, kDrop},
};

constexpr std::size_t kFirstError = static_cast<std::size_t>(S::ErrCorrupted);
static_assert(std::size(kPolicy) == kRespStateCount - kFirstError, "one policy row per error state");

constexpr bool rows_in_state_order() {
  for (std::size_t i = 0; i < std::size(kPolicy); ++i)
    if (static_cast<std::size_t>(kPolicy[i].state) != kFirstError + i) return false;
  return true;
}
static_assert(rows_in_state_order(), "policy rows follow RespState");

constexpr std::array<std::string_view, kRespStateCount> kStateNames{
    "CHK_PSN",          "CHK_OP_SEQ",         "CHK_OP_VALID",          "CHK_RESOURCE",        "CHK_LENGTH",
    "CHK_RKEY",         "EXECUTE",            "ACKNOWLEDGE",           "DUPLICATE_REQUEST",   "DONE",
    "ERR_CORRUPTED",    "ERR_BUSY",           "ERR_PSN_OUT_OF_SEQ",    "ERR_MISSING_OPCODE_FIRST",
    "ERR_MISSING_OPCODE_LAST",                "ERR_UNSUPPORTED_OPCODE", "ERR_QKEY_VIOLATION",
    "ERR_TOO_MANY_RDMA_ATM_REQ",              "ERR_RNR",               "ERR_LENGTH",          "ERR_MALFORMED_WQE",
    "ERR_RECV_TOO_SMALL", "ERR_MISALIGNED_ATOMIC", "ERR_RKEY_VIOLATION", "ERR_INVALIDATE_RKEY",
};

OpenMessage message_of(const OpcodeInfo& info) {
  switch (info.operation) {
    case Operation::Send: return OpenMessage::Send;
    case Operation::Write: return OpenMessage::Write;
    default: return OpenMessage::None;
  }
}

}  // namespace

std::string_view to_string(RespState s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kStateNames.size() ? kStateNames[i] : "unknown";
}

const ErrorPolicy& error_policy(ibv_qp_type type, RespState error) {
  const PolicyRow& row = kPolicy[static_cast<std::size_t>(error) - kFirstError];
  switch (type) {
    case IBV_QPT_UC: return row.uc;
    case IBV_QPT_UD: return row.ud;
    default: return row.rc;
  }
}

RequestPsnClass classify_request_psn(std::uint32_t psn, std::uint32_t expected) {
  const std::int32_t d = psn_diff(psn, expected);
  if (d == 0) return RequestPsnClass::Expected;
  return d < 0 ? RequestPsnClass::Duplicate : RequestPsnClass::Ahead;
}

RespState check_op_seq(OpenMessage open, const OpcodeInfo& info) {
  if (open == OpenMessage::None) return info.starts_message() ? RespState::CheckOpValid : RespState::ErrMissingFirst;
  if (info.starts_message() || message_of(info) != open) return RespState::ErrMissingLast;
  return RespState::CheckOpValid;
}

RespState check_op_valid(ibv_qp_type type, int access, const OpcodeInfo& info) {
  const auto allows = [access](int flag) { return (access & flag) != 0; };
  switch (type) {
    case IBV_QPT_RC:
      if (info.transport != Transport::Rc) break;
      switch (info.operation) {
        case Operation::Send: return RespState::CheckResource;
        case Operation::Write: return allows(IBV_ACCESS_REMOTE_WRITE) ? RespState::CheckResource : RespState::ErrUnsupportedOpcode;
        case Operation::ReadRequest:
          return allows(IBV_ACCESS_REMOTE_READ) ? RespState::CheckResource : RespState::ErrUnsupportedOpcode;
        case Operation::CmpSwap:
        case Operation::FetchAdd:
          return allows(IBV_ACCESS_REMOTE_ATOMIC) ? RespState::CheckResource : RespState::ErrUnsupportedOpcode;
        case Operation::AtomicWrite:  // IBA oA19-8 (and rxe): remote write access
          return allows(IBV_ACCESS_REMOTE_WRITE) ? RespState::CheckResource : RespState::ErrUnsupportedOpcode;
        case Operation::Flush: return RespState::CheckResource;  // its FETH against the flags: the responder
        default: break;
      }
      break;
    case IBV_QPT_UC:
      if (info.transport != Transport::Uc) break;
      if (info.operation == Operation::Send) return RespState::CheckResource;
      if (info.operation == Operation::Write && allows(IBV_ACCESS_REMOTE_WRITE)) return RespState::CheckResource;
      break;
    case IBV_QPT_UD:
      if (info.transport == Transport::Ud && info.operation == Operation::Send) return RespState::CheckResource;
      break;
    default: break;
  }
  return RespState::ErrUnsupportedOpcode;
}

std::string_view to_string(RequestPsnClass c) {
  switch (c) {
    case RequestPsnClass::Expected: return "expected";
    case RequestPsnClass::Duplicate: return "duplicate";
    case RequestPsnClass::Ahead: return "ahead";
  }
  return "unknown";
}

std::string_view to_string(OpenMessage m) {
  switch (m) {
    case OpenMessage::None: return "none";
    case OpenMessage::Send: return "send";
    case OpenMessage::Write: return "write";
  }
  return "unknown";
}

}  // namespace roce::rdma
