// The states a request walks through in the responder, as Linux rxe's responder walks them:
// check the PSN, the opcode sequence, whether the QP allows the operation, the resources it
// takes, its lengths and its R_Key; then execute and acknowledge. Each check is a decision of
// (the responder's state, the packet) that names the next state without changing anything; an
// error is a state too, and what an error does on RC, UC and UD is a row of the policy table
// (error_policy): the one place where the three transports differ.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string_view>

#include "lib/rdma/counters.hpp"
#include "protocol/aeth.hpp"
#include "protocol/opcode.hpp"

namespace roce::rdma {

enum class RespState : std::uint8_t {
  // Checks: read state, change nothing.
  CheckPsn,
  CheckOpSeq,
  CheckOpValid,
  CheckResource,
  CheckLength,
  CheckRkey,  // also translates where the payload goes (a WRITE's region, a SEND's receive)
  // Acting: from here on the packet changes state, so its ICRC is known to hold first.
  Execute,
  Acknowledge,
  Duplicate,
  Done,
  // Errors: what each does is error_policy(transport, state).
  ErrCorrupted,          // the deferred ICRC failed: as if the packet never came
  ErrBusy,               // no room for the answer in the response queue
  ErrPsnOutOfSeq,        // a PSN ahead of the expected one (a packet was lost)
  ErrMissingFirst,       // MIDDLE/LAST with no message open
  ErrMissingLast,        // a new message (or one of another kind) while one is open
  ErrUnsupportedOpcode,  // an operation the QP does not allow (access flags, transport)
  ErrQkeyViolation,      // UD: the DETH Q_Key is not the QP's
  ErrTooManyRdAtomic,    // more READ/atomic answers outstanding than max_dest_rd_atomic
  ErrRnr,                // a SEND or WRITE with immediate and no receive posted
  ErrLength,             // payload against the path MTU, the RETH length or the open WRITE
  ErrMalformedWqe,       // the receive's scatter list failed its lkey check when posted
  ErrRecvTooSmall,       // the message does not fit the posted receive
  ErrMisalignedAtomic,   // atomic VA not 8-byte aligned
  ErrRkeyViolation,      // R_Key, protection domain, bounds or region access
  ErrInvalidateRkey,     // SEND with invalidate naming a key that cannot be invalidated
  Count,
};
inline constexpr std::size_t kRespStateCount = static_cast<std::size_t>(RespState::Count);

std::string_view to_string(RespState s);

constexpr bool is_check(RespState s) { return s < RespState::Execute; }
constexpr bool is_error(RespState s) { return s >= RespState::ErrCorrupted && s < RespState::Count; }

enum class ErrorAction : std::uint8_t {
  Drop,         // discard the packet, answer nothing
  DropMessage,  // UC: discard it and the rest of its message, up to the next FIRST/ONLY
  AbandonOpen,  // UC: the open message never got its end: drop it and take this packet anew
  NakSequence,  // RC class B: one NAK PSN sequence error for the expected PSN, then silence
  NakRnr,       // RC class B: RNR NAK; the retried request finds the same state
  NakFatal,     // RC class C (and A): NAK, and the QP enters ERR
  Complete,     // UD: the receive completes with the error status; the datagram is consumed
};

struct ErrorPolicy {
  ErrorAction action = ErrorAction::Drop;
  proto::NakCode nak = proto::NakCode::InvalidRequest;  // NakFatal
  Counter counter = Counter::Count;                      // counted every time (Count: none)
  ibv_wc_status recv_status = IBV_WC_SUCCESS;            // the receive being filled completes so (SUCCESS: no)
};

// What `error` does on a QP of `type`.
const ErrorPolicy& error_policy(ibv_qp_type type, RespState error);

// ---- pure decisions ------------------------------------------------------------------------

enum class RequestPsnClass : std::uint8_t { Expected, Duplicate, Ahead };
RequestPsnClass classify_request_psn(std::uint32_t psn, std::uint32_t expected);
std::string_view to_string(RequestPsnClass c);

// The message a responder has open: the MIDDLE/LAST packets it takes next.
enum class OpenMessage : std::uint8_t { None, Send, Write };
std::string_view to_string(OpenMessage m);

// Whether the packet fits the open message (RC and UC alike; UD has no multi-packet messages).
RespState check_op_seq(OpenMessage open, const proto::OpcodeInfo& info);

// Whether the QP allows the operation: its transport and access flags (IBV_ACCESS_REMOTE_*).
RespState check_op_valid(ibv_qp_type type, int access, const proto::OpcodeInfo& info);

// The payload against the path MTU: FIRST and MIDDLE carry exactly one, LAST 1..PMTU, ONLY
// up to one.
// Inline with fits_write: both run on every request (docs/perf-changes.md section 36).
inline bool fits_pmtu(const proto::OpcodeInfo& info, std::uint32_t payload, std::uint32_t pmtu) {
  switch (info.position) {
    case proto::Position::First:
    case proto::Position::Middle: return payload == pmtu;
    case proto::Position::Last: return payload >= 1 && payload <= pmtu;
    case proto::Position::Only: return payload <= pmtu;
  }
  return false;
}

// A WRITE packet against its message: the RETH length for FIRST/ONLY (ONLY carries all of it,
// no message exceeds 2^31 bytes), or what is left of the open WRITE for MIDDLE/LAST (LAST
// carries all of the rest).
inline constexpr std::uint32_t kMaxMessageBytes = 1u << 31;  // IBA: 2^31 bytes per message
inline bool fits_write(const proto::OpcodeInfo& info, std::uint32_t payload, std::uint64_t reth_length,
                       std::uint32_t remaining) {
  if (info.starts_message())
    return reth_length <= kMaxMessageBytes && payload <= reth_length &&
           (info.position != proto::Position::Only || payload == reth_length);
  return payload <= remaining && (!info.ends_message() || payload == remaining);
}

}  // namespace roce::rdma
