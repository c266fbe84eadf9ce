// The responder's decisions on their own: each check is a pure function of (state, packet), and
// the error policy table is what makes RC, UC and UD differ.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lib/rdma/payload.hpp"
#include "lib/rdma/responder_checks.hpp"

namespace roce {
namespace {

using namespace roce::proto;

const OpcodeInfo& op(Opcode o) { return opcode_info(raw(o)); }

TEST(ResponderChecks, RequestPsnIsExpectedDuplicateOrAheadAcrossTheWrap) {
  EXPECT_EQ(classify_request_psn(0x10, 0x10), RequestPsnClass::Expected);
  EXPECT_EQ(classify_request_psn(0x0F, 0x10), RequestPsnClass::Duplicate);
  EXPECT_EQ(classify_request_psn(0x11, 0x10), RequestPsnClass::Ahead);
  EXPECT_EQ(classify_request_psn(0xFFFFFF, 0x000001), RequestPsnClass::Duplicate);
  EXPECT_EQ(classify_request_psn(0x000001, 0xFFFFFF), RequestPsnClass::Ahead);
  // Half the PSN space behind counts as a duplicate (IBA 9.7.5.1.1).
  EXPECT_EQ(classify_request_psn((0x1000 - (1u << 22)) & 0xFFFFFF, 0x1000), RequestPsnClass::Duplicate);
}

TEST(ResponderChecks, OpcodeSequenceTakesContinuationsOnlyOfTheOpenMessage) {
  struct Case {
    OpenMessage open;
    Opcode opcode;
    RespState want;
  };
  const Case cases[] = {
      {OpenMessage::None, Opcode::RcSendFirst, RespState::CheckOpValid},
      {OpenMessage::None, Opcode::RcWriteOnly, RespState::CheckOpValid},
      {OpenMessage::None, Opcode::RcReadRequest, RespState::CheckOpValid},
      {OpenMessage::None, Opcode::RcFetchAdd, RespState::CheckOpValid},
      {OpenMessage::None, Opcode::RcSendMiddle, RespState::ErrMissingFirst},
      {OpenMessage::None, Opcode::RcWriteLast, RespState::ErrMissingFirst},
      {OpenMessage::None, Opcode::UcWriteLastImm, RespState::ErrMissingFirst},
      {OpenMessage::Send, Opcode::RcSendMiddle, RespState::CheckOpValid},
      {OpenMessage::Send, Opcode::RcSendLastInv, RespState::CheckOpValid},
      {OpenMessage::Send, Opcode::RcWriteMiddle, RespState::ErrMissingLast},
      {OpenMessage::Send, Opcode::RcSendOnly, RespState::ErrMissingLast},
      {OpenMessage::Send, Opcode::RcReadRequest, RespState::ErrMissingLast},
      {OpenMessage::Write, Opcode::RcWriteLastImm, RespState::CheckOpValid},
      {OpenMessage::Write, Opcode::RcWriteFirst, RespState::ErrMissingLast},
      {OpenMessage::Write, Opcode::RcSendLast, RespState::ErrMissingLast},
      {OpenMessage::Write, Opcode::UcWriteMiddle, RespState::CheckOpValid},
  };
  for (const Case& c : cases)
    EXPECT_EQ(check_op_seq(c.open, op(c.opcode)), c.want)
        << to_string(c.open) << " + " << op(c.opcode).name << ": " << to_string(check_op_seq(c.open, op(c.opcode)));
}

TEST(ResponderChecks, OperationNeedsTheQpsAccessFlagAndTransport) {
  const int rw = IBV_ACCESS_REMOTE_WRITE, rr = IBV_ACCESS_REMOTE_READ, ra = IBV_ACCESS_REMOTE_ATOMIC;
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, 0, op(Opcode::RcSendOnly)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rw, op(Opcode::RcWriteMiddle)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rr | ra, op(Opcode::RcWriteMiddle)), RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rr, op(Opcode::RcReadRequest)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rw, op(Opcode::RcReadRequest)), RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, ra, op(Opcode::RcCmpSwap)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rw | rr, op(Opcode::RcFetchAdd)), RespState::ErrUnsupportedOpcode);
  // ATOMIC_WRITE needs remote write (as rxe); FLUSH's FETH is checked against the QP's flush
  // flags by the responder (placement_test.cpp), so the opcode alone passes here.
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rw, op(Opcode::RcAtomicWrite)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rr | ra, op(Opcode::RcAtomicWrite)), RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, 0, op(Opcode::RcFlush)), RespState::CheckResource);
  // Another transport's opcode is never valid (the engine drops it before: wrong_transport).
  EXPECT_EQ(check_op_valid(IBV_QPT_RC, rw, op(Opcode::UcWriteOnly)), RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(check_op_valid(IBV_QPT_UC, rw, op(Opcode::UcWriteOnly)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_UC, 0, op(Opcode::UcWriteOnly)), RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(check_op_valid(IBV_QPT_UC, 0, op(Opcode::UcSendOnlyImm)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_UD, 0, op(Opcode::UdSendOnly)), RespState::CheckResource);
  EXPECT_EQ(check_op_valid(IBV_QPT_UD, rw, op(Opcode::RcSendOnly)), RespState::ErrUnsupportedOpcode);
}

TEST(ResponderChecks, PayloadAgainstThePathMtuFollowsThePosition) {
  EXPECT_TRUE(fits_pmtu(op(Opcode::RcWriteFirst), 1024, 1024));
  EXPECT_FALSE(fits_pmtu(op(Opcode::RcWriteFirst), 100, 1024));  // a short FIRST: NAK, not a silent drop
  EXPECT_FALSE(fits_pmtu(op(Opcode::RcSendMiddle), 512, 1024));
  EXPECT_FALSE(fits_pmtu(op(Opcode::RcSendMiddle), 2048, 1024));
  EXPECT_TRUE(fits_pmtu(op(Opcode::RcSendLast), 1, 1024));
  EXPECT_FALSE(fits_pmtu(op(Opcode::RcSendLast), 0, 1024));
  EXPECT_FALSE(fits_pmtu(op(Opcode::RcSendLast), 1025, 1024));
  EXPECT_TRUE(fits_pmtu(op(Opcode::RcWriteOnly), 0, 1024));
  EXPECT_FALSE(fits_pmtu(op(Opcode::RcWriteOnly), 4096, 1024));
}

TEST(ResponderChecks, WritePacketsFitTheirRethAndTheOpenMessage) {
  EXPECT_TRUE(fits_write(op(Opcode::RcWriteOnly), 64, 64, 0));
  EXPECT_FALSE(fits_write(op(Opcode::RcWriteOnly), 64, 16, 0));
  EXPECT_FALSE(fits_write(op(Opcode::RcWriteOnly), 16, 64, 0));
  EXPECT_TRUE(fits_write(op(Opcode::RcWriteFirst), 1024, 3000, 0));
  EXPECT_FALSE(fits_write(op(Opcode::RcWriteFirst), 1024, 1000, 0));
  EXPECT_FALSE(fits_write(op(Opcode::RcWriteFirst), 1024, (1ull << 31) + 1, 0));
  EXPECT_TRUE(fits_write(op(Opcode::RcWriteMiddle), 1024, 0, 1976));
  EXPECT_FALSE(fits_write(op(Opcode::RcWriteMiddle), 1024, 0, 1000));
  EXPECT_TRUE(fits_write(op(Opcode::RcWriteLast), 952, 0, 952));
  EXPECT_FALSE(fits_write(op(Opcode::RcWriteLast), 64, 0, 952));  // LAST carries all of the rest
}

TEST(ResponderChecks, EveryStateHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kRespStateCount; ++i) {
    const std::string n{to_string(static_cast<RespState>(i))};
    EXPECT_FALSE(n.empty() || n == "unknown") << i;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), kRespStateCount);
}

TEST(ResponderChecks, UnreliableTransportsNeverAnswer) {
  for (std::size_t i = 0; i < kRespStateCount; ++i) {
    const auto s = static_cast<RespState>(i);
    if (!is_error(s)) continue;
    for (const ibv_qp_type t : {IBV_QPT_UC, IBV_QPT_UD}) {
      const ErrorAction a = error_policy(t, s).action;
      EXPECT_TRUE(a == ErrorAction::Drop || a == ErrorAction::DropMessage || a == ErrorAction::AbandonOpen ||
                  a == ErrorAction::Complete)
          << to_string(s);
    }
  }
}

TEST(ResponderChecks, ReliableConnectionErrorsFollowTheIbaClasses) {
  struct Row {
    RespState s;
    ErrorAction action;
    NakCode code;
  };
  const Row rows[] = {
      {RespState::ErrPsnOutOfSeq, ErrorAction::NakSequence, NakCode::PsnSequenceError},
      {RespState::ErrRnr, ErrorAction::NakRnr, NakCode::InvalidRequest},
      {RespState::ErrMissingFirst, ErrorAction::NakFatal, NakCode::InvalidRequest},
      {RespState::ErrMissingLast, ErrorAction::NakFatal, NakCode::InvalidRequest},
      {RespState::ErrUnsupportedOpcode, ErrorAction::NakFatal, NakCode::InvalidRequest},
      {RespState::ErrTooManyRdAtomic, ErrorAction::NakFatal, NakCode::InvalidRequest},
      {RespState::ErrLength, ErrorAction::NakFatal, NakCode::InvalidRequest},
      {RespState::ErrMisalignedAtomic, ErrorAction::NakFatal, NakCode::InvalidRequest},
      {RespState::ErrRkeyViolation, ErrorAction::NakFatal, NakCode::RemoteAccessError},
      {RespState::ErrMalformedWqe, ErrorAction::NakFatal, NakCode::RemoteOperationalError},
  };
  for (const Row& r : rows) {
    const ErrorPolicy& p = error_policy(IBV_QPT_RC, r.s);
    EXPECT_EQ(p.action, r.action) << to_string(r.s);
    if (r.action == ErrorAction::NakFatal) {
      EXPECT_EQ(p.nak, r.code) << to_string(r.s);
    }
  }
  // A corrupted packet and a full response queue are dropped on every transport.
  for (const ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
    EXPECT_EQ(error_policy(t, RespState::ErrCorrupted).action, ErrorAction::Drop);
    EXPECT_EQ(error_policy(t, RespState::ErrBusy).action, ErrorAction::Drop);
  }
  EXPECT_EQ(error_policy(IBV_QPT_RC, RespState::ErrBusy).counter, Counter::ResponderBusyDrops);
}

TEST(ResponderChecks, OnlyMiddlePacketsOfAReliableConnectionArePlacedAheadOfTheirIcrc) {
  std::byte buf[64];
  PayloadDest contiguous;
  contiguous.dst = buf;
  const PayloadDest scattered;
  Packet p;
  for (const Opcode o : {Opcode::RcWriteMiddle, Opcode::RcSendMiddle, Opcode::RcReadResponseMiddle}) {
    p.info = &op(o);
    EXPECT_TRUE(placement_ahead_allowed(p, true, contiguous)) << op(o).name;
    EXPECT_FALSE(placement_ahead_allowed(p, false, contiguous)) << op(o).name;
    EXPECT_FALSE(placement_ahead_allowed(p, true, scattered)) << op(o).name;
  }
  for (const Opcode o : {Opcode::RcWriteFirst, Opcode::RcWriteLast, Opcode::RcWriteOnly, Opcode::RcSendLast,
                         Opcode::RcSendOnly, Opcode::RcSendLastInv, Opcode::RcReadResponseFirst,
                         Opcode::RcReadResponseLast, Opcode::RcReadResponseOnly, Opcode::RcWriteLastImm}) {
    p.info = &op(o);
    EXPECT_FALSE(placement_ahead_allowed(p, true, contiguous)) << op(o).name;
  }
}

}  // namespace
}  // namespace roce
